/* cs_gpu.h with CUDA.  One stream and one event per process; NCCL and
 * cuBLAS are looked up with dlopen the first time they are asked for, so
 * the core needs neither library to start.
 *
 * Every copy, memset, kernel and library call goes on the core's one
 * stream (created non-blocking, so it never waits for the legacy default
 * stream); the blocking copies wait for that stream, so data uploaded
 * through pageable memory has landed before anything reads it.
 *
 * Their headers are needed only to compile the NCCL and cuBLAS calls:
 * where nccl.h or cublas_v2.h is missing (or CS_NO_NCCL_H / CS_NO_CUBLAS_H
 * says to build as if it were), the core builds all the same and those
 * paths fail with the reason. */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#if !defined(CS_NO_CUBLAS_H) && __has_include(<cublas_v2.h>)
#include <cublas_v2.h>
#define CS_HAVE_CUBLAS 1
#endif
#if !defined(CS_NO_NCCL_H) && __has_include(<nccl.h>)
#include <nccl.h>
#define CS_HAVE_NCCL 1
#endif

#include "cs_gpu.h"

static char g_err[512];
static cudaStream_t g_stream;
static cudaEvent_t g_event;
static cudaEvent_t g_marks[CS_GPU_MARKS]; /* pipelined staging (created with the stream) */
static int g_dev = -1;

static int fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_err, sizeof g_err, fmt, ap);
  va_end(ap);
  return 1;
}

static int cuda(cudaError_t rc, const char *what) {
  if (rc == cudaSuccess) return 0;
  cudaGetLastError(); /* clear a sticky-free error */
  return fail("%s: %s (%s)", what, cudaGetErrorString(rc), cudaGetErrorName(rc));
}

extern "C" {

int cs_gpu_built(void) { return 1; }

const char *cs_gpu_runtime(void) {
  static char v[16];
  snprintf(v, sizeof v, "%d.%d", CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
  return v;
}

const char *cs_gpu_error(void) { return g_err; }

int cs_gpu_count(void) {
  int n = 0;
  if (cuda(cudaGetDeviceCount(&n), "cudaGetDeviceCount")) return -1;
  if (n == 0) {
    fail("no CUDA device is visible to this process");
    return -1;
  }
  return n;
}

int cs_gpu_open(int dev) {
  if (cuda(cudaSetDevice(dev), "cudaSetDevice")) return 1;
  if (cuda(cudaFree(0), "creating the CUDA context")) return 1;
  if (cuda(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking), "cudaStreamCreate"))
    return 1;
  if (cuda(cudaEventCreateWithFlags(&g_event, cudaEventDisableTiming), "cudaEventCreate"))
    return 1;
  for (int k = 0; k < CS_GPU_MARKS; k++)
    if (cuda(cudaEventCreateWithFlags(&g_marks[k], cudaEventDisableTiming), "cudaEventCreate"))
      return 1;
  g_dev = dev;
  return 0;
}

void cs_gpu_describe(char *out, size_t len) {
  cudaDeviceProp p;
  int drv = 0;
  char bus[32] = "";
  if (g_dev < 0 || cudaGetDeviceProperties(&p, g_dev) != cudaSuccess) {
    snprintf(out, len, "null");
    return;
  }
  cudaDriverGetVersion(&drv);
  cudaDeviceGetPCIBusId(bus, sizeof bus, g_dev);
  snprintf(out, len,
           "{\"device\":%d,\"name\":\"%s\",\"cc\":\"%d.%d\",\"memory_bytes\":%zu,"
           "\"pci_bus\":\"%s\",\"driver\":\"%d.%d\",\"runtime\":\"%s\"}",
           g_dev, p.name, p.major, p.minor, p.totalGlobalMem, bus, drv / 1000, drv % 1000 / 10,
           cs_gpu_runtime());
}

void *cs_gpu_alloc(size_t n) {
  void *p = NULL;
  if (cuda(cudaMalloc(&p, n ? n : 64), "cudaMalloc")) return NULL;
  if (cuda(cudaMemsetAsync(p, 0, n ? n : 64, g_stream), "cudaMemsetAsync") ||
      cuda(cudaStreamSynchronize(g_stream), "cudaStreamSynchronize after cudaMemsetAsync")) {
    cudaFree(p);
    return NULL;
  }
  return p;
}

void cs_gpu_free(void *p) {
  if (p) cudaFree(p);
}

void *cs_gpu_alloc_pinned(size_t n) {
  void *p = NULL;
  if (cuda(cudaMallocHost(&p, n ? n : 64), "cudaMallocHost")) return NULL;
  memset(p, 0, n ? n : 64);
  return p;
}

void cs_gpu_free_pinned(void *p) {
  if (p) cudaFreeHost(p);
}

/* Blocking copies, queued behind whatever the core's stream holds (a
 * kernel writing what is read back) and waited for: from pageable memory
 * cudaMemcpy may return before the data has landed, and a kernel on a
 * non-blocking stream would not wait for it. */
int cs_gpu_to_host(void *dst, const void *src, size_t n) {
  if (cuda(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, g_stream),
           "cudaMemcpyAsync to host"))
    return 1;
  return cuda(cudaStreamSynchronize(g_stream), "cudaStreamSynchronize after a copy to host");
}

int cs_gpu_from_host(void *dst, const void *src, size_t n) {
  if (cuda(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, g_stream),
           "cudaMemcpyAsync to the device"))
    return 1;
  return cuda(cudaStreamSynchronize(g_stream),
              "cudaStreamSynchronize after a copy to the device");
}

int cs_gpu_copy_async(void *dst, const void *src, size_t n) {
  return cuda(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, g_stream),
              "cudaMemcpyAsync device to device");
}

int cs_gpu_to_host_async(void *dst, const void *src, size_t n) {
  return cuda(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, g_stream),
              "cudaMemcpyAsync to host");
}

int cs_gpu_from_host_async(void *dst, const void *src, size_t n) {
  return cuda(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, g_stream),
              "cudaMemcpyAsync to the device");
}

int cs_gpu_mark(int k) {
  if (k < 0 || k >= CS_GPU_MARKS) return fail("mark %d outside 0..%d", k, CS_GPU_MARKS - 1);
  return cuda(cudaEventRecord(g_marks[k], g_stream), "cudaEventRecord");
}

int cs_gpu_wait_mark(int k) {
  if (k < 0 || k >= CS_GPU_MARKS) return fail("mark %d outside 0..%d", k, CS_GPU_MARKS - 1);
  return cuda(cudaEventSynchronize(g_marks[k]), "cudaEventSynchronize");
}

/* An event recorded behind everything queued, then waited for. */
int cs_gpu_sync(void) {
  if (cuda(cudaEventRecord(g_event, g_stream), "cudaEventRecord")) return 1;
  return cuda(cudaEventSynchronize(g_event), "cudaEventSynchronize");
}

int cs_gpu_ipc_handle(void *base, void *handle) {
  cudaIpcMemHandle_t h;
  if (cuda(cudaIpcGetMemHandle(&h, base), "cudaIpcGetMemHandle")) return 1;
  memcpy(handle, &h, sizeof h);
  return 0;
}

void *cs_gpu_ipc_open(const void *handle) {
  cudaIpcMemHandle_t h;
  void *p = NULL;
  memcpy(&h, handle, sizeof h);
  if (cuda(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle"))
    return NULL;
  return p;
}

void cs_gpu_ipc_close(void *p) {
  if (p) cudaIpcCloseMemHandle(p);
}

/* -- NCCL ------------------------------------------------------------------ */
#ifdef CS_HAVE_NCCL
static struct {
  void *lib;
  ncclResult_t (*get_id)(ncclUniqueId *);
  ncclResult_t (*init)(ncclComm_t *, int, ncclUniqueId, int);
  ncclResult_t (*destroy)(ncclComm_t);
  ncclResult_t (*version)(int *);
  const char *(*str)(ncclResult_t);
  const char *(*last)(ncclComm_t); /* ncclGetLastError (NCCL 2.13 on), where there */
  ncclResult_t (*gstart)(void);
  ncclResult_t (*gend)(void);
  ncclResult_t (*send)(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*recv)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*bcast)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
                        cudaStream_t);
  ncclResult_t (*allreduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                            ncclComm_t, cudaStream_t);
  ncclComm_t comm;
} N;

static int nccl(ncclResult_t rc, const char *what) {
  if (rc == ncclSuccess) return 0;
  const char *more = N.last ? N.last(N.comm) : NULL;
  return fail("%s: %s%s%s", what, N.str ? N.str(rc) : "NCCL error", more && *more ? ": " : "",
              more && *more ? more : "");
}

#define SYM(field, name)                                            \
  do {                                                              \
    *(void **)&N.field = dlsym(N.lib, name);                        \
    if (!N.field) return fail("%s lacks %s", "libnccl.so.2", name); \
  } while (0)

int cs_nccl_load(void) {
  if (N.lib) return 0;
  N.lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!N.lib) return fail("NCCL is not installed: %s", dlerror());
  SYM(get_id, "ncclGetUniqueId");
  SYM(init, "ncclCommInitRank");
  SYM(destroy, "ncclCommDestroy");
  SYM(version, "ncclGetVersion");
  SYM(str, "ncclGetErrorString");
  SYM(gstart, "ncclGroupStart");
  SYM(gend, "ncclGroupEnd");
  SYM(send, "ncclSend");
  SYM(recv, "ncclRecv");
  SYM(bcast, "ncclBroadcast");
  SYM(allreduce, "ncclAllReduce");
  *(void **)&N.last = dlsym(N.lib, "ncclGetLastError");
  return 0;
}

int cs_nccl_version(void) {
  int v = 0;
  if (cs_nccl_load() || N.version(&v) != ncclSuccess) return 0;
  return v;
}

int cs_nccl_id(void *id) {
  ncclUniqueId u;
  if (cs_nccl_load() || nccl(N.get_id(&u), "ncclGetUniqueId")) return 1;
  memcpy(id, &u, sizeof u);
  return 0;
}

int cs_nccl_init(int np, int rank, const void *id) {
  ncclUniqueId u;
  memcpy(&u, id, sizeof u);
  if (cs_nccl_load()) return 1;
  return nccl(N.init(&N.comm, np, u, rank), "ncclCommInitRank");
}

void cs_nccl_close(void) {
  if (N.comm) N.destroy(N.comm);
  N.comm = NULL;
}

int cs_nccl_group(int begin) {
  return begin ? nccl(N.gstart(), "ncclGroupStart") : nccl(N.gend(), "ncclGroupEnd");
}

int cs_nccl_send(const void *buf, size_t n, int peer) {
  return nccl(N.send(buf, n, ncclUint8, peer, N.comm, g_stream), "ncclSend");
}

int cs_nccl_recv(void *buf, size_t n, int peer) {
  return nccl(N.recv(buf, n, ncclUint8, peer, N.comm, g_stream), "ncclRecv");
}

int cs_nccl_bcast(void *buf, size_t n, int root) {
  return nccl(N.bcast(buf, buf, n, ncclUint8, root, N.comm, g_stream), "ncclBroadcast");
}

int cs_nccl_allreduce(const void *s, void *r, size_t count, int dbl) {
  return nccl(N.allreduce(s, r, count, dbl ? ncclFloat64 : ncclInt32, ncclSum, N.comm,
                          g_stream), "ncclAllReduce");
}

#else /* built without nccl.h: the nccl path says so */
#define NO_NCCL                                                                          \
  fail("this core was built without NCCL's header (nccl.h): install NCCL's development " \
       "files (e.g. pip's nvidia-nccl-cu12 or the CUDA toolkit's) and rebuild")
int cs_nccl_load(void) { return NO_NCCL; }
int cs_nccl_version(void) { return 0; }
int cs_nccl_id(void *id) { (void)id; return NO_NCCL; }
int cs_nccl_init(int np, int rank, const void *id) { (void)np; (void)rank; (void)id; return NO_NCCL; }
void cs_nccl_close(void) {}
int cs_nccl_group(int begin) { (void)begin; return NO_NCCL; }
int cs_nccl_send(const void *b, size_t n, int p) { (void)b; (void)n; (void)p; return NO_NCCL; }
int cs_nccl_recv(void *b, size_t n, int p) { (void)b; (void)n; (void)p; return NO_NCCL; }
int cs_nccl_bcast(void *b, size_t n, int r) { (void)b; (void)n; (void)r; return NO_NCCL; }
int cs_nccl_allreduce(const void *s, void *r, size_t count, int dbl) {
  (void)s; (void)r; (void)count; (void)dbl;
  return NO_NCCL;
}
#endif

/* -- cuBLAS ---------------------------------------------------------------- */
#ifdef CS_HAVE_CUBLAS
static struct {
  void *lib;
  cublasStatus_t (*create)(cublasHandle_t *);
  cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
  cublasStatus_t (*dgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                          const double *, const double *, int, const double *, int,
                          const double *, double *, int);
  const char *(*str)(cublasStatus_t); /* cublasGetStatusString, where the library has it */
  cublasHandle_t h;
} B;

static int blas(cublasStatus_t rc, const char *what) {
  if (rc == CUBLAS_STATUS_SUCCESS) return 0;
  if (B.str) return fail("%s: %s (cuBLAS status %d)", what, B.str(rc), (int)rc);
  return fail("%s: cuBLAS status %d", what, (int)rc);
}

/* The library and its symbols (no device needed). */
int cs_cublas_find(void) {
  if (B.lib) return 0;
  /* the cuBLAS of the runtime this core was built with, then an unversioned one */
  char mine[32];
  snprintf(mine, sizeof mine, "libcublas.so.%d", CUDART_VERSION / 1000);
  const char *names[] = {mine, "libcublas.so"};
  char why[2][200] = {"", ""};
  for (int i = 0; i < 2 && !B.lib; i++) {
    B.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!B.lib) snprintf(why[i], sizeof why[i], "%s", dlerror());
  }
  if (!B.lib) return fail("cuBLAS is not installed: %s; %s", why[0], why[1]);
  *(void **)&B.create = dlsym(B.lib, "cublasCreate_v2");
  *(void **)&B.set_stream = dlsym(B.lib, "cublasSetStream_v2");
  *(void **)&B.dgemm = dlsym(B.lib, "cublasDgemm_v2");
  *(void **)&B.str = dlsym(B.lib, "cublasGetStatusString");
  if (!B.create || !B.set_stream || !B.dgemm) {
    dlclose(B.lib);
    B.lib = NULL;
    return fail("libcublas lacks cublasCreate_v2, cublasSetStream_v2 or cublasDgemm_v2");
  }
  return 0;
}

int cs_cublas_load(void) {
  if (B.h) return 0;
  if (cs_cublas_find()) return 1;
  if (blas(B.create(&B.h), "cublasCreate")) {
    B.h = NULL;
    return 1;
  }
  if (blas(B.set_stream(B.h, g_stream), "cublasSetStream")) {
    B.h = NULL; /* never a handle on the legacy default stream, which nothing waits for */
    return 1;
  }
  return 0;
}

/* Row-major C = A B is column-major C^T = B^T A^T: B and A swap places. */
int cs_cublas_dgemm(int m, int n, int k, const double *a, const double *b, double *c) {
  const double one = 1.0, zero = 0.0;
  if (cs_cublas_load()) return 1;
  if (blas(B.dgemm(B.h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, n, a, k, &zero, c, n),
           "cublasDgemm"))
    return 1;
  return cs_gpu_sync();
}
#else /* built without cublas_v2.h: gpu_matmul says so */
#define NO_CUBLAS                                                                     \
  fail("this core was built without cuBLAS's header (cublas_v2.h): install cuBLAS's " \
       "development files and rebuild")
int cs_cublas_find(void) { return NO_CUBLAS; }
int cs_cublas_load(void) { return NO_CUBLAS; }
int cs_cublas_dgemm(int m, int n, int k, const double *a, const double *b, double *c) {
  (void)m; (void)n; (void)k; (void)a; (void)b; (void)c;
  return NO_CUBLAS;
}
#endif

/* -- Jacobi ---------------------------------------------------------------- */
__global__ void jacobi_kernel(const double *__restrict__ u, double *__restrict__ un, size_t w,
                              size_t i0, size_t i1, size_t k0, size_t k1, double hx2,
                              double hy2, double src, double inv, double *res) {
  size_t k = k0 + blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  size_t i = i0 + blockIdx.y * (size_t)blockDim.y + threadIdx.y;
  double d2 = 0;
  if (i <= i1 && k <= k1) {
    const double *c = u + i * w;
    /* the CPU's expression and order; built with --fmad=false, so equal bit for bit */
    double v = (hy2 * (c[k - w] + c[k + w]) + hx2 * (c[k - 1] + c[k + 1]) - src) * inv;
    un[i * w + k] = v;
    double d = v - c[k];
    d2 = d * d;
  }
  if (res) {
    __shared__ double part[256];
    int t = threadIdx.y * blockDim.x + threadIdx.x;
    part[t] = d2;
    __syncthreads();
    for (int s = blockDim.x * blockDim.y / 2; s > 0; s /= 2) {
      if (t < s) part[t] += part[t + s];
      __syncthreads();
    }
    if (t == 0) atomicAdd(res, part[0]);
  }
}

static double *g_res;

int cs_gpu_jacobi_sweep(const double *u, double *un, size_t w, size_t i0, size_t i1, size_t k0,
                        size_t k1, double hx2, double hy2, double src, double inv,
                        double *res) {
  if (i1 < i0 || k1 < k0) return 0;
  if (res && !g_res && cuda(cudaMalloc(&g_res, sizeof(double)), "cudaMalloc")) return 1;
  if (res && cuda(cudaMemsetAsync(g_res, 0, sizeof(double), g_stream), "cudaMemset")) return 1;
  dim3 blk(32, 8), grid((unsigned)((k1 - k0 + 32) / 32), (unsigned)((i1 - i0 + 8) / 8));
  jacobi_kernel<<<grid, blk, 0, g_stream>>>(u, un, w, i0, i1, k0, k1, hx2, hy2, src, inv,
                                            res ? g_res : NULL);
  if (cuda(cudaGetLastError(), "the Jacobi kernel")) return 1;
  if (!res) return 0;
  double r = 0;
  if (cuda(cudaMemcpyAsync(&r, g_res, sizeof r, cudaMemcpyDeviceToHost, g_stream), "cudaMemcpy") ||
      cs_gpu_sync())
    return 1;
  *res += r;
  return 0;
}

__global__ void col_kernel(double *u, size_t w, size_t lx, size_t k, double *buf, int pack) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= lx) return;
  if (pack)
    buf[i] = u[(i + 1) * w + k];
  else
    u[(i + 1) * w + k] = buf[i];
}

int cs_gpu_pack_col(const double *u, size_t w, size_t lx, size_t k, double *buf) {
  if (!lx) return 0;
  col_kernel<<<(unsigned)((lx + 255) / 256), 256, 0, g_stream>>>((double *)u, w, lx, k, buf, 1);
  return cuda(cudaGetLastError(), "the packing kernel");
}

int cs_gpu_unpack_col(double *u, size_t w, size_t lx, size_t k, const double *buf) {
  if (!lx) return 0;
  col_kernel<<<(unsigned)((lx + 255) / 256), 256, 0, g_stream>>>(u, w, lx, k, (double *)buf, 0);
  return cuda(cudaGetLastError(), "the unpacking kernel");
}

} /* extern "C" */

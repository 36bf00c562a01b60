/* GPU memory, copies, IPC, NCCL, cuBLAS and the applications' kernels
 * behind a plain C API with no MPI and no CUDA types.  gpu.cu implements it
 * with CUDA (compiled by nvcc when the build finds one); gpu_none.c is the
 * build without CUDA, where opening a device says why not.  NCCL and cuBLAS
 * are loaded when first asked for (dlopen), so that a core built with CUDA
 * starts, and runs every host benchmark, on a machine that lacks them.
 *
 * Every call returns 0 when it worked; otherwise non-zero, with the CUDA,
 * NCCL or cuBLAS reason in cs_gpu_error(). */
#ifndef CS_GPU_H
#define CS_GPU_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CS_GPU_IPC_BYTES 64   /* cudaIpcMemHandle_t */
#define CS_NCCL_ID_BYTES 128  /* ncclUniqueId */

int cs_gpu_built(void);               /* 1: this core was compiled with CUDA */
const char *cs_gpu_runtime(void);     /* the CUDA runtime it was built with, "13.0"; "" */
const char *cs_gpu_error(void);       /* the last failure's reason */

/* Devices visible to this process (CUDA_VISIBLE_DEVICES applies), or -1
 * with the driver's reason.  Creates no context. */
int cs_gpu_count(void);
/* Select device `dev` and create its context: the first CUDA call that
 * does.  The driver version is known after it (cs_gpu_describe). */
int cs_gpu_open(int dev);
/* JSON object text: name, compute capability, memory, PCI bus id, driver
 * and runtime versions of the open device. */
void cs_gpu_describe(char *out, size_t len);

void *cs_gpu_alloc(size_t n);          /* device memory, zeroed */
void cs_gpu_free(void *p);
void *cs_gpu_alloc_pinned(size_t n);   /* page-locked host memory, zeroed */
void cs_gpu_free_pinned(void *p);
int cs_gpu_to_host(void *dst, const void *src, size_t n);   /* blocking */
int cs_gpu_from_host(void *dst, const void *src, size_t n); /* blocking */
int cs_gpu_copy_async(void *dst, const void *src, size_t n); /* device to device, queued */
int cs_gpu_sync(void);  /* every queued copy and kernel of the core's stream has finished */
/* Pipelined staging: copies between the device and page-locked host memory
 * queued on the core's stream, each followed by mark k (0 <= k <
 * CS_GPU_MARKS) that cs_gpu_wait_mark(k) waits for. */
#define CS_GPU_MARKS 64
int cs_gpu_to_host_async(void *dst, const void *src, size_t n);
int cs_gpu_from_host_async(void *dst, const void *src, size_t n);
int cs_gpu_mark(int k);
int cs_gpu_wait_mark(int k);

/* CUDA IPC: a handle for an allocation's base, and the peer's mapping. */
int cs_gpu_ipc_handle(void *base, void *handle);
void *cs_gpu_ipc_open(const void *handle);
void cs_gpu_ipc_close(void *p);

/* NCCL over a communicator whose unique id rank 0 made and MPI carried. */
int cs_nccl_load(void);                       /* 0: libnccl found */
int cs_nccl_version(void);                    /* e.g. 22807 */
int cs_nccl_id(void *id);
int cs_nccl_init(int np, int rank, const void *id);
void cs_nccl_close(void);
int cs_nccl_group(int begin);                 /* ncclGroupStart / ncclGroupEnd */
int cs_nccl_send(const void *buf, size_t n, int peer);  /* queued; cs_gpu_sync waits */
int cs_nccl_recv(void *buf, size_t n, int peer);
int cs_nccl_bcast(void *buf, size_t n, int root);
int cs_nccl_allreduce(const void *s, void *r, size_t count, int dbl); /* sum of int or double */

/* cuBLAS: C = A B, row-major doubles on the device (m x k times k x n).
 * cs_cublas_find only looks the library up (no device needed);
 * cs_cublas_load also makes the handle, on the core's stream. */
int cs_cublas_find(void);
int cs_cublas_load(void);
int cs_cublas_dgemm(int m, int n, int k, const double *a, const double *b, double *c);

/* Jacobi (core/bench/jacobi.c's update, the same expression, no fused
 * multiply-add): rows i0..i1 and columns k0..k1 (1-based, inclusive) of a
 * block with row stride w, from u into un; with res non-NULL the squared
 * change is added to *res (a host double). */
int cs_gpu_jacobi_sweep(const double *u, double *un, size_t w, size_t i0, size_t i1, size_t k0,
                        size_t k1, double hx2, double hy2, double src, double inv, double *res);
/* Column k of rows 1..lx of a block with row stride w, to or from a
 * contiguous device buffer of lx doubles (the left and right halos). */
int cs_gpu_pack_col(const double *u, size_t w, size_t lx, size_t k, double *buf);
int cs_gpu_unpack_col(double *u, size_t w, size_t lx, size_t k, const double *buf);

#ifdef __cplusplus
}
#endif
#endif

/* cs_gpu.h without CUDA: the build found no nvcc (or was asked for none).
 * Every device call fails and says so; the core runs every host benchmark. */
#include "cs_gpu.h"

#define WHY "this core was built without CUDA (no nvcc when it was compiled)"

int cs_gpu_built(void) { return 0; }
const char *cs_gpu_runtime(void) { return ""; }
const char *cs_gpu_error(void) { return WHY; }
int cs_gpu_count(void) { return -1; }
int cs_gpu_open(int dev) { (void)dev; return 1; }
void cs_gpu_describe(char *out, size_t len) {
  if (len) out[0] = 0;
}
void *cs_gpu_alloc(size_t n) { (void)n; return 0; }
void cs_gpu_free(void *p) { (void)p; }
void *cs_gpu_alloc_pinned(size_t n) { (void)n; return 0; }
void cs_gpu_free_pinned(void *p) { (void)p; }
int cs_gpu_to_host(void *d, const void *s, size_t n) { (void)d; (void)s; (void)n; return 1; }
int cs_gpu_from_host(void *d, const void *s, size_t n) { (void)d; (void)s; (void)n; return 1; }
int cs_gpu_copy_async(void *d, const void *s, size_t n) { (void)d; (void)s; (void)n; return 1; }
int cs_gpu_sync(void) { return 1; }
int cs_gpu_to_host_async(void *d, const void *s, size_t n) { (void)d; (void)s; (void)n; return 1; }
int cs_gpu_from_host_async(void *d, const void *s, size_t n) {
  (void)d;
  (void)s;
  (void)n;
  return 1;
}
int cs_gpu_mark(int k) { (void)k; return 1; }
int cs_gpu_wait_mark(int k) { (void)k; return 1; }
int cs_gpu_ipc_handle(void *b, void *h) { (void)b; (void)h; return 1; }
void *cs_gpu_ipc_open(const void *h) { (void)h; return 0; }
void cs_gpu_ipc_close(void *p) { (void)p; }
int cs_nccl_load(void) { return 1; }
int cs_nccl_version(void) { return 0; }
int cs_nccl_id(void *id) { (void)id; return 1; }
int cs_nccl_init(int np, int rank, const void *id) { (void)np; (void)rank; (void)id; return 1; }
void cs_nccl_close(void) {}
int cs_nccl_group(int begin) { (void)begin; return 1; }
int cs_nccl_send(const void *b, size_t n, int p) { (void)b; (void)n; (void)p; return 1; }
int cs_nccl_recv(void *b, size_t n, int p) { (void)b; (void)n; (void)p; return 1; }
int cs_nccl_bcast(void *b, size_t n, int r) { (void)b; (void)n; (void)r; return 1; }
int cs_nccl_allreduce(const void *s, void *r, size_t c, int d) {
  (void)s; (void)r; (void)c; (void)d;
  return 1;
}
int cs_cublas_find(void) { return 1; }
int cs_cublas_load(void) { return 1; }
int cs_cublas_dgemm(int m, int n, int k, const double *a, const double *b, double *c) {
  (void)m; (void)n; (void)k; (void)a; (void)b; (void)c;
  return 1;
}
int cs_gpu_jacobi_sweep(const double *u, double *un, size_t w, size_t i0, size_t i1, size_t k0,
                        size_t k1, double hx2, double hy2, double src, double inv, double *res) {
  (void)u; (void)un; (void)w; (void)i0; (void)i1; (void)k0; (void)k1;
  (void)hx2; (void)hy2; (void)src; (void)inv; (void)res;
  return 1;
}
int cs_gpu_pack_col(const double *u, size_t w, size_t lx, size_t k, double *buf) {
  (void)u; (void)w; (void)lx; (void)k; (void)buf;
  return 1;
}
int cs_gpu_unpack_col(double *u, size_t w, size_t lx, size_t k, const double *buf) {
  (void)u; (void)w; (void)lx; (void)k; (void)buf;
  return 1;
}

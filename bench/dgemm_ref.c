/* One rank's DGEMM of OpenBLAS, alone: C (m x n) = A (m x k) B (k x n),
 * one thread, best and median of `reps` timed calls, as GFLOP/s.  The
 * reference bench/apps.py sets matmul's compute phase against.
 *     cc -O2 dgemm_ref.c -I/usr/include/x86_64-linux-gnu/openblas-pthread -lopenblas */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 4) return 2;
  int m = atoi(argv[1]), n = atoi(argv[2]), k = atoi(argv[3]), reps = argc > 4 ? atoi(argv[4]) : 5;
  openblas_set_num_threads(1);
  double *a = malloc((size_t)m * k * 8), *b = malloc((size_t)k * n * 8), *c = malloc((size_t)m * n * 8);
  for (size_t i = 0; i < (size_t)m * k; i++) a[i] = (double)(i % 5) - 2;
  for (size_t i = 0; i < (size_t)k * n; i++) b[i] = (double)(i % 7) - 3;
  double *t = malloc((size_t)reps * sizeof *t);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, a, k, b, n, 0.0, c, n);
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, a, k, b, n, 0.0, c, n);
    t[r] = now() - t0;
  }
  qsort(t, (size_t)reps, sizeof *t, cmp);
  /* untimed: the product must be right (integer entries: exact), checked
   * at the corners and the middle of C */
  int rows[] = {0, m / 2, m - 1}, cols[] = {0, n / 2, n - 1};
  for (int ri = 0; ri < 3; ri++)
    for (int ci = 0; ci < 3; ci++) {
      int i = rows[ri], j = cols[ci];
      double want = 0;
      for (int p = 0; p < k; p++) want += a[(size_t)i * k + p] * b[(size_t)p * n + j];
      if (c[(size_t)i * n + j] != want) {
        fprintf(stderr, "dgemm_ref: C[%d][%d] is %g, not %g\n", i, j, c[(size_t)i * n + j], want);
        return 1;
      }
    }
  double flop = 2.0 * m * n * k;
  printf("{\"gflops_median\":%.3f,\"gflops_best\":%.3f,\"checked\":9}\n",
         flop / t[reps / 2] / 1e9, flop / t[0] / 1e9);
  return 0;
}

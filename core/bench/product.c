/* The fill and the exact check of matmul's and summa's product. */
#include "product.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cs.h"

static double entry(uint64_t seed, size_t i, size_t j) {
  uint64_t z = seed ^ (i * 0x9E3779B97F4A7C15ull) ^ (j * 0xC2B2AE3D27D4EB4Full);
  z = (z ^ (z >> 31)) * 0xBF58476D1CE4E5B9ull;
  return (double)((int)((z >> 33) % 5) - 2);
}

int cs_product_judge_impl(const cs_ctx *c, char *why, size_t len) {
  char impl[16];
  cs_param(c, "impl", impl, sizeof impl);
  if (strcmp(impl, "blas") && strcmp(impl, "naive")) {
    snprintf(why, len, "%s impl must be blas or naive, got '%s'", c->bench->name, impl);
    return 1;
  }
#ifndef CS_HAVE_OPENBLAS
  if (!strcmp(impl, "blas")) {
    snprintf(why, len, "%s impl=blas: this core was built without OpenBLAS (install "
             "libopenblas-dev, or use impl=naive)", c->bench->name);
    return 1;
  }
#endif
  return 0;
}

void cs_product_fill(double *a, double *b, size_t n, long sample) {
  uint64_t sa = cs_seed(n, 1, sample), sb = cs_seed(n, 2, sample);
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) {
      a[i * n + j] = entry(sa, i, j);
      b[i * n + j] = entry(sb, i, j);
    }
}

/* y = M x for `rows` rows of an N-column row-major M. */
static void matvec(const double *mat, size_t rows, size_t n, const double *x, double *y) {
  for (size_t i = 0; i < rows; i++) {
    double s = 0;
    for (size_t j = 0; j < n; j++) s += mat[i * n + j] * x[j];
    y[i] = s;
  }
}

int cs_product_check(const double *cm, const double *am, const double *bm, size_t rows,
                     size_t row0, size_t n, long sample, char *why, size_t len) {
  double *x = malloc(n * sizeof *x), *bx = malloc(n * sizeof *bx);
  double *abx = malloc((rows ? rows : 1) * sizeof *abx);
  double *cx = malloc((rows ? rows : 1) * sizeof *cx);
  int bad = 0;
  if (!x || !bx || !abx || !cx) {
    snprintf(why, len, "out of memory for the check");
    bad = 1;
  } else {
    uint64_t sx = cs_seed(n, 3, sample);
    for (size_t j = 0; j < n; j++) x[j] = entry(sx, 0, j) + 3.0; /* 1..5: no zero */
    matvec(bm, n, n, x, bx);
    matvec(am, rows, n, bx, abx);
    matvec(cm, rows, n, x, cx);
    for (size_t i = 0; i < rows && !bad; i++)
      if (cx[i] != abx[i]) {
        snprintf(why, len, "row %zu of C: (C x) is %.17g, A (B x) is %.17g (tolerance 0: "
                 "integer entries make every product exact)", row0 + i, cx[i], abx[i]);
        bad = 1;
      }
  }
  free(x);
  free(bx);
  free(abx);
  free(cx);
  return bad;
}

void cs_product_naive(const double *a, const double *b, double *c, size_t m, size_t n, size_t k,
                      int add) {
  for (size_t i = 0; i < m; i++) {
    double *ci = c + i * n;
    if (!add)
      for (size_t j = 0; j < n; j++) ci[j] = 0;
    for (size_t l = 0; l < k; l++) {
      double x = a[i * k + l];
      const double *bl = b + l * n;
      for (size_t j = 0; j < n; j++) ci[j] += x * bl[j];
    }
  }
}

/* What matmul and summa share: the same product C = A B of integer-valued
 * N x N matrices, filled and checked the same way. */
#ifndef CS_PRODUCT_H
#define CS_PRODUCT_H

#include <stddef.h>

struct cs_ctx;

/* A and B (row-major, N x N) for a sample: integers in -2..2, so every
 * product and sum is exact in double precision whatever the order. */
void cs_product_fill(double *a, double *b, size_t n, long sample);

/* Rows row0.. (`rows` of them) of C against A (B x) for an integer vector
 * x with no zero entry: exact (tolerance 0), so one wrong element always
 * shows.  am and cm hold those rows; bm is all of B.  0 when good. */
int cs_product_check(const double *cm, const double *am, const double *bm, size_t rows,
                     size_t row0, size_t n, long sample, char *why, size_t len);

/* C (m x n) = A (m x k) B (k x n), or C += A B with `add`, row-major, by
 * a plain loop (i, k, j: B and C read along rows): impl=naive's product,
 * and the GPU multiply's on host memory standing in for the device. */
void cs_product_naive(const double *a, const double *b, double *c, size_t m, size_t n, size_t k,
                      int add);

/* The `impl` parameter both declare: blas (OpenBLAS's dgemm, when the core
 * was built with it) or naive.  0 when good, else 1 with the reason. */
int cs_product_judge_impl(const struct cs_ctx *c, char *why, size_t len);

#endif

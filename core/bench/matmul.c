/* The distributed matrix multiply of the IIT Bombay cluster study
 * ("Performance Analysis of MPI over Cluster"): C = A B for N x N
 * matrices, rank 0 holding A, B and C.  A sample is one product in four
 * phases: rank 0 broadcasts B, sends every rank its block of rows of A,
 * every rank computes its block of C, and rank 0 gathers C.  N need not
 * divide by the process count: the first N mod np ranks get one row more.
 *
 * The entries are small integers, so every product and sum is exact in
 * double precision whatever the summation order: the check C x = A (B x)
 * with an integer vector x of nonzero entries holds with tolerance 0, and
 * a corrupted element is always caught.  Each rank checks its own block; rank 0 also checks
 * the gathered C. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cs.h"
#include "product.h"

#ifdef CS_HAVE_OPENBLAS
#include <cblas.h>
#endif

enum { PH_BCAST_B, PH_SEND_A, PH_COMPUTE, PH_GATHER_C };

typedef struct mm {
  size_t n;
  int naive;
  int *counts, *displs; /* rows per rank, in elements of N doubles */
  size_t rows, row0;    /* this rank's block */
  double *a, *b, *c;    /* rank 0: N x N each (b on every rank) */
  double *al, *cl;      /* this rank's rows of A and C */
} mm;

/* Bytes rank `rank` holds: everybody's B and block of A and C; rank 0's
 * whole A and C. */
static double mm_mem(const cs_ctx *c, int rank) {
  size_t rows, first;
  cs_block(c->size, c->np, rank, &rows, &first);
  double nn = (double)c->size * (double)c->size * 8.0, blk = 8.0 * (double)rows * (double)c->size;
  return nn + 2.0 * blk + (rank == 0 ? 2.0 * nn : 0.0);
}

static void mm_teardown(cs_ctx *c) {
  mm *m = c->state;
  if (!m) return;
  free(m->counts);
  free(m->displs);
  free(m->a);
  free(m->b);
  free(m->c);
  free(m->al);
  free(m->cl);
  free(m);
  c->state = NULL;
}

static int mm_judge(const cs_ctx *c, char *why, size_t len) {
  long threads = cs_param_long(c, "threads");
  if (cs_product_judge_impl(c, why, len)) return 1;
  if (threads < 1 || threads > 1024) {
    snprintf(why, len, "matmul threads must be 1 to 1024, got %ld", threads);
    return 1;
  }
  if (c->size * c->size > (size_t)1 << 31) {
    snprintf(why, len, "matmul N=%zu: the matrices exceed MPI's int counts", c->size);
    return 1;
  }
  return 0;
}

static int mm_setup(cs_ctx *c, char *why, size_t len) {
  size_t n = c->size;
  char impl[16];
  cs_param(c, "impl", impl, sizeof impl);
#ifdef CS_HAVE_OPENBLAS
  openblas_set_num_threads((int)cs_param_long(c, "threads"));
#endif
  mm *m = calloc(1, sizeof *m);
  c->state = m;
  if (!m) goto nomem;
  m->n = n;
  m->naive = !strcmp(impl, "naive");
  m->counts = calloc((size_t)c->np, sizeof *m->counts);
  m->displs = calloc((size_t)c->np, sizeof *m->displs);
  if (!m->counts || !m->displs) goto nomem;
  for (int r = 0; r < c->np; r++) {
    size_t k, first;
    cs_block(n, c->np, r, &k, &first);
    m->counts[r] = (int)(k * n);
    m->displs[r] = (int)(first * n);
    if (r == c->rank) {
      m->rows = k;
      m->row0 = first;
    }
  }
  m->b = cs_alloc(n * n * sizeof(double));
  m->al = cs_alloc(m->rows * n * sizeof(double));
  m->cl = cs_alloc(m->rows * n * sizeof(double));
  if (c->rank == 0) {
    m->a = cs_alloc(n * n * sizeof(double));
    m->c = cs_alloc(n * n * sizeof(double));
  }
  if (!m->b || !m->al || !m->cl || (c->rank == 0 && (!m->a || !m->c))) goto nomem;
  return 0;
nomem:
  snprintf(why, len, "matmul N=%zu: out of memory", n);
  return 1;
}

static void mm_prepare(cs_ctx *c, long sample) {
  mm *m = c->state;
  size_t n = m->n;
  cs_poison(m->al, m->rows * n * sizeof(double));
  cs_poison(m->cl, m->rows * n * sizeof(double));
  if (c->rank != 0) {
    cs_poison(m->b, n * n * sizeof(double));
    return;
  }
  cs_product_fill(m->a, m->b, n, sample);
  cs_poison(m->c, n * n * sizeof(double));
}

static int mm_run(cs_ctx *c, long reps) {
  mm *m = c->state;
  int nn = (int)(m->n * m->n);
  for (long r = 0; r < reps; r++) {
    MPI_Bcast(m->b, nn, MPI_DOUBLE, 0, c->comm);
    cs_phase(c, PH_BCAST_B);
    MPI_Scatterv(m->a, m->counts, m->displs, MPI_DOUBLE, m->al, m->counts[c->rank], MPI_DOUBLE,
                 0, c->comm);
    cs_phase(c, PH_SEND_A);
    if (m->naive) {
      cs_product_naive(m->al, m->b, m->cl, m->rows, m->n, m->n, 0);
    } else if (m->rows) {
#ifdef CS_HAVE_OPENBLAS
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m->rows, (int)m->n,
                  (int)m->n, 1.0, m->al, (int)m->n, m->b, (int)m->n, 0.0, m->cl, (int)m->n);
#endif
    }
    cs_phase(c, PH_COMPUTE);
    MPI_Gatherv(m->cl, m->counts[c->rank], MPI_DOUBLE, m->c, m->counts, m->displs, MPI_DOUBLE,
                0, c->comm);
    cs_phase(c, PH_GATHER_C);
  }
  return 0;
}

static int mm_check(cs_ctx *c, long sample, char *why, size_t len) {
  mm *m = c->state;
  if (cs_product_check(m->cl, m->al, m->b, m->rows, m->row0, m->n, sample, why, len)) return 1;
  return c->rank == 0 && cs_product_check(m->c, m->a, m->b, m->n, 0, m->n, sample, why, len);
}

/* Payload each rank sends plus receives: B from the root (the root sends
 * it, whatever the broadcast's tree forwards), its rows of A and of C. */
static void mm_bytes(const cs_ctx *c, double *bytes) {
  const mm *m = c->state;
  double nn = (double)m->n * (double)m->n * 8.0, blk = 8.0 * (double)m->rows * (double)m->n;
  int root = c->rank == 0;
  bytes[PH_BCAST_B] = c->np > 1 ? nn : 0;
  bytes[PH_SEND_A] = root ? (c->np > 1 ? nn - blk : 0) : blk;
  bytes[PH_COMPUTE] = 0;
  bytes[PH_GATHER_C] = root ? (c->np > 1 ? nn - blk : 0) : blk;
}

static void mm_corrupt(cs_ctx *c) {
  mm *m = c->state;
  if (m->rows) m->cl[(m->rows / 2) * m->n + m->n / 3] += 1.0;
}

static const cs_param_def MM_PARAMS[] = {
    {"N", "256", "matrix order; a comma-separated list is the sweep (e.g. N=2000,4000)"},
    {"impl", "blas", "compute with OpenBLAS's dgemm (blas) or a plain triple loop (naive)"},
    {"threads", "1", "BLAS threads per rank"},
    {NULL, NULL, NULL},
};
static const char *const MM_PHASES[] = {"bcast_B", "send_A", "compute", "gather_C", NULL};

const cs_bench cs_bench_matmul = {
    .name = "matmul", .group = "apps", .metric = "time per product (max over ranks)",
    .desc = "C = A B: rank 0 broadcasts B, scatters rows of A, all compute, rank 0 gathers C",
    .min_np = 1, .ops_per_rep = 1, .timing = CS_TIME_MAX, .size_param = "N",
    .params = MM_PARAMS, .phases = MM_PHASES, .setup = mm_setup, .teardown = mm_teardown,
    .judge = mm_judge, .mem_bytes = mm_mem, .phase_bytes = mm_bytes,
    .corrupt = mm_corrupt, .prepare = mm_prepare, .run = mm_run,
    .check = mm_check,
};

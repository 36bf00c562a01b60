/* The GPU matrix multiply of the commodity-cluster GPU study ("CUDA over
 * MPI" against CUDA-aware MPI): C = A B for N x N matrices held in device
 * memory on rank 0, with A split into row blocks and B into column blocks
 * over a px x py process grid (2 x 2 on four processes, as the study ran
 * it: the four blocks of C on four processes).  A sample is three phases:
 * rank 0 sends every rank its block of A and of B, every rank multiplies
 * them with cuBLAS, and rank 0 receives the blocks of C.  The transfers go
 * through the GPU path's transport (--path staged: through host memory;
 * cuda-aware: device pointers to MPI; nccl: NCCL), so one benchmark
 * compares the paths on the same product.
 *
 * The entries are small integers (product.c), so the check C x = A (B x)
 * holds exactly: rank 0 copies A, B and C to the host after a validation
 * run and checks every row.
 *
 * A block may exceed what one MPI call carries (an int count: at N=16384
 * on 2 ranks, B is 2 GiB): each goes in pieces of at most 1 GiB.  With
 * host memory standing in for the device (COMMSCOPE_GPU_STANDIN=host,
 * testing) the product is a plain loop on the host, so the transfers,
 * phases and check run without a GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cs.h"
#include "cs_gpu.h"
#include "product.h"

enum { PH_SEND_AB, PH_COMPUTE, PH_RETURN_C };

typedef struct gmm {
  size_t n;
  int px, py;
  size_t rows, cols;    /* this rank's block of C */
  double *a, *b, *c;    /* this rank's A rows, B columns (a column panel, row-major), C */
  /* rank 0: A's row blocks, then one B column panel per rank (sa and sb
   * share an allocation), and C's blocks, each one after another */
  double *sa, *sb, *sc;
  size_t *aoff, *boff, *coff; /* rank 0: where rank r's blocks start in sa, sb, sc */
  int spoil; /* testing: spoil this rank's C before it moves */
} gmm;

#define PIECE ((size_t)1 << 30) /* bytes of one MPI message at most */

/* One block in pieces of at most PIECE bytes, each a message. */
static int send_block(cs_ctx *c, const double *p, size_t bytes, int peer) {
  int rc = 0;
  for (size_t off = 0; off < bytes && !rc; off += PIECE)
    rc = c->tp->send(c, (const char *)p + off, bytes - off < PIECE ? bytes - off : PIECE, peer);
  return rc;
}

static int recv_block(cs_ctx *c, double *p, size_t bytes, int peer) {
  int rc = 0;
  for (size_t off = 0; off < bytes && !rc; off += PIECE)
    rc = c->tp->recv(c, (char *)p + off, bytes - off < PIECE ? bytes - off : PIECE, peer);
  return rc;
}

/* Row-major C = A B (m x k times k x n): cuBLAS on the device, a plain loop
 * on the stand-in (exact: the entries are small integers). */
static int multiply(cs_ctx *c, int m, int n, int k, const double *a, const double *b,
                    double *out) {
  if (cs_buf_on_device(c)) return CS_GPU_TRY(cs_cublas_dgemm(m, n, k, a, b, out));
  cs_product_naive(a, b, out, (size_t)m, (size_t)n, (size_t)k, 0);
  return 0;
}

/* Rank r's block of C: rows r0.. of A's row block, columns c0.. of B's. */
static void block_of(const gmm *m, int r, size_t *rows, size_t *r0, size_t *cols, size_t *c0) {
  cs_block(m->n, m->px, r / m->py, rows, r0);
  cs_block(m->n, m->py, r % m->py, cols, c0);
}

static int gmm_judge(const cs_ctx *c, char *why, size_t len) {
  int px, py;
  if (!cs_grid2(c->np, cs_param_long(c, "px"), cs_param_long(c, "py"), &px, &py)) {
    snprintf(why, len, "gpu_matmul grid px=%ld x py=%ld does not decompose %d processes",
             cs_param_long(c, "px"), cs_param_long(c, "py"), c->np);
    return 1;
  }
  if (c->size < (size_t)px || c->size < (size_t)py) {
    snprintf(why, len, "gpu_matmul N=%zu is smaller than the %d x %d grid's sides", c->size,
             px, py);
    return 1;
  }
  if (c->size > 16384) {
    /* rank 0 holds A, a B panel per process row and C's blocks, and its own
     * blocks of A, B and C besides */
    size_t n = c->size, rows, cols, r0, c0;
    cs_block(n, px, 0, &rows, &r0);
    cs_block(n, py, 0, &cols, &c0);
    double gib = ((2.0 + px) * (double)n * (double)n + (double)(rows + cols) * (double)n +
                  (double)rows * (double)cols) * 8.0 / 1073741824.0;
    snprintf(why, len, "gpu_matmul N=%zu is refused: at most N=16384 is run; rank 0 would "
             "hold %.1f GiB of device memory and as much page-locked host memory (A, a B "
             "panel per process row and the blocks of C, %d x %d grid)", c->size, gib, px, py);
    return 1;
  }
  return 0;
}

static void gmm_teardown(cs_ctx *c) {
  gmm *m = c->state;
  if (!m) return;
  cs_buf_free(c, m->a); /* b lies in a's allocation, sb in sa's */
  cs_buf_free(c, m->c);
  cs_buf_free(c, m->sa);
  cs_buf_free(c, m->sc);
  free(m->aoff);
  free(m->boff);
  free(m->coff);
  free(m);
  c->state = NULL;
}

static int gmm_setup(cs_ctx *c, char *why, size_t len) {
  if (cs_buf_on_device(c) && cs_cublas_load()) {
    snprintf(why, len, "gpu_matmul: %s", cs_gpu_error());
    return 1;
  }
  gmm *m = calloc(1, sizeof *m);
  c->state = m;
  if (!m) goto nomem;
  m->n = c->size;
  cs_grid2(c->np, cs_param_long(c, "px"), cs_param_long(c, "py"), &m->px, &m->py);
  size_t r0, c0, n = m->n;
  block_of(m, c->rank, &m->rows, &r0, &m->cols, &c0);
  size_t ab = (m->rows + m->cols) * n * sizeof(double), cb = m->rows * m->cols * sizeof(double);
  /* A and B in one buffer (A first, B after it), C in the other, each as large as it is */
  void *p1, *p2;
  if (cs_buf_pair_sized(c, &p1, ab, &p2, cb)) goto nomem;
  m->a = p1;
  m->b = (double *)p1 + m->rows * n;
  m->c = p2;
  if (c->rank == 0) {
    m->aoff = calloc((size_t)c->np, sizeof(size_t));
    m->boff = calloc((size_t)c->np, sizeof(size_t));
    m->coff = calloc((size_t)c->np, sizeof(size_t));
    if (!m->aoff || !m->boff || !m->coff) goto nomem;
    size_t bo = 0, co = 0;
    for (int r = 0; r < c->np; r++) {
      size_t rows, cols;
      block_of(m, r, &rows, &r0, &cols, &c0);
      m->aoff[r] = r0 * n; /* sa is A itself: the ranks of a grid row share its rows */
      m->boff[r] = bo;
      m->coff[r] = co;
      bo += n * cols;
      co += rows * cols;
    }
    void *q1, *q2;
    /* A (N x N) and a B panel per rank (px x N x N) in one, C's blocks (N x N) in the
     * other: at N = 10000 on 4 ranks, 2.4 GB and 0.8 GB (C was as large as the first) */
    if (cs_buf_pair_sized(c, &q1, (1 + (size_t)m->px) * n * n * sizeof(double), &q2,
                          n * n * sizeof(double)))
      goto nomem;
    m->sa = q1;
    m->sb = (double *)q1 + n * n;
    m->sc = q2;
  }
  return 0;
nomem:
  snprintf(why, len, "gpu_matmul N=%zu: out of device memory: %s", c->size, cs_gpu_error());
  return 1;
}

/* Untimed: rank 0 lays A out as its row blocks (already contiguous) and B
 * as column panels, and uploads both; every rank poisons what it receives. */
static void gmm_prepare(cs_ctx *c, long sample) {
  gmm *m = c->state;
  size_t n = m->n;
  cs_buf_poison(c, m->a, (m->rows + m->cols) * n * sizeof(double));
  cs_buf_poison(c, m->c, m->rows * m->cols * sizeof(double));
  if (c->rank != 0) return;
  double *a = malloc(n * n * sizeof *a), *b = malloc(n * n * sizeof *b);
  double *panels = malloc(n * n * sizeof *panels);
  if (!a || !b || !panels) {
    fprintf(stderr, "cs-core: gpu_matmul: out of host memory\n");
    MPI_Abort(MPI_COMM_WORLD, CS_ENOMEM);
  }
  cs_product_fill(a, b, n, sample);
  for (int r = 0; r < m->py; r++) { /* panel r: columns c0.. of B, row-major N x cols */
    size_t cols, c0;
    cs_block(n, m->py, r, &cols, &c0);
    double *p = panels + n * c0;
    for (size_t i = 0; i < n; i++) memcpy(p + i * cols, b + i * n + c0, cols * sizeof(double));
  }
  /* sb holds one panel per rank, in rank order (the ranks of a grid column
   * get the same panel) */
  size_t all = (1 + (size_t)m->px) * n * n * sizeof(double);
  double *v = cs_buf_get(c, m->sa, all);
  memcpy(v, a, n * n * sizeof(double));
  for (int r = 0; r < c->np; r++) {
    size_t cols, c0;
    cs_block(n, m->py, r % m->py, &cols, &c0);
    (void)cols;
    memcpy(v + n * n + m->boff[r], panels + n * c0, n * cols * sizeof(double));
  }
  free(a);
  free(b);
  free(panels);
  cs_buf_put(c, m->sa, v, all);
  cs_buf_poison(c, m->sc, n * n * sizeof(double));
}

static int gmm_run(cs_ctx *c, long reps) {
  gmm *m = c->state;
  size_t n = m->n;
  int rc = 0;
  for (long rep = 0; rep < reps && !rc; rep++) {
    if (c->rank == 0) {
      for (int r = 1; r < c->np && !rc; r++) {
        size_t rows, r0, cols, c0;
        block_of(m, r, &rows, &r0, &cols, &c0);
        rc = send_block(c, m->sa + m->aoff[r], rows * n * sizeof(double), r);
        if (!rc) rc = send_block(c, m->sb + m->boff[r], n * cols * sizeof(double), r);
      }
      /* rank 0's own blocks: a device-to-device copy */
      if (!rc) rc = cs_dev_copy(c, m->a, m->sa, m->rows * n * sizeof(double));
      if (!rc) rc = cs_dev_copy(c, m->b, m->sb, n * m->cols * sizeof(double));
      if (!rc) rc = cs_dev_sync(c);
    } else {
      rc = recv_block(c, m->a, m->rows * n * sizeof(double), 0);
      if (!rc) rc = recv_block(c, m->b, n * m->cols * sizeof(double), 0);
    }
    cs_phase(c, PH_SEND_AB);
    if (!rc && m->rows && m->cols)
      rc = multiply(c, (int)m->rows, (int)m->cols, (int)n, m->a, m->b, m->c);
    cs_phase(c, PH_COMPUTE);
    if (m->spoil && !rc) { /* testing: one entry of C wrong before it moves, untimed */
      m->spoil = 0;
      size_t at = m->rows * m->cols / 2 * sizeof(double);
      double *v = cs_buf_get(c, (char *)m->c + at, sizeof(double));
      *v += 1.0;
      cs_buf_put(c, (char *)m->c + at, v, sizeof(double));
    }
    if (c->rank == 0) {
      for (int r = 1; r < c->np && !rc; r++) {
        size_t rows, r0, cols, c0;
        block_of(m, r, &rows, &r0, &cols, &c0);
        rc = recv_block(c, m->sc + m->coff[r], rows * cols * sizeof(double), r);
      }
      if (!rc) rc = cs_dev_copy(c, m->sc, m->c, m->rows * m->cols * sizeof(double));
      if (!rc) rc = cs_dev_sync(c);
    } else if (!rc) {
      rc = send_block(c, m->c, m->rows * m->cols * sizeof(double), 0);
    }
    cs_phase(c, PH_RETURN_C);
  }
  if (rc) fprintf(stderr, "cs-core: rank %d: gpu_matmul: %s\n", c->rank, cs_transport_strerror(rc));
  return rc;
}

/* Rank 0: C reassembled from its blocks, checked row by row against A (B x). */
static int gmm_check(cs_ctx *c, long sample, char *why, size_t len) {
  gmm *m = c->state;
  if (c->rank != 0) return 0;
  size_t n = m->n;
  double *a = malloc(n * n * sizeof *a), *b = malloc(n * n * sizeof *b);
  double *cm = malloc(n * n * sizeof *cm);
  int bad = !a || !b || !cm;
  if (!bad) {
    cs_product_fill(a, b, n, sample);
    const double *blocks = cs_buf_get(c, m->sc, n * n * sizeof(double));
    for (int r = 0; r < c->np; r++) {
      size_t rows, r0, cols, c0;
      block_of(m, r, &rows, &r0, &cols, &c0);
      for (size_t i = 0; i < rows; i++)
        memcpy(cm + (r0 + i) * n + c0, blocks + m->coff[r] + i * cols, cols * sizeof(double));
    }
    bad = cs_product_check(cm, a, b, n, 0, n, sample, why, len);
  } else {
    snprintf(why, len, "out of memory for the check");
  }
  free(a);
  free(b);
  free(cm);
  return bad;
}

static void gmm_bytes(const cs_ctx *c, double *bytes) {
  const gmm *m = c->state;
  double n = (double)m->n, mine = 8.0 * ((double)m->rows * n + n * (double)m->cols);
  double out = 8.0 * (double)m->rows * (double)m->cols;
  if (c->rank == 0) {
    double all_ab = 0, all_c = 0;
    for (int r = 1; r < c->np; r++) {
      size_t rows, r0, cols, c0;
      block_of(m, r, &rows, &r0, &cols, &c0);
      all_ab += 8.0 * ((double)rows * n + n * (double)cols);
      all_c += 8.0 * (double)rows * (double)cols;
    }
    mine = all_ab;
    out = all_c;
  }
  bytes[PH_SEND_AB] = mine;
  bytes[PH_COMPUTE] = 0;
  bytes[PH_RETURN_C] = out;
}

/* Testing: this rank's C spoiled after the product and before it goes to
 * rank 0 (the only place checked), as a broken path would leave it. */
static void gmm_corrupt(cs_ctx *c) {
  gmm *m = c->state;
  m->spoil = m->rows && m->cols;
}

static const cs_param_def GMM_PARAMS[] = {
    {"N", "1024", "matrix order; a comma-separated list is the sweep (e.g. N=2048,4096)"},
    {"px", "0", "process rows: row blocks of A (0: as square a grid as np allows)"},
    {"py", "0", "process columns: column blocks of B (0: as square a grid as np allows)"},
    {NULL, NULL, NULL},
};
static const char *const GMM_PHASES[] = {"send_AB", "compute", "return_C", NULL};

const cs_bench cs_bench_gpu_matmul = {
    .name = "gpu_matmul", .group = "apps", .metric = "time per product (max over ranks)",
    .desc = "C = A B on GPUs: rank 0 sends blocks of A and B over the GPU path, cuBLAS "
            "multiplies, rank 0 receives the blocks of C",
    .min_np = 1, .ops_per_rep = 1, .timing = CS_TIME_MAX, .size_param = "N", .gpu = 1,
    .gpu_only = 1, .params = GMM_PARAMS, .phases = GMM_PHASES, .setup = gmm_setup,
    .teardown = gmm_teardown, .judge = gmm_judge,
    .phase_bytes = gmm_bytes, .corrupt = gmm_corrupt, .corrupt_before = 1, .prepare = gmm_prepare, .run = gmm_run,
    .check = gmm_check,
};

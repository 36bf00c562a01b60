/* The same product as matmul, C = A B for N x N matrices held by rank 0,
 * on a 2D process grid with SUMMA (van de Geijn and Watts): rank 0 sends
 * every rank its block of A and of B, then for each panel of width nb of
 * the inner dimension the panel's owners broadcast it along their process
 * row (A) and column (B), and every rank adds the product of the two panels
 * to its block of C; rank 0 gathers C.  At the same N and process count as
 * matmul, the two schemes compare side by side.  Entries are small
 * integers, so C x = A (B x) is checked exactly on rank 0 (product.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cs.h"
#include "product.h"

#ifdef CS_HAVE_OPENBLAS
#include <cblas.h>
#endif

enum { PH_SEND_AB, PH_BCAST_A, PH_BCAST_B, PH_COMPUTE, PH_GATHER_C };
#define TAG_S 60

typedef struct su {
  size_t n, nb;
  int pr, pc, r, q;          /* grid and this rank's row and column */
  size_t *rlen, *rfirst;     /* rows of each process row */
  size_t *clen, *cfirst;     /* columns of each process column */
  MPI_Comm row, col;
  double *a, *b, *c;         /* rank 0: whole matrices */
  double *al, *bl, *cl;      /* this rank's blocks: rlen[r] x clen[q] */
  double *ap, *bp;           /* panels: rlen[r] x nb, nb x clen[q] */
  double *pack;              /* rank 0: one block at a time */
  int naive, spoil;
} su;

static void split(size_t n, int p, size_t *len, size_t *first) {
  for (int k = 0; k < p; k++) cs_block(n, p, k, &len[k], &first[k]);
}

static void su_teardown(cs_ctx *c) {
  su *s = c->state;
  if (!s) return;
  if (s->row != MPI_COMM_NULL) MPI_Comm_free(&s->row);
  if (s->col != MPI_COMM_NULL) MPI_Comm_free(&s->col);
  void *p[] = {s->rlen, s->rfirst, s->clen, s->cfirst, s->a, s->b, s->c, s->al, s->bl, s->cl,
               s->ap, s->bp, s->pack};
  for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) free(p[i]);
  free(s);
  c->state = NULL;
}

static int su_judge(const cs_ctx *c, char *why, size_t len) {
  size_t n = c->size;
  long nb = cs_param_long(c, "nb");
  int pr = 1, pc = 1;
  if (nb < 1) {
    snprintf(why, len, "summa nb (panel width) must be at least 1, got %ld", nb);
    return 1;
  }
  if (cs_product_judge_impl(c, why, len)) return 1;
  cs_grid2(c->np, 0, 0, &pr, &pc);
  if (n < (size_t)pr || n < (size_t)pc) {
    snprintf(why, len, "summa N=%zu cannot be split over a %d x %d grid", n, pr, pc);
    return 1;
  }
  if ((n / (size_t)pr + 1) * (n / (size_t)pc + 1) > (size_t)1 << 31) {
    snprintf(why, len, "summa N=%zu: a block exceeds MPI's int counts", n);
    return 1;
  }
  return 0;
}

/* Bytes rank `rank` holds: its blocks of A, B and C and one panel of each
 * (rank 0: also the whole A, B and C, and one block to pack). */
static double su_mem(const cs_ctx *c, int rank) {
  int pr = 1, pc = 1;
  cs_grid2(c->np, 0, 0, &pr, &pc);
  size_t n = c->size, mr, mc, f, w = (size_t)cs_param_long(c, "nb");
  cs_block(n, pr, rank / pc, &mr, &f);
  cs_block(n, pc, rank % pc, &mc, &f);
  w = w < n ? w : n;
  double mine = 8.0 * (3.0 * (double)mr * (double)mc + (double)w * (double)(mr + mc));
  if (rank == 0) mine += 8.0 * (3.0 * (double)n * (double)n + (double)mr * (double)mc);
  return mine;
}

static int su_setup(cs_ctx *c, char *why, size_t len) {
  size_t n = c->size;
  long nb = cs_param_long(c, "nb");
  char impl[16];
  cs_param(c, "impl", impl, sizeof impl);
#ifdef CS_HAVE_OPENBLAS
  openblas_set_num_threads(1);
#endif
  int dims[2] = {1, 1};
  cs_grid2(c->np, 0, 0, &dims[0], &dims[1]);
  su *s = calloc(1, sizeof *s);
  c->state = s;
  if (!s) goto nomem;
  s->row = s->col = MPI_COMM_NULL;
  s->n = n;
  s->nb = (size_t)nb;
  s->naive = !strcmp(impl, "naive");
  s->pr = dims[0];
  s->pc = dims[1];
  s->r = c->rank / s->pc;
  s->q = c->rank % s->pc;
  MPI_Comm_split(c->comm, s->r, s->q, &s->row); /* my process row: ranked by column */
  MPI_Comm_split(c->comm, s->q, s->r, &s->col); /* my process column: ranked by row */
  s->rlen = calloc((size_t)s->pr, sizeof(size_t));
  s->rfirst = calloc((size_t)s->pr, sizeof(size_t));
  s->clen = calloc((size_t)s->pc, sizeof(size_t));
  s->cfirst = calloc((size_t)s->pc, sizeof(size_t));
  if (!s->rlen || !s->rfirst || !s->clen || !s->cfirst) goto nomem;
  split(n, s->pr, s->rlen, s->rfirst);
  split(n, s->pc, s->clen, s->cfirst);
  size_t mr = s->rlen[s->r], mc = s->clen[s->q], w = s->nb < n ? s->nb : n;
  /* A's block is rows of my process row x columns of my process column, and
   * so are B's and C's: the inner dimension is split like the columns */
  s->al = cs_alloc(mr * mc * 8);
  s->bl = cs_alloc(mr * mc * 8);
  s->cl = cs_alloc(mr * mc * 8);
  s->ap = cs_alloc(mr * w * 8);
  s->bp = cs_alloc(w * mc * 8);
  if (!s->al || !s->bl || !s->cl || !s->ap || !s->bp) goto nomem;
  if (c->rank == 0) {
    s->a = cs_alloc(n * n * 8);
    s->b = cs_alloc(n * n * 8);
    s->c = cs_alloc(n * n * 8);
    s->pack = cs_alloc(s->rlen[0] * s->clen[0] * 8);
    if (!s->a || !s->b || !s->c || !s->pack) goto nomem;
  }
  return 0;
nomem:
  snprintf(why, len, "summa N=%zu: out of memory", n);
  return 1;
}

static void su_prepare(cs_ctx *c, long sample) {
  su *s = c->state;
  size_t n = s->n, m = s->rlen[s->r] * s->clen[s->q];
  cs_poison(s->al, m * 8);
  cs_poison(s->bl, m * 8);
  cs_poison(s->cl, m * 8);
  if (c->rank != 0) return;
  cs_product_fill(s->a, s->b, n, sample);
  cs_poison(s->c, n * n * 8);
}

/* Block (pr_, pc_) of an N x N matrix, as a contiguous rows x cols copy. */
static void copy_block(const su *s, const double *m, int pr_, int pc_, double *out) {
  for (size_t i = 0; i < s->rlen[pr_]; i++)
    memcpy(out + i * s->clen[pc_], m + (s->rfirst[pr_] + i) * s->n + s->cfirst[pc_],
           s->clen[pc_] * 8);
}

static void put_block(const su *s, double *m, int pr_, int pc_, const double *in) {
  for (size_t i = 0; i < s->rlen[pr_]; i++)
    memcpy(m + (s->rfirst[pr_] + i) * s->n + s->cfirst[pc_], in + i * s->clen[pc_],
           s->clen[pc_] * 8);
}

static void distribute(cs_ctx *c, su *s) {
  if (c->rank == 0) {
    for (int k = 0; k < c->np; k++) {
      int r = k / s->pc, q = k % s->pc;
      int cnt = (int)(s->rlen[r] * s->clen[q]);
      for (int which = 0; which < 2; which++) {
        double *dst = k == 0 ? (which ? s->bl : s->al) : s->pack;
        copy_block(s, which ? s->b : s->a, r, q, dst);
        if (k) MPI_Send(s->pack, cnt, MPI_DOUBLE, k, TAG_S + which, c->comm);
      }
    }
  } else {
    int cnt = (int)(s->rlen[s->r] * s->clen[s->q]);
    MPI_Recv(s->al, cnt, MPI_DOUBLE, 0, TAG_S, c->comm, MPI_STATUS_IGNORE);
    MPI_Recv(s->bl, cnt, MPI_DOUBLE, 0, TAG_S + 1, c->comm, MPI_STATUS_IGNORE);
  }
}

static void gather(cs_ctx *c, su *s) {
  if (c->rank == 0) {
    put_block(s, s->c, 0, 0, s->cl);
    for (int k = 1; k < c->np; k++) {
      int r = k / s->pc, q = k % s->pc;
      MPI_Recv(s->pack, (int)(s->rlen[r] * s->clen[q]), MPI_DOUBLE, k, TAG_S + 2, c->comm,
               MPI_STATUS_IGNORE);
      put_block(s, s->c, r, q, s->pack);
    }
  } else {
    MPI_Send(s->cl, (int)(s->rlen[s->r] * s->clen[s->q]), MPI_DOUBLE, 0, TAG_S + 2, c->comm);
  }
}

/* C += Ap (mr x w) Bp (w x mc). */
static void panel_product(const su *s, size_t mr, size_t mc, size_t w) {
  if (s->naive || !mr || !mc) {
    cs_product_naive(s->ap, s->bp, s->cl, mr, mc, w, 1);
    return;
  }
#ifdef CS_HAVE_OPENBLAS
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mr, (int)mc, (int)w, 1.0, s->ap,
              (int)w, s->bp, (int)mc, 1.0, s->cl, (int)mc);
#endif
}

static int su_run(cs_ctx *c, long reps) {
  su *s = c->state;
  size_t mr = s->rlen[s->r], mc = s->clen[s->q];
  for (long rep = 0; rep < reps; rep++) {
    distribute(c, s);
    cs_phase(c, PH_SEND_AB);
    memset(s->cl, 0, mr * mc * 8);
    for (size_t k0 = 0; k0 < s->n;) {
      /* the owners of inner index k0: a process column for A, a row for B */
      int oq = 0, orow = 0;
      while (s->cfirst[oq] + s->clen[oq] <= k0) oq++;
      while (s->rfirst[orow] + s->rlen[orow] <= k0) orow++;
      size_t w = s->nb;
      size_t end_q = s->cfirst[oq] + s->clen[oq], end_r = s->rfirst[orow] + s->rlen[orow];
      if (k0 + w > end_q) w = end_q - k0;
      if (k0 + w > end_r) w = end_r - k0;
      if (s->q == oq) /* my columns k0.. of A, as a panel */
        for (size_t i = 0; i < mr; i++)
          memcpy(s->ap + i * w, s->al + i * mc + (k0 - s->cfirst[oq]), w * 8);
      MPI_Bcast(s->ap, (int)(mr * w), MPI_DOUBLE, oq, s->row);
      cs_phase(c, PH_BCAST_A);
      if (s->r == orow) /* my rows k0.. of B (B's block has my columns) */
        memcpy(s->bp, s->bl + (k0 - s->rfirst[orow]) * mc, w * mc * 8);
      MPI_Bcast(s->bp, (int)(w * mc), MPI_DOUBLE, orow, s->col);
      cs_phase(c, PH_BCAST_B);
      panel_product(s, mr, mc, w);
      cs_phase(c, PH_COMPUTE);
      k0 += w;
    }
    if (s->spoil && c->rank == c->np - 1 && mr && mc) s->cl[(mr / 2) * mc + mc / 3] += 1.0;
    s->spoil = 0;
    gather(c, s);
    cs_phase(c, PH_GATHER_C);
  }
  return 0;
}

static int su_check(cs_ctx *c, long sample, char *why, size_t len) {
  su *s = c->state;
  return c->rank == 0 && cs_product_check(s->c, s->a, s->b, s->n, 0, s->n, sample, why, len);
}

/* Payload each rank sends plus receives per product: its blocks of A and
 * B (rank 0: everybody else's), the panels of A broadcast along its
 * process row and of B along its column (each panel counted once, sent by
 * its owner or received), and its block of C. */
static void su_bytes(const cs_ctx *c, double *bytes) {
  const su *s = c->state;
  double mine = 8.0 * (double)s->rlen[s->r] * (double)s->clen[s->q];
  double all = 8.0 * (double)s->n * (double)s->n, others = c->np > 1 ? all - mine : 0;
  int root = c->rank == 0;
  bytes[PH_SEND_AB] = 2.0 * (root ? others : mine);
  bytes[PH_BCAST_A] = s->pc > 1 ? 8.0 * (double)s->rlen[s->r] * (double)s->n : 0;
  bytes[PH_BCAST_B] = s->pr > 1 ? 8.0 * (double)s->n * (double)s->clen[s->q] : 0;
  bytes[PH_COMPUTE] = 0;
  bytes[PH_GATHER_C] = root ? others : mine;
}

static void su_corrupt(cs_ctx *c) { ((su *)c->state)->spoil = 1; }
static const cs_param_def SU_PARAMS[] = {
    {"N", "256", "matrix order; a comma-separated list is the sweep (e.g. N=2000,4000)"},
    {"nb", "64", "panel width of the broadcasts (columns of A, rows of B)"},
    {"impl", "blas", "compute with OpenBLAS's dgemm (blas) or a plain loop (naive)"},
    {NULL, NULL, NULL},
};
static const char *const SU_PHASES[] = {"send_AB", "bcast_A", "bcast_B", "compute", "gather_C",
                                        NULL};

const cs_bench cs_bench_summa = {
    .name = "summa", .group = "apps", .metric = "time per product (max over ranks)",
    .desc = "C = A B by SUMMA on a 2D grid: blocks sent, panels broadcast along rows and "
            "columns, C gathered",
    .min_np = 1, .ops_per_rep = 1, .timing = CS_TIME_MAX, .size_param = "N",
    .params = SU_PARAMS, .phases = SU_PHASES, .setup = su_setup, .teardown = su_teardown,
    .judge = su_judge, .mem_bytes = su_mem, .phase_bytes = su_bytes,
    .corrupt = su_corrupt, .corrupt_before = 1, .prepare = su_prepare,
    .run = su_run, .check = su_check,
};

/* The Jacobi solver of jacobi.c on GPUs, as the CUDA-aware MPI post ran it:
 * the same 2D decomposition, the grid in device memory, the update and the
 * packing of the left and right halo columns as kernels, and the halos
 * exchanged over the GPU path's transport (--path staged: through host
 * memory; cuda-aware: device pointers to MPI; nccl: NCCL send/recv).  The
 * update is the CPU's expression without fused multiply-adds, so the
 * gathered grid must equal the CPU's serial sweeps bit for bit.  scale=weak
 * grows the grid with the process grid, as the CPU Jacobi's does.  With
 * host memory standing in for the device (COMMSCOPE_GPU_STANDIN=host,
 * testing) the kernels are plain loops on the host. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cs.h"
#include "cs_gpu.h"
#include "jacobi.h"

typedef struct gjac {
  size_t nx, ny, lx, ly, x0, y0, w;
  int px, py, iters, every;
  int nbr[4];
  MPI_Comm cart;
  double *u, *un;       /* device: the block with ghosts, twice (one pair) */
  double *s, *r;        /* device: left and right columns out and in (one pair) */
  double hx2, hy2, src, inv, residual;
  int spoil;
} gjac;

static int gj_judge(const cs_ctx *c, char *why, size_t len) {
  int px, py;
  size_t nx, ny;
  char scale[16];
  cs_param(c, "scale", scale, sizeof scale);
  long iters = cs_param_long(c, "iters"), every = cs_param_long(c, "reduce_every");
  if (strcmp(scale, "strong") && strcmp(scale, "weak")) {
    snprintf(why, len, "gpu_jacobi scale must be strong or weak, got '%s'", scale);
    return 1;
  }
  cs_jacobi_grid(c, &px, &py, &nx, &ny);
  if (!px) {
    snprintf(why, len, "gpu_jacobi grid px=%ld x py=%ld does not decompose %d processes",
             cs_param_long(c, "px"), cs_param_long(c, "py"), c->np);
    return 1;
  }
  if (iters < 1 || every < 1) {
    snprintf(why, len, "gpu_jacobi iters and reduce_every must be at least 1");
    return 1;
  }
  if (nx < (size_t)px || ny < (size_t)py ||
      (nx / (size_t)px + 3) * (ny / (size_t)py + 3) > (size_t)1 << 31) {
    snprintf(why, len, "gpu_jacobi N=%zu cannot be split over a %d x %d grid", c->size, px, py);
    return 1;
  }
  return 0;
}

/* The update: the kernel, or on the stand-in the CPU Jacobi's own loop (the
 * same expression and order, and the core's C, like the kernel, is
 * compiled without contraction). */
static int sweep(cs_ctx *c, const gjac *j, double *res) {
  if (cs_buf_on_device(c))
    return CS_GPU_TRY(cs_gpu_jacobi_sweep(j->u, j->un, j->w, 1, j->lx, 1, j->ly, j->hx2, j->hy2,
                                          j->src, j->inv, res));
  double r = cs_jacobi_rows(j->u, j->un, j->w, 1, j->lx, 1, j->ly, j->hx2, j->hy2, j->src,
                            j->inv, res != NULL);
  if (res) *res += r;
  return 0;
}

/* Column k of rows 1..lx to buf (pack) or from it. */
static int column(cs_ctx *c, const gjac *j, size_t k, double *buf, int pack) {
  if (cs_buf_on_device(c))
    return CS_GPU_TRY(pack ? cs_gpu_pack_col(j->u, j->w, j->lx, k, buf)
                           : cs_gpu_unpack_col(j->u, j->w, j->lx, k, buf));
  for (size_t i = 0; i < j->lx; i++) {
    if (pack)
      buf[i] = j->u[(i + 1) * j->w + k];
    else
      j->u[(i + 1) * j->w + k] = buf[i];
  }
  return 0;
}

static void gj_teardown(cs_ctx *c) {
  gjac *j = c->state;
  if (!j) return;
  cs_buf_free(c, j->u);
  cs_buf_free(c, j->un);
  cs_buf_free(c, j->s);
  cs_buf_free(c, j->r);
  if (j->cart != MPI_COMM_NULL) MPI_Comm_free(&j->cart);
  free(j);
  c->state = NULL;
}

static int gj_setup(cs_ctx *c, char *why, size_t len) {
  gjac *j = calloc(1, sizeof *j);
  c->state = j;
  if (!j) goto nomem;
  j->cart = MPI_COMM_NULL;
  int dims[2], periods[2] = {0, 0}, coords[2];
  cs_jacobi_grid(c, &dims[0], &dims[1], &j->nx, &j->ny);
  j->px = dims[0];
  j->py = dims[1];
  j->iters = (int)cs_param_long(c, "iters");
  j->every = (int)cs_param_long(c, "reduce_every");
  MPI_Cart_create(c->comm, 2, dims, periods, 0, &j->cart);
  MPI_Cart_coords(j->cart, c->rank, 2, coords);
  MPI_Cart_shift(j->cart, 0, 1, &j->nbr[UP], &j->nbr[DOWN]);
  MPI_Cart_shift(j->cart, 1, 1, &j->nbr[LEFT], &j->nbr[RIGHT]);
  cs_block(j->nx, j->px, coords[0], &j->lx, &j->x0);
  cs_block(j->ny, j->py, coords[1], &j->ly, &j->y0);
  j->w = j->ly + 2;
  double hx = 1.0 / (double)(j->nx + 1), hy = 1.0 / (double)(j->ny + 1);
  j->hx2 = hx * hx;
  j->hy2 = hy * hy;
  j->inv = 1.0 / (2.0 * (j->hx2 + j->hy2));
  j->src = 4.0 * j->hx2 * j->hy2;
  void *a, *b;
  if (cs_buf_pair(c, &a, &b, (j->lx + 2) * j->w * sizeof(double))) goto nomem;
  j->u = a;
  j->un = b;
  if (cs_buf_pair(c, &a, &b, 2 * (j->lx ? j->lx : 1) * sizeof(double))) goto nomem;
  j->s = a;
  j->r = b;
  return 0;
nomem:
  snprintf(why, len, "gpu_jacobi N=%zu: out of device memory: %s", c->size, cs_gpu_error());
  return 1;
}

/* Untimed: zero grids with the boundary condition in their ghost cells. */
static void gj_prepare(cs_ctx *c, long sample) {
  (void)sample;
  gjac *j = c->state;
  size_t bytes = (j->lx + 2) * j->w * sizeof(double);
  double *v = cs_buf_get(c, j->u, bytes);
  memset(v, 0, bytes);
  cs_jacobi_boundary(v, j->nx, j->ny, j->x0, j->y0, j->lx, j->ly);
  cs_buf_put(c, j->u, v, bytes);
  cs_buf_put(c, j->un, v, bytes);
}

#define OK(x) \
  do {        \
    if (!rc) rc = (x); \
  } while (0)

/* Every halo posted through the transport (no neighbour: nothing posted). */
static int exchange(cs_ctx *c, gjac *j) {
  const cs_transport *t = c->tp;
  size_t row = j->ly * sizeof(double), col = j->lx * sizeof(double);
  double *u = j->u;
  int k = 0, rc = 0;
  struct { double *in, *out; size_t n; int peer; } h[4] = {
      {u + 1, u + j->w + 1, row, j->nbr[UP]},
      {u + (j->lx + 1) * j->w + 1, u + j->lx * j->w + 1, row, j->nbr[DOWN]},
      {j->r, j->s, col, j->nbr[LEFT]},
      {j->r + j->lx, j->s + j->lx, col, j->nbr[RIGHT]},
  };
  for (int d = 0; d < 4; d++)
    if (h[d].peer != MPI_PROC_NULL) OK(t->irecv(c, h[d].in, h[d].n, h[d].peer, k++));
  for (int d = 0; d < 4; d++)
    if (h[d].peer != MPI_PROC_NULL) OK(t->isend(c, h[d].out, h[d].n, h[d].peer, k++));
  OK(t->waitall(c, k));
  return rc;
}

static int gj_run(cs_ctx *c, long reps) {
  gjac *j = c->state;
  int rc = 0;
  for (long rep = 0; rep < reps && !rc; rep++)
    for (int it = 1; it <= j->iters && !rc; it++) {
      int reduce = it % j->every == 0 || it == j->iters;
      OK(column(c, j, 1, j->s, 1));
      OK(column(c, j, j->ly, j->s + j->lx, 1));
      OK(cs_dev_sync(c));
      cs_phase(c, PH_PACK);
      OK(exchange(c, j));
      cs_phase(c, PH_EXCHANGE);
      if (j->nbr[LEFT] != MPI_PROC_NULL) OK(column(c, j, 0, j->r, 0));
      if (j->nbr[RIGHT] != MPI_PROC_NULL) OK(column(c, j, j->ly + 1, j->r + j->lx, 0));
      OK(cs_dev_sync(c));
      if (j->spoil && !rc) { /* testing: one ghost value wrong, as a broken exchange leaves it */
        j->spoil = 0;
        double *one = cs_buf_get(c, j->u + j->w, sizeof *one);
        *one += 1e-3;
        cs_buf_put(c, j->u + j->w, one, sizeof *one);
      }
      cs_phase(c, PH_UNPACK);
      double res = 0;
      OK(sweep(c, j, reduce ? &res : NULL));
      OK(cs_dev_sync(c));
      cs_phase(c, PH_COMPUTE);
      double *t = j->u;
      j->u = j->un;
      j->un = t;
      if (reduce && !rc) {
        MPI_Allreduce(&res, &j->residual, 1, MPI_DOUBLE, MPI_SUM, j->cart);
        cs_phase(c, PH_REDUCE);
      }
    }
  if (rc) fprintf(stderr, "cs-core: rank %d: gpu_jacobi: %s\n", c->rank, cs_transport_strerror(rc));
  return rc;
}

/* Rank 0 gathers the interior points and holds them against the serial
 * CPU sweeps. */
static int gj_check(cs_ctx *c, long sample, char *why, size_t len) {
  (void)sample;
  gjac *j = c->state;
  const double *v = cs_buf_get(c, j->u, (j->lx + 2) * j->w * sizeof(double));
  return cs_jacobi_check_grid(v, j->w, j->x0, j->lx, j->y0, j->ly, j->nx, j->ny, j->iters,
                              j->cart, why, len);
}

/* Both halo columns packed by a kernel every sweep (read + written, whether
 * or not a neighbour is there); only those that came in are unpacked. */
static void gj_bytes(const cs_ctx *c, double *bytes) {
  const gjac *j = c->state;
  int lr = (j->nbr[LEFT] != MPI_PROC_NULL) + (j->nbr[RIGHT] != MPI_PROC_NULL);
  double col = 16.0 * (double)j->lx;
  cs_jacobi_phase_bytes(c->np, j->iters, j->every, j->lx, j->ly, j->nbr, col * 2, col * lr,
                        bytes);
}

static void gj_corrupt(cs_ctx *c) { ((gjac *)c->state)->spoil = 1; }

static const cs_param_def GJ_PARAMS[] = {
    {"N", "1024", "grid points per side (scale=weak: per rank and side); a list is the sweep"},
    {"px", "0", "process rows (0: as square a grid as np allows)"},
    {"py", "0", "process columns (0: as square a grid as np allows)"},
    {"iters", "20", "Jacobi sweeps per sample"},
    {"reduce_every", "10", "sweeps between residual reductions (MPI_Allreduce)"},
    {"scale", "strong", "strong: N is the global grid; weak: N per rank, the grid grows"},
    {NULL, NULL, NULL},
};
static const char *const GJ_PHASES[] = {"pack", "exchange", "unpack", "compute", "reduce",
                                        NULL};

const cs_bench cs_bench_gpu_jacobi = {
    .name = "gpu_jacobi", .group = "apps", .metric = "time per sample of iters sweeps",
    .desc = "Poisson by Jacobi on GPUs: 2D decomposition, halo columns packed by kernels, "
            "halos over the GPU path",
    .min_np = 1, .ops_per_rep = 1, .timing = CS_TIME_MAX, .size_param = "N", .gpu = 1,
    .gpu_only = 1, .params = GJ_PARAMS, .phases = GJ_PHASES, .setup = gj_setup,
    .teardown = gj_teardown, .judge = gj_judge, .phase_bytes = gj_bytes,
    .corrupt = gj_corrupt, .corrupt_before = 1, .prepare = gj_prepare, .run = gj_run,
    .check = gj_check,
};

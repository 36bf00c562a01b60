/* Poisson's equation on the unit square by Jacobi iteration, on a 2D
 * domain decomposition with halo exchange: the CUDA-aware MPI post's
 * ("Benchmarking CUDA-Aware MPI") Jacobi solver, here on CPUs.  -Δu = f
 * with f = -4 and Dirichlet boundaries u = x² + y², whose discrete solution
 * is x² + y² exactly (the 5-point stencil is exact on quadratics).
 *
 * A sample is `iters` sweeps.  Each sweep exchanges halos (top and bottom
 * rows are contiguous; left and right columns are packed into buffers or
 * sent with an MPI_Type_vector), updates every point, and every
 * `reduce_every` sweeps the residual is summed with MPI_Allreduce.  With
 * mode=overlap the interior is computed while the halos travel.
 *
 * Validation: every point's update is the same expression whatever the
 * decomposition, so after `iters` sweeps from the initial state the
 * gathered grid must equal, bit for bit, a serial Jacobi on rank 0. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cs.h"
#include "jacobi.h"

typedef struct jac {
  size_t nx, ny;        /* global interior points */
  int px, py, cx, cy;   /* process grid and this rank's coordinates */
  size_t lx, ly, x0, y0; /* this rank's block and its first global point */
  size_t w;             /* row length with ghosts: ly + 2 */
  int iters, every, overlap, datatype;
  int nbr[4];
  MPI_Comm cart;
  MPI_Datatype col;     /* one interior column (halo=datatype) */
  double *u, *un, *sbuf[2], *rbuf[2];
  double hx2, hy2, inv, src; /* the update's constants (see update) */
  int want_res;         /* this sweep sums the residual (reduction sweeps only) */
  double residual;
  int spoil;            /* testing: corrupt the next halo received */
} jac;

static double g(double x, double y) { return x * x + y * y; }

static void jac_teardown(cs_ctx *c) {
  jac *j = c->state;
  if (!j) return;
  if (j->col != MPI_DATATYPE_NULL) MPI_Type_free(&j->col);
  if (j->cart != MPI_COMM_NULL) MPI_Comm_free(&j->cart);
  free(j->u);
  free(j->un);
  for (int k = 0; k < 2; k++) {
    free(j->sbuf[k]);
    free(j->rbuf[k]);
  }
  free(j);
  c->state = NULL;
}

void cs_jacobi_boundary(double *u, size_t nx, size_t ny, size_t x0, size_t y0, size_t lx,
                        size_t ly) {
  double hx = 1.0 / (double)(nx + 1), hy = 1.0 / (double)(ny + 1);
  for (size_t i = 0; i < lx + 2; i++)
    for (size_t k = 0; k < ly + 2; k++) {
      long gi = (long)(x0 + i) - 1, gk = (long)(y0 + k) - 1;
      int edge = gi < 0 || gi >= (long)nx || gk < 0 || gk >= (long)ny;
      if (edge) u[i * (ly + 2) + k] = g((double)(gi + 1) * hx, (double)(gk + 1) * hy);
    }
}

/* Ghost cells on the physical boundary hold the boundary condition. */
static void set_boundary(jac *j, double *u) {
  cs_jacobi_boundary(u, j->nx, j->ny, j->x0, j->y0, j->lx, j->ly);
}

static void initial_state(jac *j) {
  memset(j->u, 0, (j->lx + 2) * j->w * sizeof(double));
  memset(j->un, 0, (j->lx + 2) * j->w * sizeof(double));
  set_boundary(j, j->u);
  set_boundary(j, j->un);
}

void cs_jacobi_grid(const cs_ctx *c, int *px, int *py, size_t *nx, size_t *ny) {
  char scale[16];
  cs_param(c, "scale", scale, sizeof scale);
  if (!cs_grid2(c->np, cs_param_long(c, "px"), cs_param_long(c, "py"), px, py)) *px = *py = 0;
  int weak = !strcmp(scale, "weak");
  *nx = weak ? c->size * (size_t)*px : c->size;
  *ny = weak ? c->size * (size_t)*py : c->size;
}

static int jac_judge(const cs_ctx *c, char *why, size_t len) {
  char mode[16], halo[16], scale[16];
  cs_param(c, "mode", mode, sizeof mode);
  cs_param(c, "halo", halo, sizeof halo);
  cs_param(c, "scale", scale, sizeof scale);
  long px = cs_param_long(c, "px"), py = cs_param_long(c, "py");
  long iters = cs_param_long(c, "iters"), every = cs_param_long(c, "reduce_every");
  if (strcmp(mode, "blocking") && strcmp(mode, "overlap")) {
    snprintf(why, len, "jacobi mode must be blocking or overlap, got '%s'", mode);
    return 1;
  }
  if (strcmp(halo, "packed") && strcmp(halo, "datatype")) {
    snprintf(why, len, "jacobi halo must be packed or datatype, got '%s'", halo);
    return 1;
  }
  if (strcmp(scale, "strong") && strcmp(scale, "weak")) {
    snprintf(why, len, "jacobi scale must be strong or weak, got '%s'", scale);
    return 1;
  }
  if (iters < 1 || every < 1 || px < 0 || py < 0) {
    snprintf(why, len, "jacobi iters and reduce_every must be at least 1, px and py 0 or more");
    return 1;
  }
  int gx = 0, gy = 0;
  size_t nx, ny;
  cs_jacobi_grid(c, &gx, &gy, &nx, &ny);
  if (!gx) {
    snprintf(why, len, "jacobi grid px=%ld x py=%ld does not decompose %d processes", px, py,
             c->np);
    return 1;
  }
  if (nx < (size_t)gx || ny < (size_t)gy) {
    snprintf(why, len, "jacobi N=%zu cannot be split over a %d x %d grid", c->size, gx, gy);
    return 1;
  }
  if ((nx / (size_t)gx + 3) * (ny / (size_t)gy + 3) > (size_t)1 << 31) {
    snprintf(why, len, "jacobi N=%zu: a rank's block exceeds MPI's int counts", c->size);
    return 1;
  }
  return 0;
}

/* Bytes rank `rank` holds: its two grids with ghosts and four halo
 * buffers; rank 0 also the gathered grid and the serial reference's two
 * for the check. */
static double jac_mem(const cs_ctx *c, int rank) {
  int px = 0, py = 0;
  size_t nx, ny, lx, ly, f;
  cs_jacobi_grid(c, &px, &py, &nx, &ny);
  if (!px) return 0;
  cs_block(nx, px, rank / py, &lx, &f);
  cs_block(ny, py, rank % py, &ly, &f);
  double mine = 8.0 * (2.0 * (double)(lx + 2) * (double)(ly + 2) + 4.0 * (double)lx);
  if (rank == 0) mine += 8.0 * 3.0 * (double)(nx + 2) * (double)(ny + 2);
  return mine;
}

static int jac_setup(cs_ctx *c, char *why, size_t len) {
  char mode[16], halo[16];
  cs_param(c, "mode", mode, sizeof mode);
  cs_param(c, "halo", halo, sizeof halo);
  long iters = cs_param_long(c, "iters"), every = cs_param_long(c, "reduce_every");
  int dims[2] = {1, 1};
  size_t nx, ny, n = c->size;
  cs_jacobi_grid(c, &dims[0], &dims[1], &nx, &ny);
  jac *j = calloc(1, sizeof *j);
  c->state = j;
  if (!j) goto nomem;
  j->col = MPI_DATATYPE_NULL;
  j->cart = MPI_COMM_NULL;
  j->nx = nx;
  j->ny = ny;
  j->px = dims[0];
  j->py = dims[1];
  j->iters = (int)iters;
  j->every = (int)every;
  j->overlap = !strcmp(mode, "overlap");
  j->datatype = !strcmp(halo, "datatype");
  int periods[2] = {0, 0}, coords[2];
  MPI_Cart_create(c->comm, 2, dims, periods, 0, &j->cart);
  MPI_Cart_coords(j->cart, c->rank, 2, coords);
  j->cx = coords[0];
  j->cy = coords[1];
  MPI_Cart_shift(j->cart, 0, 1, &j->nbr[UP], &j->nbr[DOWN]);
  MPI_Cart_shift(j->cart, 1, 1, &j->nbr[LEFT], &j->nbr[RIGHT]);
  cs_block(nx, j->px, j->cx, &j->lx, &j->x0);
  cs_block(ny, j->py, j->cy, &j->ly, &j->y0);
  j->w = j->ly + 2;
  double hx = 1.0 / (double)(nx + 1), hy = 1.0 / (double)(ny + 1);
  j->hx2 = hx * hx;
  j->hy2 = hy * hy;
  j->inv = 1.0 / (2.0 * (j->hx2 + j->hy2));
  j->src = 4.0 * j->hx2 * j->hy2;
  size_t cells = (j->lx + 2) * j->w;
  j->u = cs_alloc(cells * sizeof(double));
  j->un = cs_alloc(cells * sizeof(double));
  for (int k = 0; k < 2; k++) {
    j->sbuf[k] = calloc(j->lx ? j->lx : 1, sizeof(double));
    j->rbuf[k] = calloc(j->lx ? j->lx : 1, sizeof(double));
  }
  if (!j->u || !j->un || !j->sbuf[0] || !j->sbuf[1] || !j->rbuf[0] || !j->rbuf[1]) goto nomem;
  MPI_Type_vector((int)j->lx, 1, (int)j->w, MPI_DOUBLE, &j->col);
  MPI_Type_commit(&j->col);
  initial_state(j);
  return 0;
nomem:
  snprintf(why, len, "jacobi N=%zu: out of memory", n);
  return 1;
}

/* A point's update, (hy² (u_N + u_S) + hx² (u_W + u_E) - 4 hx² hy²) /
 * (2 (hx² + hy²)), is the same expression on every decomposition, written
 * with a multiplication (not a division) so that the loop streams. */
/* Rows i0..i1 and columns k0..k1 (inclusive, 1-based local).  Only the
 * sweeps whose residual is reduced sum it: a sum in the loop keeps the
 * compiler from vectorising it (no reassociation without -ffast-math). */
CS_VECTORIZE double cs_jacobi_rows(const double *u0, double *un0, size_t w, size_t i0,
                                   size_t i1, size_t k0, size_t k1, double hx2, double hy2,
                                   double src, double inv, int want_res) {
  double res = 0;
  for (size_t i = i0; i <= i1; i++) {
    const double *restrict u = u0 + i * w, *restrict up = u - w, *restrict dn = u + w;
    double *restrict un = un0 + i * w;
    if (want_res) {
      for (size_t k = k0; k <= k1; k++) {
        double v = (hy2 * (up[k] + dn[k]) + hx2 * (u[k - 1] + u[k + 1]) - src) * inv;
        double d = v - u[k];
        un[k] = v;
        res += d * d;
      }
    } else { /* the same expression as update(), written for the vectoriser */
      for (size_t k = k0; k <= k1; k++)
        un[k] = (hy2 * (up[k] + dn[k]) + hx2 * (u[k - 1] + u[k + 1]) - src) * inv;
    }
  }
  return res;
}

static double sweep(jac *j, size_t i0, size_t i1, size_t k0, size_t k1) {
  return cs_jacobi_rows(j->u, j->un, j->w, i0, i1, k0, k1, j->hx2, j->hy2, j->src, j->inv,
                        j->want_res);
}

#define TAG_H 40

static void pack(jac *j) {
  for (size_t i = 0; i < j->lx; i++) {
    j->sbuf[0][i] = j->u[(i + 1) * j->w + 1];     /* to LEFT */
    j->sbuf[1][i] = j->u[(i + 1) * j->w + j->ly]; /* to RIGHT */
  }
}

static void unpack(jac *j) {
  for (size_t i = 0; i < j->lx; i++) {
    if (j->nbr[LEFT] != MPI_PROC_NULL) j->u[(i + 1) * j->w] = j->rbuf[0][i];
    if (j->nbr[RIGHT] != MPI_PROC_NULL) j->u[(i + 1) * j->w + j->ly + 1] = j->rbuf[1][i];
  }
}

/* Post every halo transfer: rows directly, columns packed or as vectors. */
static void post(jac *j, MPI_Request *rq) {
  int ly = (int)j->ly, lx = (int)j->lx;
  double *u = j->u;
  MPI_Irecv(u + 1, ly, MPI_DOUBLE, j->nbr[UP], TAG_H, j->cart, &rq[0]);
  MPI_Irecv(u + (j->lx + 1) * j->w + 1, ly, MPI_DOUBLE, j->nbr[DOWN], TAG_H, j->cart, &rq[1]);
  MPI_Isend(u + j->w + 1, ly, MPI_DOUBLE, j->nbr[UP], TAG_H, j->cart, &rq[2]);
  MPI_Isend(u + j->lx * j->w + 1, ly, MPI_DOUBLE, j->nbr[DOWN], TAG_H, j->cart, &rq[3]);
  if (j->datatype) {
    MPI_Irecv(u + j->w, 1, j->col, j->nbr[LEFT], TAG_H + 1, j->cart, &rq[4]);
    MPI_Irecv(u + j->w + j->ly + 1, 1, j->col, j->nbr[RIGHT], TAG_H + 1, j->cart, &rq[5]);
    MPI_Isend(u + j->w + 1, 1, j->col, j->nbr[LEFT], TAG_H + 1, j->cart, &rq[6]);
    MPI_Isend(u + j->w + j->ly, 1, j->col, j->nbr[RIGHT], TAG_H + 1, j->cart, &rq[7]);
  } else {
    MPI_Irecv(j->rbuf[0], lx, MPI_DOUBLE, j->nbr[LEFT], TAG_H + 1, j->cart, &rq[4]);
    MPI_Irecv(j->rbuf[1], lx, MPI_DOUBLE, j->nbr[RIGHT], TAG_H + 1, j->cart, &rq[5]);
    MPI_Isend(j->sbuf[0], lx, MPI_DOUBLE, j->nbr[LEFT], TAG_H + 1, j->cart, &rq[6]);
    MPI_Isend(j->sbuf[1], lx, MPI_DOUBLE, j->nbr[RIGHT], TAG_H + 1, j->cart, &rq[7]);
  }
}

/* The rim: points next to a ghost cell, computed once the halos are in. */
static double rim(jac *j) {
  size_t lx = j->lx, ly = j->ly;
  if (lx <= 2 || ly <= 2) return sweep(j, 1, lx, 1, ly);
  return sweep(j, 1, 1, 1, ly) + sweep(j, lx, lx, 1, ly) + sweep(j, 2, lx - 1, 1, 1) +
         sweep(j, 2, lx - 1, ly, ly);
}

/* Testing: one received ghost value is wrong, as a broken exchange would
 * leave it; with no neighbour (one rank), an interior point instead. */
static void spoil_halo(jac *j) {
  j->spoil = 0;
  if (j->nbr[UP] != MPI_PROC_NULL)
    j->u[j->ly / 2 + 1] += 1e-3;
  else if (j->nbr[DOWN] != MPI_PROC_NULL)
    j->u[(j->lx + 1) * j->w + j->ly / 2 + 1] += 1e-3;
  else if (j->nbr[LEFT] != MPI_PROC_NULL)
    j->u[(j->lx / 2 + 1) * j->w] += 1e-3;
  else if (j->nbr[RIGHT] != MPI_PROC_NULL)
    j->u[(j->lx / 2 + 1) * j->w + j->ly + 1] += 1e-3;
  else
    j->u[(j->lx / 2 + 1) * j->w + j->ly / 2 + 1] += 1e-3;
}

static double one_sweep(cs_ctx *c, jac *j) {
  MPI_Request rq[8];
  MPI_Status st[8]; /* not MPI_STATUSES_IGNORE: GCC 12 misreads MPICH's (size 0) */
  double res;
  if (!j->datatype) pack(j);
  cs_phase(c, PH_PACK);
  post(j, rq);
  if (j->overlap) {
    cs_phase(c, PH_EXCHANGE);
    res = j->lx > 2 && j->ly > 2 ? sweep(j, 2, j->lx - 1, 2, j->ly - 1) : 0;
    cs_phase(c, PH_COMPUTE);
    MPI_Waitall(8, rq, st);
    cs_phase(c, PH_EXCHANGE);
    if (!j->datatype) unpack(j);
    if (j->spoil) spoil_halo(j);
    cs_phase(c, PH_UNPACK);
    res += rim(j);
  } else {
    MPI_Waitall(8, rq, st);
    cs_phase(c, PH_EXCHANGE);
    if (!j->datatype) unpack(j);
    if (j->spoil) spoil_halo(j);
    cs_phase(c, PH_UNPACK);
    res = sweep(j, 1, j->lx, 1, j->ly);
  }
  cs_phase(c, PH_COMPUTE);
  double *t = j->u;
  j->u = j->un;
  j->un = t;
  return res;
}

static int jac_run(cs_ctx *c, long reps) {
  jac *j = c->state;
  for (long r = 0; r < reps; r++)
    for (int it = 1; it <= j->iters; it++) {
      int reduce = it % j->every == 0 || it == j->iters;
      j->want_res = reduce;
      double res = one_sweep(c, j);
      if (reduce) {
        MPI_Allreduce(&res, &j->residual, 1, MPI_DOUBLE, MPI_SUM, j->cart);
        cs_phase(c, PH_REDUCE);
      }
    }
  return 0;
}

static void jac_prepare(cs_ctx *c, long sample) {
  (void)sample;
  initial_state(c->state);
}

/* Rank 0 gathers the grid and runs the same sweeps serially. */
static int jacobi_compare(const double *all, size_t nx, size_t ny, int iters, char *why,
                          size_t len);

static int jac_check(cs_ctx *c, long sample, char *why, size_t len) {
  (void)sample;
  jac *j = c->state;
  return cs_jacobi_check_grid(j->u, j->w, j->x0, j->lx, j->y0, j->ly, j->nx, j->ny, j->iters,
                              j->cart, why, len);
}

int cs_jacobi_check_grid(const double *u, size_t w, size_t x0, size_t lx, size_t y0, size_t ly,
                         size_t nx, size_t ny, int iters, MPI_Comm comm, char *why,
                         size_t len) {
  int rank, np;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &np);
  size_t gw = ny + 2;
  double *all = NULL, *blk = malloc((lx * ly + 1) * 8);
  int bad = !blk;
  for (size_t i = 0; i < lx && blk; i++)
    memcpy(blk + i * ly, u + (i + 1) * w + 1, ly * sizeof(double));
  long meta[4] = {(long)x0, (long)lx, (long)y0, (long)ly}, *metas = NULL;
  if (rank == 0) {
    all = calloc((nx + 2) * gw, sizeof(double));
    metas = calloc((size_t)np * 4, sizeof(long));
  }
  MPI_Gather(meta, 4, MPI_LONG, metas, 4, MPI_LONG, 0, comm);
  if (rank != 0) {
    MPI_Send(blk, (int)(lx * ly), MPI_DOUBLE, 0, TAG_H + 2, comm);
  } else {
    for (int r = 0; r < np; r++) {
      size_t rx0 = (size_t)metas[r * 4], rlx = (size_t)metas[r * 4 + 1];
      size_t ry0 = (size_t)metas[r * 4 + 2], rly = (size_t)metas[r * 4 + 3];
      double *part = r == 0 ? blk : malloc((rlx * rly + 1) * sizeof(double));
      if (r != 0)
        MPI_Recv(part, (int)(rlx * rly), MPI_DOUBLE, r, TAG_H + 2, comm, MPI_STATUS_IGNORE);
      for (size_t i = 0; i < rlx && all; i++)
        memcpy(all + (rx0 + i + 1) * gw + ry0 + 1, part + i * rly, rly * sizeof(double));
      if (r != 0) free(part);
    }
    bad = bad || !all || jacobi_compare(all, nx, ny, iters, why, len);
    if (!all) snprintf(why, len, "out of memory for the check");
  }
  free(all);
  free(blk);
  free(metas);
  return bad;
}

/* `all` ((nx + 2) x (ny + 2)) against `iters` serial sweeps from the
 * initial state, bit for bit; 1 with the first differing point. */
static int jacobi_compare(const double *all, size_t nx, size_t ny, int iters, char *why,
                          size_t len) {
  /* the serial reference: the whole grid as one block */
  size_t w = ny + 2;
  jac s = {0};
  s.nx = s.lx = nx;
  s.ny = s.ly = ny;
  s.w = w;
  double hx = 1.0 / (double)(nx + 1), hy = 1.0 / (double)(ny + 1);
  s.hx2 = hx * hx;
  s.hy2 = hy * hy;
  s.inv = 1.0 / (2.0 * (s.hx2 + s.hy2));
  s.src = 4.0 * s.hx2 * s.hy2;
  double *ref = calloc((nx + 2) * w, sizeof(double)), *tmp = calloc((nx + 2) * w, sizeof(double));
  int bad = !ref || !tmp;
  if (bad) snprintf(why, len, "out of memory for the check");
  if (!bad) {
    s.u = ref;
    s.un = tmp;
    set_boundary(&s, s.u);
    set_boundary(&s, s.un);
    for (int it = 0; it < iters; it++) {
      sweep(&s, 1, nx, 1, ny);
      double *t = s.u;
      s.u = s.un;
      s.un = t;
    }
    for (size_t i = 1; i <= nx && !bad; i++)
      for (size_t k = 1; k <= ny && !bad; k++)
        if (all[i * w + k] != s.u[i * w + k]) {
          snprintf(why, len, "point (%zu, %zu) after %d sweeps is %.17g, the serial sweeps "
                   "give %.17g (tolerance 0: the same expression per point)", i - 1, k - 1,
                   iters, all[i * w + k], s.u[i * w + k]);
          bad = 1;
        }
  }
  free(ref);
  free(tmp);
  return bad;
}

void cs_jacobi_phase_bytes(int np, int iters, int every, size_t lx, size_t ly,
                           const int nbr[4], double pack, double unpack, double *bytes) {
  double it = iters, x = (double)lx, y = (double)ly;
  int lr = (nbr[LEFT] != MPI_PROC_NULL) + (nbr[RIGHT] != MPI_PROC_NULL);
  int ud = (nbr[UP] != MPI_PROC_NULL) + (nbr[DOWN] != MPI_PROC_NULL);
  bytes[PH_PACK] = it * pack;
  bytes[PH_UNPACK] = it * unpack;
  bytes[PH_EXCHANGE] = it * 2.0 * 8.0 * (y * ud + x * lr);
  bytes[PH_COMPUTE] = it * 16.0 * x * y;
  long reductions = iters / every + (iters % every ? 1 : 0);
  bytes[PH_REDUCE] = np > 1 ? 16.0 * (double)reductions : 0;
}

/* The columns packed and unpacked (read + written) unless a datatype
 * sends them in place. */
static void jac_bytes(const cs_ctx *c, double *bytes) {
  const jac *j = c->state;
  int lr = (j->nbr[LEFT] != MPI_PROC_NULL) + (j->nbr[RIGHT] != MPI_PROC_NULL);
  double moved = j->datatype ? 0 : 16.0 * (double)j->lx * lr;
  cs_jacobi_phase_bytes(c->np, j->iters, j->every, j->lx, j->ly, j->nbr, moved, moved, bytes);
}

static void jac_corrupt(cs_ctx *c) { ((jac *)c->state)->spoil = 1; }

static const cs_param_def JAC_PARAMS[] = {
    {"N", "256", "grid points per side (scale=weak: per rank and side); a list is the sweep"},
    {"px", "0", "process rows (0: as square a grid as np allows)"},
    {"py", "0", "process columns (0: as square a grid as np allows; py=1: 1D row slabs)"},
    {"iters", "20", "Jacobi sweeps per sample"},
    {"reduce_every", "10", "sweeps between residual reductions (MPI_Allreduce)"},
    {"halo", "packed", "left/right columns packed into buffers, or sent as an MPI_Type_vector "
     "(datatype)"},
    {"mode", "blocking", "exchange, then compute (blocking), or compute the interior while "
     "the halos travel (overlap)"},
    {"scale", "strong", "strong: N is the global grid; weak: N per rank, the grid grows"},
    {NULL, NULL, NULL},
};
static const char *const JAC_PHASES[] = {"pack", "exchange", "unpack", "compute", "reduce",
                                         NULL};

const cs_bench cs_bench_jacobi = {
    .name = "jacobi", .group = "apps", .metric = "time per sample of iters sweeps",
    .desc = "Poisson by Jacobi on a 2D decomposition with halo exchange (packed or datatype, "
            "blocking or overlapped)",
    .min_np = 1, .ops_per_rep = 1, .timing = CS_TIME_MAX, .size_param = "N",
    .params = JAC_PARAMS, .phases = JAC_PHASES, .setup = jac_setup, .teardown = jac_teardown,
    .judge = jac_judge, .mem_bytes = jac_mem, .phase_bytes = jac_bytes,
    .corrupt = jac_corrupt, .corrupt_before = 1, .prepare = jac_prepare, .run = jac_run,
    .check = jac_check,
};

/* What applications need besides the timed loop: phases reduced across
 * ranks, arrival skew, their set-up and memory refusal, the copy their
 * memory-bound phases are held against. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"

/* Applications, untimed after each sample: for every phase, the most any
 * one rank waited for the last rank in, summed over its entries into the
 * phase (what a micro-benchmark's ranks, synchronised before every call,
 * never do).  The ranks must have entered the same phases in the same
 * order; otherwise NAN. */
void cs_arrival_skew(cs_ctx *c, int nph, double *sk) {
  long n = c->narrive, lo = 0, hi = 0;
  for (int k = 0; k < nph; k++) sk[k] = 0;
  MPI_Allreduce(&n, &lo, 1, MPI_LONG, MPI_MIN, c->comm);
  MPI_Allreduce(&n, &hi, 1, MPI_LONG, MPI_MAX, c->comm);
  double *last = malloc((size_t)(n ? n : 1) * sizeof *last);
  int ok = lo == hi && last, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, c->comm);
  if (all && n > 0) {
    /* each rank's wait for the last one in, summed over its entries into a
     * phase; the phase's figure is the most any one rank waited (summing
     * last minus first would count, where the ranks take turns arriving
     * first, waits that no single rank spends) */
    double mine[CS_MAX_PHASES] = {0};
    MPI_Allreduce(c->arrive, last, (int)n, MPI_DOUBLE, MPI_MAX, c->comm);
    for (long i = 0; i < n; i++) mine[c->arrive_k[i]] += last[i] - c->arrive[i];
    MPI_Allreduce(mine, sk, nph, MPI_DOUBLE, MPI_MAX, c->comm);
  } else if (!all) {
    for (int k = 0; k < nph; k++) sk[k] = NAN;
  }
  free(last);
}

/* Whether every rank reads one clock: one kernel (its boot id), as in a
 * local run or an emulated cluster; not across the hosts of a cluster. */
int cs_one_clock(MPI_Comm comm) {
  unsigned long h = 5381, lo = 0, hi = 0;
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  int ch;
  if (f) {
    while ((ch = fgetc(f)) != EOF) h = h * 33 + (unsigned long)ch;
    fclose(f);
  } else {
    h = 0;
  }
  MPI_Allreduce(&h, &lo, 1, MPI_UNSIGNED_LONG, MPI_MIN, comm);
  MPI_Allreduce(&h, &hi, 1, MPI_UNSIGNED_LONG, MPI_MAX, comm);
  return lo == hi && lo != 0;
}

/* Applications: each phase reduced across ranks two ways, untimed, once a
 * size is done: per sample the slowest rank's time (its median over
 * samples is the phase's headline, as a collective's is), and each rank's
 * own median (rank 0 gathers them: where the time goes rank by rank). */
void cs_reduce_phases(cs_ctx *c, sampler *sm, int nph, cs_result *r) {
  r->nphases = nph;
  r->phase_rank = NULL;
  if (nph == 0) return;
  long n = sm->nph / nph;
  double *mx = c->rank == 0 ? malloc((size_t)(sm->nph ? sm->nph : 1) * sizeof *mx) : NULL;
  double *col = malloc((size_t)(n ? n : 1) * sizeof *col);
  double mine[CS_MAX_PHASES];
  MPI_Reduce(sm->ph, mx, (int)sm->nph, MPI_DOUBLE, MPI_MAX, 0, c->comm);
  for (int k = 0; k < nph; k++) {
    for (long i = 0; i < n; i++) col[i] = sm->ph[i * nph + k];
    mine[k] = cs_median_of(col, n);
    if (c->rank == 0) {
      for (long i = 0; i < n; i++) col[i] = mx[i * nph + k];
      r->phase_max[k] = cs_median_of(col, n);
    }
  }
  if (c->rank == 0) r->phase_rank = malloc((size_t)c->np * (size_t)nph * sizeof(double));
  MPI_Gather(mine, nph, MPI_DOUBLE, r->phase_rank, nph, MPI_DOUBLE, 0, c->comm);
  for (int k = 0; k < nph; k++) r->phase_skew[k] = NAN;
  if (c->rank == 0 && sm->nsk >= n * nph && n > 0) {
    for (int k = 0; k < nph; k++) {
      int nan = 0;
      for (long i = 0; i < n; i++) nan |= isnan(col[i] = sm->sk[i * nph + k]);
      r->phase_skew[k] = nan ? NAN : cs_median_of(col, n);
    }
  }
  if (c->bench->phase_bytes) {
    double bytes[CS_MAX_PHASES] = {0};
    c->bench->phase_bytes(c, bytes);
    if (c->rank == 0) r->phase_bytes = malloc((size_t)c->np * (size_t)nph * sizeof(double));
    MPI_Gather(bytes, nph, MPI_DOUBLE, r->phase_bytes, nph, MPI_DOUBLE, 0, c->comm);
  }
  free(mx);
  free(col);
}

/* Every declared parameter with the value this run uses (the swept one
 * with this size's value). */
void cs_resolved_params(const cs_ctx *c, char *out, size_t len) {
  out[0] = 0;
  size_t used = 0;
  for (const cs_param_def *d = c->bench->params; d && d->name && used < len; d++) {
    char v[64];
    if (c->bench->size_param && !strcmp(d->name, c->bench->size_param))
      snprintf(v, sizeof v, "%zu", c->size);
    else
      cs_param(c, d->name, v, sizeof v);
    used += (size_t)snprintf(out + used, len - used, "%s%s=%s", used ? ";" : "", d->name, v);
  }
}

/* An application's size judged as before the launch (every rank judges
 * the same inputs), then its memory on this rank's node: the node's ranks'
 * bytes summed against what the node has available. */
static int app_refuse(const cs_bench *b, cs_ctx *c, MPI_Comm node, char *why, size_t len) {
  if (b->judge && b->judge(c, why, len)) return 1;
  if (!b->mem_bytes) return 0;
  double mine = b->mem_bytes(c, c->rank), here = 0;
  int nranks;
  MPI_Allreduce(&mine, &here, 1, MPI_DOUBLE, MPI_SUM, node);
  MPI_Comm_size(node, &nranks);
  return cs_mem_refuse(b, c, here, nranks, cs_mem_available(), why, len);
}

int cs_mem_refuse(const cs_bench *b, const cs_ctx *c, double need, int nranks, double have,
                  char *why, size_t len) {
  if (have <= 0 || need <= 0.8 * have) return 0;
  snprintf(why, len, "%s N=%zu: %d process(es) on one node need %.2f GiB, the node has %.2f "
           "GiB available (80%% may be used): refused", b->name, c->size, nranks,
           need / 1073741824.0, have / 1073741824.0);
  return 1;
}

/* An application's untimed set-up for one size; a refusal on any rank
 * (memory that will not fit, a grid that does not divide) is every rank's,
 * with the first refusing rank's reason. */
int cs_app_setup(const cs_bench *b, cs_ctx *c, MPI_Comm node, cs_err *e) {
  if (!b->setup) return CS_OK;
  char why[CS_ERRLEN / 2] = "";
  int bad = app_refuse(b, c, node, why, sizeof why) || b->setup(c, why, sizeof why);
  if (cs_first_failure(c->comm, bad, why, sizeof why) < 0) return CS_OK;
  return CS_FAIL(e, CS_EUSAGE, "%s", why);
}

/* The copy an application's memory-bound phase is held against: every
 * rank copies 64 MiB (twice the last-level cache of most nodes; memory,
 * not cache) at once with plain loads and stores, as a stencil does (no
 * non-temporal stores, so each line written is read first, as the
 * stencil's are).  Per rank, bytes read + written per ns, the median of 5;
 * the slowest rank's.  Untimed for the records: it runs before the first
 * size; not at all where a node has more ranks than cores. */
CS_PLAIN_LOOP static void plain_copy(double *restrict dst, const double *restrict src, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = src[i];
}

double cs_copy_bandwidth(const cs_ctx *c, MPI_Comm node, double *alone) {
  /* more ranks than cores on a node: a copy that shares a core says nothing */
  int here = 0, crowded = 0;
  MPI_Comm_size(node, &here);
  here = here > (int)sysconf(_SC_NPROCESSORS_ONLN);
  MPI_Allreduce(&here, &crowded, 1, MPI_INT, MPI_MAX, c->comm);
  *alone = NAN;
  if (crowded) return NAN;
  size_t n = (size_t)64 << 17; /* 64 MiB of doubles */
  double *a = cs_alloc(n * 8), *b = cs_alloc(n * 8), t[5], mine = NAN, worst = NAN;
  int ok = a && b, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, c->comm);
  if (all) {
    for (size_t i = 0; i < n; i++) a[i] = (double)i;
    memset(b, 0, n * 8);
    plain_copy(b, a, n); /* warm: pages mapped, TLB */
    for (int k = 0; k < 5; k++) {
      MPI_Barrier(c->comm);
      double t0 = cs_now_us();
      plain_copy(b, a, n);
      t[k] = cs_now_us() - t0;
    }
    mine = 16.0 * (double)n / (cs_median_of(t, 5) * 1e3);
    if (b[n - 1] != a[n - 1]) mine = NAN; /* the copy must have happened */
    MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MIN, c->comm);
    /* rank 0 alone, the others waiting: what a root's copies get */
    MPI_Barrier(c->comm);
    if (c->rank == 0) {
      for (int k = 0; k < 5; k++) {
        double t0 = cs_now_us();
        plain_copy(b, a, n);
        t[k] = cs_now_us() - t0;
      }
      *alone = 16.0 * (double)n / (cs_median_of(t, 5) * 1e3);
    }
    MPI_Barrier(c->comm);
  }
  free(a);
  free(b);
  return worst;
}

/* The harness: calibration, warm-up, the timed loop and its check points
 * (the stopping rule is stats.c's), untimed validation, noise and one
 * record per size.  Benchmarks only provide the kernel and their buffers'
 * content. */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "cache.h"
#include "cs.h"
#include "cs_gpu.h"

#define TAG_READY 901
#define TAG_WHY 902
#define MAX_REPS (1L << 24)

/* Untimed synchronisation around a validation run: before it, once the
 * buffers are prepared, and after it, once every rank has checked, so that
 * the next timed sample never starts while a partner is still checking.
 * Point-to-point partners hand rank 0 a zero-byte "ready"; collectives use
 * a barrier (every timed collective sample also ends with one). */
static void sync_ranks(const cs_bench *b, cs_ctx *c) {
  if (b->timing == CS_TIME_MAX) {
    MPI_Barrier(c->comm);
    return;
  }
  if (c->peer < 0) return;
  if (c->rank == 0)
    MPI_Recv(NULL, 0, MPI_BYTE, c->peer, TAG_READY, c->comm, MPI_STATUS_IGNORE);
  else
    MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_READY, c->comm);
}

static int root_of(const cs_ctx *c, long sample) {
  if (!c->opts->rotate_root) return (int)c->opts->root;
  return (int)(((sample % c->np) + c->np) % c->np);
}

typedef struct sampler {
  double *ph;          /* applications: this rank's phase times, nphases per sample */
  long nph, phcap;
  double *sk;          /* ... and each phase's arrival skew, nphases per sample */
  long nsk, skcap;
  double *x;
  double avg_sum;      /* sum of per-sample rank averages (collectives) */
  double *local;       /* collectives: this rank's times not yet reduced */
  long nlocal, lcap;
  long n, cap;
  int err;             /* this rank saw bad data */
  char why[CS_ERRLEN]; /* first failure on this rank */
} sampler;

/* Testing only: act out a fault on the last rank, outside the timed region.
 * corrupt@SIZE flips a byte of the first message's slot: with a window or
 * a loop, that message is not the last to land, so only a check of every
 * message catches it.  Faults act after the validation run's kernel, or
 * before it (`before`) for benchmarks that corrupt before the data moves;
 * gpufail@SIZE always before: the run's first device copy fails. */
static void act_out_fault(const cs_bench *b, cs_ctx *c, long sample, int before) {
  enum cs_fault kind;
  size_t at;
  if (!c->opts->inject[0] || c->rank != c->np - 1 || sample != 0) return;
  if (cs_inject_parse(c->opts->inject, &kind, &at) || at != c->size) return;
  if (kind == CS_FAULT_GPUFAIL) {
    if (before) cs_path_fail_next(c);
    return;
  }
  if (before != b->corrupt_before) return;
  if (kind == CS_FAULT_CORRUPT && c->pslots) return; /* cold: the pool's check is tested */
  if (kind == CS_FAULT_HANG)
    for (;;) pause();
  if (kind == CS_FAULT_CRASH) raise(SIGSEGV);
  if (kind == CS_FAULT_CORRUPT && b->corrupt)
    b->corrupt(c);
  else if (kind == CS_FAULT_CORRUPT && c->size > 0) {
    unsigned char *v = cs_buf_get(c, c->rbuf, c->size);
    v[c->size / 2] ^= 0x40;
    cs_buf_put(c, c->rbuf, v, c->size);
  }
}

/* Validation runs happen before timed samples 0, 1, 2, 4, 8, ...: enough
 * to catch a broken MPI at every size, while the timed samples run back to
 * back on untouched buffers, as a plain benchmark loop would. */
int cs_validated_sample(long sample) { return sample >= 0 && (sample & (sample - 1)) == 0; }

/* --buffers evicted, untimed before each sample (of one operation): every
 * rank reads and writes memory larger than the last-level cache, as an
 * application's compute sweep does between two exchanges, which leaves
 * the buffers and state other than the message data (code, TLB entries,
 * the library's data) out of cache; then the ranks meet, so that no rank's
 * stream is timed by another.  The barrier itself runs the library's
 * progress path to the same peers and warms part of that state again: the
 * figure is a lower bound of what an application's first call after its
 * sweep sees (it has no barrier there). */
static void evict(cs_ctx *c) {
  double *e = c->ebuf;
  size_t n = c->ebytes / sizeof *e;
  for (size_t i = 0; i < n; i++) e[i] += 1.0;
  MPI_Barrier(c->comm);
}

/* One timed sample of `reps` repetitions; the per-op time in us
 * (meaningful on rank 0 for pairs, on every rank for collectives). */
static double one_sample(const cs_bench *b, cs_ctx *c, long reps, double ops, long sample) {
  double dt = 0;
  if (c->ebuf) evict(c);
  c->root = root_of(c, sample);
  void *sbuf = c->sbuf, *rbuf = c->rbuf;
  if (c->pslots && c->active) { /* cold: this sample's slots follow the last one's */
    c->sbuf = c->psbuf;
    c->rbuf = c->prbuf;
    c->stride = c->pstride;
    c->nslots = c->pslots;
    c->slot0 = c->pmoved % c->pslots;
    c->pmoved += reps * (b->msgs_per_rep ? b->msgs_per_rep(c) : 1);
  }
  if (c->active) {
    if (b->phases) memset(c->phase_t, 0, sizeof c->phase_t); /* before the clock starts */
    double t0 = cs_now_us();
    c->phase_mark = t0;
    c->narrive = 0;
    int rc = b->run(c, reps);
    dt = cs_now_us() - t0;
    if (rc) { /* MPI errors abort by themselves; the channel's come back here */
      cs_abort("rank %d: %s failed in %s at %zu bytes: %s", c->rank, c->tp->name, b->name,
               c->size, cs_transport_strerror(rc));
    }
  }
  if (c->pslots && c->active) {
    c->sbuf = sbuf;
    c->rbuf = rbuf;
    c->stride = 0;
    c->nslots = 1;
    c->slot0 = 0;
  }
  /* Collectives: as OSU's loop does, the barrier follows the timed call,
   * so ranks enter it in the order they finished. */
  if (b->timing == CS_TIME_MAX) MPI_Barrier(c->comm);
  return dt / ((double)reps * ops);
}

/* Cold buffers.  The pools are sized once for the largest size: each holds
 * at least --cold-pool bytes (default twice the last-level cache) of slots
 * of the largest buffer.  At a size, slot k is filled by the benchmark's own
 * prepare as sample POOL_SAMPLE + k would be (each slot its own pattern);
 * after the size, its own check runs on every slot a timed message landed
 * in, so what the timed samples moved is what is checked. */
#define POOL_SAMPLE (1L << 40)

/* A buffer's bytes rounded up to whole cache lines: one slot. */
static size_t line_up(size_t n) { return (n + 63) / 64 * 64; }

static int cold(const cs_bench *b, const cs_opts *o) {
  return !strcmp(o->buffers, "cold") && cs_bench_buffered(b);
}

static int evicting(const cs_bench *b, const cs_opts *o) {
  return !strcmp(o->buffers, "evicted") && cs_bench_buffered(b);
}

static size_t pool_target(const cs_opts *o) {
  long llc = cs_llc_bytes();
  return o->cold_pool > 0 ? (size_t)o->cold_pool : (size_t)(llc > 0 ? 2 * llc : 64L << 20);
}

/* One rank's two pools for a benchmark whose largest buffer is c's (0: hot). */
double cs_cold_bytes(const cs_bench *b, const cs_ctx *c) {
  if (evicting(b, c->opts)) return (double)pool_target(c->opts);
  if (!cold(b, c->opts)) return 0;
  return 2.0 * (double)(pool_target(c->opts) + line_up(b->buf_bytes(c)));
}

static void pool_slot(cs_ctx *c, long k) {
  c->sbuf = (char *)c->psbuf + (size_t)k * c->pstride;
  c->rbuf = (char *)c->prbuf + (size_t)k * c->pstride;
}

static void pool_prepare(const cs_bench *b, cs_ctx *c) {
  size_t bytes = b->buf_bytes(c);
  c->pstride = line_up(bytes);
  if (c->pstride == 0) c->pstride = 64;
  size_t want = pool_target(c->opts);
  c->pslots = (long)((want + c->pstride - 1) / c->pstride);
  if ((size_t)c->pslots * c->pstride > c->pcap) c->pslots = (long)(c->pcap / c->pstride);
  c->pmoved = 0;
  if (!c->active) return;
  void *sbuf = c->sbuf, *rbuf = c->rbuf;
  c->root = root_of(c, 0);
  for (long k = 0; k < c->pslots; k++) {
    pool_slot(c, k);
    b->prepare(c, POOL_SAMPLE + k);
  }
  c->sbuf = sbuf;
  c->rbuf = rbuf;
}

/* Every slot a timed message landed in, checked; the testing fault
 * corrupt@SIZE spoils the middle one on the last rank. */
static void pool_check(const cs_bench *b, cs_ctx *c, sampler *sm, cs_result *r) {
  long used = c->pmoved < c->pslots ? c->pmoved : c->pslots;
  r->pool_bytes = (long)c->pcap;
  r->pool_slots = c->pslots;
  r->pool_checked = 0;
  r->llc_bytes = cs_llc_bytes();
  if (!c->active) return;
  void *sbuf = c->sbuf, *rbuf = c->rbuf;
  enum cs_fault kind;
  size_t at;
  if (c->opts->inject[0] && c->rank == c->np - 1 && used > 0 &&
      !cs_inject_parse(c->opts->inject, &kind, &at) && kind == CS_FAULT_CORRUPT &&
      at == c->size && c->size > 0) {
    unsigned char *v = (unsigned char *)c->prbuf + (size_t)(used / 2) * c->pstride;
    v[c->size / 2] ^= 0x40;
  }
  c->root = root_of(c, 0);
  for (long k = 0; k < used; k++) {
    char why[CS_ERRLEN / 2];
    pool_slot(c, k);
    if (!sm->err && b->check(c, POOL_SAMPLE + k, why, sizeof why)) {
      sm->err = 1;
      snprintf(sm->why, sizeof sm->why, "rank %d, %s size %zu, cold pool slot %ld of %ld: %s",
               c->rank, b->name, c->size, k, c->pslots, why);
      fprintf(stderr, "cs-core: VALIDATION FAILED: %s\n", sm->why);
    }
  }
  r->pool_checked = used;
  c->sbuf = sbuf;
  c->rbuf = rbuf;
  c->pslots = 0;
}

#define VALID_SLOT_BYTES ((size_t)32 << 20) /* per buffer */

/* The validation run's layout: every message of a window or loop in its
 * own slot.  Where a window or loop would need more than VALID_SLOT_BYTES
 * per buffer (64 x 1 MiB and up), the validation run moves fewer messages
 * (a shorter window or loop), so that still every message it moves has a
 * slot of its own and is checked. */
static int slots_for(const cs_bench *b, cs_ctx *c, long *nmsgs, long *reps) {
  *reps = b->valid_reps > 0 ? b->valid_reps : 1;
  long per = b->msgs_per_rep ? b->msgs_per_rep(c) : 1;
  *nmsgs = *reps * per;
  c->stride = 0;
  c->nslots = 1;
  if (*nmsgs <= 1 || c->size == 0) return CS_OK;
  size_t stride = line_up(c->size);
  long fit = (long)(VALID_SLOT_BYTES / stride);
  if (fit < 1) fit = 1;
  if (*nmsgs > fit) {
    if (*reps > 1) *reps = fit / per > 0 ? fit / per : 1; /* a shorter loop */
    *nmsgs = *reps * per;
    if (*nmsgs > fit) { /* and, for a window, a narrower one */
      c->vopts = *c->opts;
      c->vopts.window = fit < c->opts->window ? fit : c->opts->window;
      c->opts = &c->vopts;
      per = b->msgs_per_rep(c);
      *nmsgs = *reps * per;
    }
  }
  long n = *nmsgs;
  size_t need = (size_t)n * stride;
  if (need > c->vcap) {
    cs_buf_free(c, c->vsbuf);
    cs_buf_free(c, c->vrbuf);
    c->vsbuf = c->vrbuf = NULL;
    c->vcap = 0;
    if (cs_buf_pair(c, &c->vsbuf, &c->vrbuf, need)) return CS_ENOMEM;
    c->vcap = need;
  }
  c->stride = stride;
  c->nslots = n;
  return CS_OK;
}

/* An untimed run of the kernel that checks what it moved: prepare, sync,
 * run, check, and sync again before the next timed sample. */
static int validation_run(const cs_bench *b, cs_ctx *c, long sample, sampler *sm, long *checked) {
  long nmsgs = 0, reps = 1;
  void *sbuf = c->sbuf, *rbuf = c->rbuf;
  const cs_opts *opts = c->opts;
  int rc = CS_OK;
  if (c->active && (rc = slots_for(b, c, &nmsgs, &reps))) return rc;
  int slotted = c->active && c->stride;
  if (slotted) {
    c->sbuf = c->vsbuf;
    c->rbuf = c->vrbuf;
  }
  c->root = root_of(c, sample);
  if (c->active) b->prepare(c, sample);
  if (c->active) act_out_fault(b, c, sample, 1);
  sync_ranks(b, c);
  if (c->active) {
    int bad = b->run(c, reps);
    if (bad) {
      cs_abort("rank %d: %s failed in %s at %zu bytes (validation run): %s", c->rank,
               c->tp->name, b->name, c->size, cs_transport_strerror(bad));
    }
  }
  if (b->timing == CS_TIME_MAX) MPI_Barrier(c->comm);
  if (c->active) {
    act_out_fault(b, c, sample, 0);
    char why[CS_ERRLEN / 2];
    /* Every rank checks at every validation run, failed or not: a check
     * may be collective (jacobi gathers the grid to rank 0), and a rank
     * that skipped it after its first failure left the others waiting in
     * it (a hang, when the load let a second validation run in before the
     * check point).  The first failure is the one kept. */
    int bad = b->check(c, sample, why, sizeof why);
    if (bad && !sm->err) {
      sm->err = 1;
      snprintf(sm->why, sizeof sm->why, "rank %d, %s size %zu sample %ld: %s", c->rank, b->name,
               c->size, sample, why);
      fprintf(stderr, "cs-core: VALIDATION FAILED: %s\n", sm->why);
    }
    *checked += nmsgs;
  }
  sync_ranks(b, c);
  c->sbuf = sbuf;
  c->rbuf = rbuf;
  c->opts = opts;
  c->stride = 0;
  c->nslots = 1;
  return CS_OK;
}

/* Append v to a growing array of at most max values. */
static int append(double **x, long *n, long *cap, double v, long max) {
  if (*n == *cap) {
    long grow = *cap ? *cap * 2 : 1024;
    if (grow > max) grow = max;
    double *y = grow > *n ? realloc(*x, (size_t)grow * sizeof *y) : NULL;
    if (!y) return CS_ENOMEM;
    *x = y;
    *cap = grow;
  }
  (*x)[(*n)++] = v;
  return CS_OK;
}

/* Rank 0's samples (max over ranks, for collectives). */
static int push(sampler *sm, double v, long max) { return append(&sm->x, &sm->n, &sm->cap, v, max); }

/* Collectives: this rank's time for one sample, kept until a check point. */
static int keep_local(sampler *sm, double v) {
  return append(&sm->local, &sm->nlocal, &sm->lcap, v, 1L << 40);
}

/* Collectives: every rank keeps its own times; at a check point they are
 * reduced in one go (max over ranks per iteration, and the rank average),
 * never between two timed iterations. */
static int reduce_pending(const cs_bench *b, cs_ctx *c, sampler *sm, long max) {
  if (b->timing != CS_TIME_MAX || sm->nlocal == 0) return CS_OK;
  long k = sm->nlocal;
  double *worst = c->rank == 0 ? malloc((size_t)k * sizeof *worst) : NULL;
  double *sum = c->rank == 0 ? malloc((size_t)k * sizeof *sum) : NULL;
  if (c->rank == 0 && (!worst || !sum)) {
    free(worst);
    free(sum);
    return CS_ENOMEM;
  }
  MPI_Reduce(sm->local, worst, (int)k, MPI_DOUBLE, MPI_MAX, 0, c->comm);
  MPI_Reduce(sm->local, sum, (int)k, MPI_DOUBLE, MPI_SUM, 0, c->comm);
  sm->nlocal = 0;
  int rc = CS_OK;
  if (c->rank == 0) {
    for (long i = 0; i < k && rc == CS_OK; i++) {
      rc = push(sm, worst[i], max);
      sm->avg_sum += sum[i] / c->np;
    }
  }
  free(worst);
  free(sum);
  return rc;
}

/* Rank 0 grows the batch until two samples in a row last at least
 * target_us: a slow first iteration (page faults, connection set-up)
 * cannot end calibration early.  Those two samples run at the final batch
 * and count as warm-up; *t_us is the last one's length (rank 0). */
static long calibrate(const cs_bench *b, cs_ctx *c, double ops, double target_us, double *t_us) {
  long reps = 1, sample = -1;
  int confirmed = 0;
  for (;;) {
    double per_op = one_sample(b, c, reps, ops, sample);
    sample--;
    long next = 0; /* 0: done */
    if (c->rank == 0) {
      double dt = per_op * (double)reps * ops;
      *t_us = dt;
      if (dt >= target_us || reps >= MAX_REPS) {
        next = confirmed ? 0 : reps;
        confirmed = !confirmed;
      } else {
        confirmed = 0;
        double grow = dt > 0 ? 1.2 * target_us / dt : 1000;
        if (grow < 2) grow = 2;
        if (grow > 1000) grow = 1000;
        next = (long)((double)reps * grow);
        if (next > MAX_REPS) next = MAX_REPS;
      }
    }
    MPI_Bcast(&next, 1, MPI_LONG, 0, c->comm);
    if (next == 0) break;
    reps = next;
  }
  return reps;
}

/* Warm-up: at least --warmup samples and --warmup-time seconds at the
 * final batch, `done` of them (calibration's last two) already run.  Rank
 * 0 tells everyone how many follow. */
static void warm_up(const cs_bench *b, cs_ctx *c, long reps, double ops, long done,
                    double t_us) {
  const cs_opts *o = c->opts;
  if (done == 0) { /* no calibration: time one sample first */
    double per_op = one_sample(b, c, reps, ops, -1000);
    t_us = per_op * (double)reps * ops;
    done = 1;
  }
  long n = o->warmup - done;
  if (c->rank == 0 && !c->ebuf) { /* evicted: by count (each sample streams the LLC twice) */
    double by_time = t_us > 0 ? o->warmup_s * 1e6 / t_us - (double)done : 0;
    if (by_time > (double)n) n = (long)by_time;
    if (n > 1000000) n = 1000000;
  }
  MPI_Bcast(&n, 1, MPI_LONG, 0, c->comm);
  for (long w = 0; w < n; w++) one_sample(b, c, reps, ops, -1001 - w);
}

/* Rank 0 learns the first failing rank's reason (untimed). */
static void gather_why(cs_ctx *c, sampler *sm, char *why, size_t len) {
  int me = sm->err ? c->rank : c->np, first = c->np;
  MPI_Allreduce(&me, &first, 1, MPI_INT, MPI_MIN, c->comm);
  if (first == 0) {
    if (c->rank == 0) snprintf(why, len, "%s", sm->why);
  } else if (c->rank == first) {
    MPI_Send(sm->why, CS_ERRLEN, MPI_CHAR, 0, TAG_WHY, c->comm);
  } else if (c->rank == 0) {
    char buf[CS_ERRLEN];
    MPI_Recv(buf, CS_ERRLEN, MPI_CHAR, first, TAG_WHY, c->comm, MPI_STATUS_IGNORE);
    buf[CS_ERRLEN - 1] = 0;
    snprintf(why, len, "%s", buf);
  }
}

/* What the clock can resolve of one op's time in a sample of `reps`
 * repetitions: one step, shared by reps x ops operations. */
static double clock_resolution_us(const cs_ctx *c, long reps, double ops) {
  return c->clock->quantum_ns * 1e-3 / ((double)reps * ops);
}

/* No CI narrower than what the clock resolves. */
static void widen_to_clock(cs_stats *st, double res_us) {
  if (st->n <= 0) return;
  if (st->ci_lo > st->median - res_us) st->ci_lo = st->median - res_us;
  if (st->ci_hi < st->median + res_us) st->ci_hi = st->median + res_us;
}

static double median_of(double *x, long n) {
  if (n <= 0) return NAN;
  cs_sort(x, n);
  return cs_quantile_sorted(x, n, 0.5);
}

/* Applications, untimed after each sample: for every phase, the most any
 * one rank waited for the last rank in, summed over its entries into the
 * phase (what a micro-benchmark's ranks, synchronised before every call,
 * never do).  The ranks must have entered the same phases in the same
 * order; otherwise NAN. */
static void arrival_skew(cs_ctx *c, int nph, double *sk) {
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
static int one_clock(MPI_Comm comm) {
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
static void reduce_phases(cs_ctx *c, sampler *sm, int nph, cs_result *r) {
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
    mine[k] = median_of(col, n);
    if (c->rank == 0) {
      for (long i = 0; i < n; i++) col[i] = mx[i * nph + k];
      r->phase_max[k] = median_of(col, n);
    }
  }
  if (c->rank == 0) r->phase_rank = malloc((size_t)c->np * (size_t)nph * sizeof(double));
  MPI_Gather(mine, nph, MPI_DOUBLE, r->phase_rank, nph, MPI_DOUBLE, 0, c->comm);
  for (int k = 0; k < nph; k++) r->phase_skew[k] = NAN;
  if (c->rank == 0 && sm->nsk >= n * nph && n > 0) {
    for (int k = 0; k < nph; k++) {
      int nan = 0;
      for (long i = 0; i < n; i++) nan |= isnan(col[i] = sm->sk[i * nph + k]);
      r->phase_skew[k] = nan ? NAN : median_of(col, n);
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

/* Every sample is bounded by time: a window of 64 x 4 MiB takes 20 ms
 * through shared memory but 21 s over 100 Mbit/s.  A window's width at a
 * size comes from a message measured at that size (one, timed, kept out of
 * the record): never from another size's time scaled by the bytes, which
 * overestimated 1 MiB from 8 B by orders of magnitude (windows of 5 and 6
 * where 64 fit) and, with no previous size, narrowed nothing (64 x 4 MiB
 * per sample over 100 Mbit/s).  Where one window would not let --time-cap
 * hold CS_MIN_SAMPLES_UNDER_CAP samples, this size runs a narrower window, and
 * its record says which.  Rank 0 decides. */
static long fitting_window(const cs_bench *b, cs_ctx *c) {
  long w = c->opts->window;
  if (!b->ops_per_rep_window || w <= 1) return w;
  cs_opts one = *c->opts;
  const cs_opts *full = c->opts;
  one.window = 1;
  c->opts = &one;
  double budget = full->time_cap_s * 1e6 / CS_MIN_SAMPLES_UNDER_CAP;
  double op_us = one_sample(b, c, 1, 1.0, -1);
  /* the first message of a size may set up a connection (TCP's are made on
   * first use: 7 ms where a 4 KiB message takes 50 us), and on a busy
   * machine a message may wait for a descheduled rank (a 4 KiB window
   * narrowed from 64 to 4 beside two busy cores): where it would narrow the
   * window, up to three more messages decide, the fastest counting */
  for (int tries = 0; tries < 3; tries++) {
    int again = c->rank == 0 && cs_fit_window(w, op_us, budget) < w;
    MPI_Bcast(&again, 1, MPI_INT, 0, c->comm);
    if (!again) break;
    double next = one_sample(b, c, 1, 1.0, -1);
    if (next < op_us) op_us = next;
  }
  c->opts = full;
  if (c->rank == 0) w = cs_fit_window(w, op_us, budget);
  MPI_Bcast(&w, 1, MPI_LONG, 0, c->comm);
  return w;
}

static int measure_size(const cs_bench *b, cs_ctx *c, MPI_Comm machine, cs_result *r, cs_err *e) {
  const cs_opts *o = c->opts;
  if (c->pcap) pool_prepare(b, c);
  long window = fitting_window(b, c);
  if (window != o->window) {
    c->wopts = *o;
    c->wopts.window = window;
    c->opts = &c->wopts;
  }
  r->window = b->ops_per_rep_window ? window : 0;
  int nph = cs_nphases(b);
  double ops = b->ops_per_rep_window ? (double)window : b->ops_per_rep;
  sampler sm = {0};
  double t_size0 = cs_now_us();

  /* Automatic batching is for kernels whose repetitions depend on each
   * other (a ping-pong, a window closed by an acknowledgement).  Back-to-
   * back collectives would overlap (a root's eager bcasts pipeline: half
   * the time of one), so a collective is timed one call at a time between
   * barriers, as OSU does, and the clock's cost is stated, not hidden. */
  double target_us = o->sample_us >= 0 ? o->sample_us
                     : (b->timing == CS_TIME_MAX ? 0 : cs_auto_sample_us(c->clock));
  if (target_us < b->min_sample_us) target_us = b->min_sample_us;
  if (c->ebuf) target_us = 0; /* evicted: one operation a sample, each after its stream */
  double t_us = 0;
  long reps = target_us > 0 ? calibrate(b, c, ops, target_us, &t_us) : 1;
  warm_up(b, c, reps, ops, target_us > 0 ? 2 : 0, t_us);
  double res_us = clock_resolution_us(c, reps, ops);
  r->floor_ns = cs_floor_measure(c->floor);
  r->validations = r->checked_msgs = 0;

  cs_noise_mark m0, m1;
  int leader;
  MPI_Comm_rank(machine, &leader);
  leader = leader == 0;
  cs_noise_mark_now(&m0, leader);
  double t0 = cs_now_us();
  long next_check = cs_first_check(o);
  const char *stop = "max_samples";
  int converged = 0;
  double *scratch = NULL;
  int coll = b->timing == CS_TIME_MAX;
  if (coll) MPI_Barrier(c->comm); /* the first sample starts in step too */
  double t_check_us = 0; /* rank 0's time in validation runs */
  for (long s = 0;; s++) {
    int rc = CS_OK;
    /* Every size is validated before its first sample; later validation
     * runs only while they cost under a quarter of the sampling time (at
     * 4 MiB one run fills and checks 256 MiB).  Rank 0 decides, so every
     * rank takes part in the same runs. */
    int check = s == 0;
    if (!check && cs_validated_sample(s)) {
      check = c->rank == 0 && t_check_us < 0.25 * (cs_now_us() - t0 - t_check_us);
      MPI_Bcast(&check, 1, MPI_INT, 0, c->comm);
    }
    if (check) {
      double tv = cs_now_us();
      rc = validation_run(b, c, s, &sm, &r->checked_msgs);
      r->validations++;
      t_check_us += cs_now_us() - tv;
    }
    double v = one_sample(b, c, reps, ops, s);
    long taken = s + 1;
    for (int k = 0; k < nph && rc == CS_OK; k++)
      rc = append(&sm.ph, &sm.nph, &sm.phcap, c->phase_t[k], 1L << 40);
    if (c->arrive_cap) {
      double sk[CS_MAX_PHASES];
      arrival_skew(c, nph, sk);
      for (int k = 0; k < nph && rc == CS_OK; k++)
        rc = append(&sm.sk, &sm.nsk, &sm.skcap, sk[k], 1L << 40);
    }
    if (rc == CS_OK)
      rc = coll ? keep_local(&sm, v) : (c->rank == 0 ? push(&sm, v, o->max_samples) : CS_OK);
    if (rc == CS_OK && (taken >= next_check || taken >= o->max_samples))
      rc = reduce_pending(b, c, &sm, o->max_samples);
    if (rc) {
      free(sm.x);
      free(sm.local);
      free(sm.ph);
      free(sm.sk);
      free(scratch);
      return CS_FAIL(e, CS_ENOMEM, "out of memory for %ld samples", taken);
    }
    if (taken < next_check && taken < o->max_samples) continue;
    /* Check point: rank 0 decides, every rank reports bad data. */
    long local[3] = {sm.err, 0, 0}, all[3];
    if (c->rank == 0) {
      cs_stats st;
      double *sc = realloc(scratch, (size_t)sm.n * sizeof *sc);
      if (sc) scratch = sc;
      if (sc) cs_stats_compute(sm.x, sm.n, scratch, &st);
      if (sc) widen_to_clock(&st, res_us);
      long step;
      const char *why = cs_stop_rule(o, sm.n, (cs_now_us() - t0) * 1e-6, sc ? &st : NULL, &step);
      if (why) {
        local[1] = 1;
        stop = why;
        converged = !strcmp(why, "ci");
      }
      local[2] = coll && step > 65536 ? 65536 : step; /* bounds the pending buffers */
    }
    MPI_Allreduce(local, all, 3, MPI_LONG, MPI_MAX, c->comm);
    if (all[0]) {
      stop = "invalid";
      break;
    }
    if (all[1]) break;
    next_check = taken + all[2];
  }
  double wall_s = (cs_now_us() - t0) * 1e-6;
  cs_noise_mark_now(&m1, leader);
  cs_noise_finish(&m0, &m1, machine, c->comm, wall_s, &r->noise);

  if (c->pcap) pool_check(b, c, &sm, r);
  if (c->ebuf) {
    r->evicted_bytes = (long)c->ebytes;
    r->llc_bytes = cs_llc_bytes();
  }
  int any_err = 0;
  MPI_Allreduce(&sm.err, &any_err, 1, MPI_INT, MPI_MAX, c->comm);
  r->valid = !any_err;
  r->why[0] = 0;
  if (any_err) gather_why(c, &sm, r->why, sizeof r->why);
  if (c->rank == 0) {
    double *sc = realloc(scratch, (size_t)(sm.n ? sm.n : 1) * sizeof *sc);
    if (sc) scratch = sc;
    if (sc) cs_stats_compute(sm.x, sm.n, scratch, &r->st);
    if (sc) widen_to_clock(&r->st, res_us);
  }
  free(scratch);
  r->resolution_us = res_us;
  c->opts = o;
  r->bench = b;
  r->size = c->size;
  r->root = b->rooted && !o->rotate_root ? (int)o->root : -1;
  r->mean_rank_avg = b->timing == CS_TIME_MAX && sm.n ? sm.avg_sum / (double)sm.n : NAN;
  r->np = c->np;
  r->batch = reps;
  r->ops_per_rep = ops;
  free(sm.local);
  reduce_phases(c, &sm, nph, r);
  free(sm.ph);
  free(sm.sk);
  r->raw = sm.x; /* caller frees */
  r->nraw = sm.n;
  r->converged = converged;
  r->stop = stop;
  r->elapsed_s = (cs_now_us() - t_size0) * 1e-6;
  return CS_OK;
}

/* Every declared parameter with the value this run uses (the swept one
 * with this size's value). */
static void resolved_params(const cs_ctx *c, char *out, size_t len) {
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
static int app_setup(const cs_bench *b, cs_ctx *c, MPI_Comm node, cs_err *e) {
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

static double copy_bandwidth(const cs_ctx *c, MPI_Comm node, double *alone) {
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
    mine = 16.0 * (double)n / (median_of(t, 5) * 1e3);
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
      *alone = 16.0 * (double)n / (median_of(t, 5) * 1e3);
    }
    MPI_Barrier(c->comm);
  }
  free(a);
  free(b);
  return worst;
}

int cs_run_bench(const cs_bench *b, const cs_opts *o, MPI_Comm world, const cs_env *env,
                 FILE *out, int *ninvalid, int *nresults, cs_err *e) {
  cs_chan *chan = env->chan;
  size_t sizes[CS_MAX_SIZES];
  int nsizes, rc;
  rc = b->size_param ? cs_param_sizes(o->param, b, sizes, CS_MAX_SIZES, &nsizes, e)
                     : cs_sizes_expand(o, sizes, CS_MAX_SIZES, &nsizes, e);
  if (rc) return rc;

  cs_ctx c = {0};
  c.comm = world;
  c.opts = o;
  MPI_Comm_rank(world, &c.rank);
  MPI_Comm_size(world, &c.np);
  if ((rc = cs_bench_np_check(b, c.np, e))) return rc;
  c.chan = chan;
  c.clock = env->clock;
  c.floor = env->floor;
  c.bench = b;
  c.nslots = 1;
  c.tp = chan ? &cs_transport_chan : (env->path ? env->path->tp : &cs_transport_mpi);
  c.path = env->path ? env->path->path : NULL;
  if (chan && !b->any_transport)
    return CS_FAIL(e, CS_EUSAGE, "benchmark %s runs over MPI only, not --transport %s", b->name,
                   o->transport);
  if (b->rooted && o->root >= c.np)
    return CS_FAIL(e, CS_EUSAGE, "root %ld is outside the communicator of %d processes", o->root,
                   c.np);
  if (b->sizeless) {
    sizes[0] = 0;
    nsizes = 1;
  }
  /* Point-to-point pairs rank 0 with the last rank (the UMBC report's choice:
   * with several ranks per node they sit on different nodes). */
  c.peer = c.rank == 0 ? c.np - 1 : (c.rank == c.np - 1 ? 0 : -1);
  c.active = b->timing == CS_TIME_MAX || c.peer >= 0;
  c.size = sizes[nsizes - 1];
  if (b->size_fix) c.size = b->size_fix(&c, c.size);
  c.buf_bytes = b->buf_bytes ? b->buf_bytes(&c) : 64;
  int bufs = cs_buf_pair(&c, &c.sbuf, &c.rbuf, c.buf_bytes);
  if (!bufs && cold(b, o)) { /* room for the target in slots of the largest buffer */
    c.pcap = pool_target(o) + line_up(c.buf_bytes);
    bufs = cs_buf_pair(&c, &c.psbuf, &c.prbuf, c.pcap);
    if (bufs) c.pcap = 0;
  }
  if (!bufs && evicting(b, o)) {
    c.ebytes = pool_target(o);
    double have = cs_mem_available(); /* a stream past memory is refused, not OOM-killed */
    c.ebuf = have > 0 && (double)c.ebytes > 0.8 * have ? NULL : malloc(c.ebytes);
    if (c.ebuf) memset(c.ebuf, 0, c.ebytes); /* its pages mapped before any timing */
    int ok = c.ebuf != NULL, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, world);
    if (!all) bufs = CS_ENOMEM;
  }
  size_t nreq = cs_nreq(o, c.np);
  c.reqs = calloc(nreq, sizeof *c.reqs);
  c.stats = calloc(nreq, sizeof *c.stats);
  c.creqs = calloc(nreq, sizeof *c.creqs);
  if (bufs || !c.reqs || !c.stats || !c.creqs) {
    free(c.creqs);
    free(c.stats);
    free(c.ebuf);
    cs_buf_free(&c, c.sbuf);
    cs_buf_free(&c, c.rbuf);
    free(c.view);
    free(c.reqs);
    if (bufs && evicting(b, o) && c.ebytes)
      return CS_FAIL(e, CS_ENOMEM, "cannot allocate %zu bytes to stream before each operation "
                     "(--buffers evicted; the last-level cache is %ld bytes)", c.ebytes,
                     cs_llc_bytes());
    if (bufs && cold(b, o))
      return CS_FAIL(e, CS_ENOMEM, "cannot allocate two cold pools of %zu bytes (--buffers "
                     "cold: twice the last-level cache, %ld bytes, beside the largest buffer)",
                     pool_target(o) + line_up(c.buf_bytes), cs_llc_bytes());
    return CS_FAIL(e, CS_ENOMEM, "cannot allocate %zu-byte buffers%s%s", c.buf_bytes,
                   c.path ? " on the GPU path: " : "", c.path ? cs_gpu_error() : "");
  }
  MPI_Comm node = MPI_COMM_NULL;
  double copy_gbs = NAN, copy1_gbs = NAN;
  if (b->phases && one_clock(world)) { /* arrival skew: every rank on one clock */
    c.arrive_cap = 1L << 16;
    c.arrive = malloc((size_t)c.arrive_cap * sizeof *c.arrive);
    c.arrive_k = malloc((size_t)c.arrive_cap * sizeof *c.arrive_k);
    int ok = c.arrive && c.arrive_k, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, world);
    if (!all) c.arrive_cap = 0; /* every rank alike: the skew is a collective step */
  }
  if (b->setup) {
    MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    copy_gbs = copy_bandwidth(&c, node, &copy1_gbs);
  }
  for (int i = 0; i < nsizes && rc == CS_OK; i++) {
    cs_result r = {0};
    c.size = b->size_fix ? b->size_fix(&c, sizes[i]) : sizes[i];
    if (b->size_fix && (c.size == 0 || (i > 0 && c.size == b->size_fix(&c, sizes[i - 1]))))
      continue; /* e.g. 1 or 2 bytes of ints */
    resolved_params(&c, r.params, sizeof r.params);
    r.copy_gbs = copy_gbs;
    r.copy1_gbs = copy1_gbs;
    rc = app_setup(b, &c, node, e);
    if (rc == CS_OK) rc = measure_size(b, &c, env->machine, &r, e);
    if (b->teardown) b->teardown(&c);
    if (rc == CS_OK && c.rank == 0) {
      cs_write_result(out, &r, o->raw);
      if (o->table) cs_table_row(stdout, &r);
      (*nresults)++;
      if (!r.valid) (*ninvalid)++;
    }
    free((void *)r.raw);
    free(r.phase_rank);
    free(r.phase_bytes);
  }
  if (node != MPI_COMM_NULL) MPI_Comm_free(&node);
  cs_buf_free(&c, c.sbuf);
  cs_buf_free(&c, c.rbuf);
  cs_buf_free(&c, c.vsbuf);
  cs_buf_free(&c, c.vrbuf);
  cs_buf_free(&c, c.psbuf);
  cs_buf_free(&c, c.prbuf);
  free(c.ebuf);
  free(c.arrive);
  free(c.arrive_k);
  free(c.view);
  free(c.reqs);
  free(c.stats);
  free(c.creqs);
  return rc;
}

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
#include "app.h"
#include "pools.h"
#include "sampler.h"
#include "validate.h"
#include "cs_gpu.h"

#define MAX_REPS (1L << 24)

/* One timed sample of `reps` repetitions; the per-op time in us
 * (meaningful on rank 0 for pairs, on every rank for collectives). */
static double one_sample(const cs_bench *b, cs_ctx *c, long reps, double ops, long sample) {
  double dt = 0;
  if (c->ebuf) cs_evict(c);
  c->root = cs_root_of(c, sample);
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

/* A size's plan, fixed before its timed samples. */
typedef struct size_plan {
  long reps;      /* repetitions a sample (the calibrated batch) */
  double ops;     /* operations a repetition (a window's messages) */
  double res_us;  /* what the clock resolves of one operation */
  int nph;        /* an application's phases */
  double t0_us;   /* when the size's own time starts */
} size_plan;

/* A size's set-up, untimed: the cold pool filled, the window fitted, the
 * batch calibrated, the warm-up run, the floor read. */
static size_plan size_begin(const cs_bench *b, cs_ctx *c, cs_result *r) {
  const cs_opts *o = c->opts;
  if (c->pcap) cs_pool_prepare(b, c);
  long window = fitting_window(b, c);
  if (window != o->window) {
    c->wopts = *o;
    c->wopts.window = window;
    c->opts = &c->wopts;
  }
  r->window = b->ops_per_rep_window ? window : 0;
  size_plan p = {1, b->ops_per_rep_window ? (double)window : b->ops_per_rep, 0, cs_nphases(b),
                 cs_now_us()};

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
  p.reps = target_us > 0 ? calibrate(b, c, p.ops, target_us, &t_us) : 1;
  warm_up(b, c, p.reps, p.ops, target_us > 0 ? 2 : 0, t_us);
  p.res_us = clock_resolution_us(c, p.reps, p.ops);
  r->floor_ns = cs_floor_measure(c->floor);
  r->validations = r->checked_msgs = 0;
  return p;
}

/* Sample s: the validation run before it where one is due, the timed
 * sample, and what an application records beside it.  Every size is
 * validated before its first sample; later validation runs only while they
 * cost under a quarter of the sampling time (at 4 MiB one run fills and
 * checks 256 MiB).  Rank 0 decides, so every rank takes part in the same
 * runs. */
static int take_sample(const cs_bench *b, cs_ctx *c, const size_plan *p, sampler *sm,
                       cs_result *r, long s, double t0, double *t_check_us) {
  int rc = CS_OK;
  int check = s == 0;
  if (!check && cs_validated_sample(s)) {
    check = c->rank == 0 && *t_check_us < 0.25 * (cs_now_us() - t0 - *t_check_us);
    MPI_Bcast(&check, 1, MPI_INT, 0, c->comm);
  }
  if (check) {
    double tv = cs_now_us();
    rc = cs_validation_run(b, c, s, sm, &r->checked_msgs);
    r->validations++;
    *t_check_us += cs_now_us() - tv;
  }
  double v = one_sample(b, c, p->reps, p->ops, s);
  for (int k = 0; k < p->nph && rc == CS_OK; k++)
    rc = cs_append(&sm->ph, &sm->nph, &sm->phcap, c->phase_t[k], 1L << 40);
  if (c->arrive_cap) {
    double sk[CS_MAX_PHASES];
    cs_arrival_skew(c, p->nph, sk);
    for (int k = 0; k < p->nph && rc == CS_OK; k++)
      rc = cs_append(&sm->sk, &sm->nsk, &sm->skcap, sk[k], 1L << 40);
  }
  if (rc == CS_OK)
    rc = b->timing == CS_TIME_MAX ? cs_keep_local(sm, v)
                                  : (c->rank == 0 ? cs_push(sm, v, c->opts->max_samples) : CS_OK);
  return rc;
}

/* A check point: rank 0 judges the samples so far by the stopping rule
 * (stats.c), every rank reports bad data.  1 where the size is done (*stop
 * says why); else *step more samples come before the next. */
static int check_point(const cs_opts *o, cs_ctx *c, sampler *sm, const size_plan *p, double t0,
                       double **scratch, const char **stop, int *converged, long *step) {
  long local[3] = {sm->err, 0, 0}, all[3];
  if (c->rank == 0) {
    cs_stats st;
    double *sc = realloc(*scratch, (size_t)sm->n * sizeof *sc);
    if (sc) *scratch = sc;
    if (sc) cs_stats_compute(sm->x, sm->n, sc, &st);
    if (sc) widen_to_clock(&st, p->res_us);
    long next;
    const char *why = cs_stop_rule(o, sm->n, (cs_now_us() - t0) * 1e-6, sc ? &st : NULL, &next);
    if (why) {
      local[1] = 1;
      *stop = why;
      *converged = !strcmp(why, "ci");
    }
    /* bounds the pending buffers */
    local[2] = c->bench->timing == CS_TIME_MAX && next > 65536 ? 65536 : next;
  }
  MPI_Allreduce(local, all, 3, MPI_LONG, MPI_MAX, c->comm);
  if (all[0]) {
    *stop = "invalid";
    return 1;
  }
  *step = all[2];
  return all[1] != 0;
}

/* The timed samples until a check point says the size is done. */
static int sample_loop(const cs_bench *b, const cs_opts *o, cs_ctx *c, const size_plan *p,
                       sampler *sm, cs_result *r, double t0, double **scratch, cs_err *e) {
  long next_check = cs_first_check(o);
  double t_check_us = 0; /* rank 0's time in validation runs */
  r->stop = "max_samples";
  r->converged = 0;
  if (b->timing == CS_TIME_MAX) MPI_Barrier(c->comm); /* the first sample starts in step too */
  for (long s = 0;; s++) {
    int rc = take_sample(b, c, p, sm, r, s, t0, &t_check_us);
    long taken = s + 1, step = 0;
    if (rc == CS_OK && (taken >= next_check || taken >= o->max_samples))
      rc = cs_reduce_pending(b, c, sm, o->max_samples);
    if (rc) return CS_FAIL(e, CS_ENOMEM, "out of memory for %ld samples", taken);
    if (taken < next_check && taken < o->max_samples) continue;
    if (check_point(o, c, sm, p, t0, scratch, &r->stop, &r->converged, &step)) break;
    next_check = taken + step;
  }
  return CS_OK;
}

/* After the last sample, untimed: the pool's check, validity across ranks
 * (with the first failing rank's reason), the statistics, the record. */
static void size_end(const cs_bench *b, const cs_opts *o, cs_ctx *c, const size_plan *p,
                     sampler *sm, cs_result *r, double *scratch) {
  if (c->pcap) cs_pool_check(b, c, sm, r);
  if (c->ebuf) {
    r->evicted_bytes = (long)c->ebytes;
    r->llc_bytes = cs_llc_bytes();
  }
  int any_err = 0;
  MPI_Allreduce(&sm->err, &any_err, 1, MPI_INT, MPI_MAX, c->comm);
  r->valid = !any_err;
  r->why[0] = 0;
  if (any_err) cs_gather_why(c, sm, r->why, sizeof r->why);
  if (c->rank == 0) {
    double *sc = realloc(scratch, (size_t)(sm->n ? sm->n : 1) * sizeof *sc);
    if (sc) scratch = sc;
    if (sc) cs_stats_compute(sm->x, sm->n, scratch, &r->st);
    if (sc) widen_to_clock(&r->st, p->res_us);
  }
  free(scratch);
  r->resolution_us = p->res_us;
  c->opts = o;
  r->bench = b;
  r->size = c->size;
  r->root = b->rooted && !o->rotate_root ? (int)o->root : -1;
  r->mean_rank_avg = b->timing == CS_TIME_MAX && sm->n ? sm->avg_sum / (double)sm->n : NAN;
  r->np = c->np;
  r->batch = p->reps;
  r->ops_per_rep = p->ops;
  free(sm->local);
  cs_reduce_phases(c, sm, p->nph, r);
  free(sm->ph);
  free(sm->sk);
  r->raw = sm->x; /* caller frees */
  r->nraw = sm->n;
  r->elapsed_s = (cs_now_us() - p->t0_us) * 1e-6;
}

/* One size: set up, sampled under the noise marks, recorded. */
static int measure_size(const cs_bench *b, cs_ctx *c, MPI_Comm machine, cs_result *r, cs_err *e) {
  const cs_opts *o = c->opts;
  size_plan p = size_begin(b, c, r);
  sampler sm = {0};
  double *scratch = NULL;
  cs_noise_mark m0, m1;
  int leader;
  MPI_Comm_rank(machine, &leader);
  leader = leader == 0;
  cs_noise_mark_now(&m0, leader);
  double t0 = cs_now_us();
  int rc = sample_loop(b, o, c, &p, &sm, r, t0, &scratch, e);
  if (rc) {
    free(sm.x);
    free(sm.local);
    free(sm.ph);
    free(sm.sk);
    free(scratch);
    return rc;
  }
  double wall_s = (cs_now_us() - t0) * 1e-6;
  cs_noise_mark_now(&m1, leader);
  cs_noise_finish(&m0, &m1, machine, c->comm, wall_s, &r->noise);
  size_end(b, o, c, &p, &sm, r, scratch);
  return CS_OK;
}

/* Everything a context holds, freed (NULLs included). */
static void ctx_close(cs_ctx *c) {
  cs_buf_free(c, c->sbuf);
  cs_buf_free(c, c->rbuf);
  cs_buf_free(c, c->vsbuf);
  cs_buf_free(c, c->vrbuf);
  cs_buf_free(c, c->psbuf);
  cs_buf_free(c, c->prbuf);
  free(c->ebuf);
  free(c->arrive);
  free(c->arrive_k);
  free(c->view);
  free(c->reqs);
  free(c->stats);
  free(c->creqs);
}

/* The buffers for the largest size (c->size), the cold pools or the
 * evicting stream, and the request arrays; on failure, what could not be
 * had, everything freed. */
static int ctx_buffers(const cs_bench *b, const cs_opts *o, cs_ctx *c, cs_err *e) {
  c->buf_bytes = b->buf_bytes ? b->buf_bytes(c) : 64;
  int bufs = cs_buf_pair(c, &c->sbuf, &c->rbuf, c->buf_bytes);
  if (!bufs && cs_cold(b, o)) { /* room for the target in slots of the largest buffer */
    c->pcap = cs_pool_target(o) + cs_line_up(c->buf_bytes);
    bufs = cs_buf_pair(c, &c->psbuf, &c->prbuf, c->pcap);
    if (bufs) c->pcap = 0;
  }
  if (!bufs && cs_evicting(b, o)) {
    c->ebytes = cs_pool_target(o);
    double have = cs_mem_available(); /* a stream past memory is refused, not OOM-killed */
    c->ebuf = have > 0 && (double)c->ebytes > 0.8 * have ? NULL : malloc(c->ebytes);
    if (c->ebuf) memset(c->ebuf, 0, c->ebytes); /* its pages mapped before any timing */
    int ok = c->ebuf != NULL, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, c->comm);
    if (!all) bufs = CS_ENOMEM;
  }
  size_t nreq = cs_nreq(o, c->np);
  c->reqs = calloc(nreq, sizeof *c->reqs);
  c->stats = calloc(nreq, sizeof *c->stats);
  c->creqs = calloc(nreq, sizeof *c->creqs);
  if (!bufs && c->reqs && c->stats && c->creqs) return CS_OK;
  ctx_close(c);
  if (bufs && cs_evicting(b, o) && c->ebytes)
    return CS_FAIL(e, CS_ENOMEM, "cannot allocate %zu bytes to stream before each operation "
                   "(--buffers evicted; the last-level cache is %ld bytes)", c->ebytes,
                   cs_llc_bytes());
  if (bufs && cs_cold(b, o))
    return CS_FAIL(e, CS_ENOMEM, "cannot allocate two cold pools of %zu bytes (--buffers "
                   "cold: twice the last-level cache, %ld bytes, beside the largest buffer)",
                   cs_pool_target(o) + cs_line_up(c->buf_bytes), cs_llc_bytes());
  return CS_FAIL(e, CS_ENOMEM, "cannot allocate %zu-byte buffers%s%s", c->buf_bytes,
                 c->path ? " on the GPU path: " : "", c->path ? cs_gpu_error() : "");
}

/* A benchmark's context on this communicator, its buffers sized for the
 * largest size; refused where the benchmark cannot run as asked. */
static int ctx_open(const cs_bench *b, const cs_opts *o, MPI_Comm world, const cs_env *env,
                    size_t largest, cs_ctx *c, cs_err *e) {
  int rc;
  c->comm = world;
  c->opts = o;
  MPI_Comm_rank(world, &c->rank);
  MPI_Comm_size(world, &c->np);
  if ((rc = cs_bench_np_check(b, c->np, e))) return rc;
  c->chan = env->chan;
  c->clock = env->clock;
  c->floor = env->floor;
  c->bench = b;
  c->nslots = 1;
  c->tp = env->chan ? &cs_transport_chan : (env->path ? env->path->tp : &cs_transport_mpi);
  c->path = env->path ? env->path->path : NULL;
  if (env->chan && !b->any_transport)
    return CS_FAIL(e, CS_EUSAGE, "benchmark %s runs over MPI only, not --transport %s", b->name,
                   o->transport);
  if (b->rooted && o->root >= c->np)
    return CS_FAIL(e, CS_EUSAGE, "root %ld is outside the communicator of %d processes", o->root,
                   c->np);
  /* Point-to-point pairs rank 0 with the last rank (the UMBC report's choice:
   * with several ranks per node they sit on different nodes). */
  c->peer = c->rank == 0 ? c->np - 1 : (c->rank == c->np - 1 ? 0 : -1);
  c->active = b->timing == CS_TIME_MAX || c->peer >= 0;
  c->size = b->size_fix ? b->size_fix(c, largest) : largest;
  if ((rc = ctx_buffers(b, o, c, e))) return rc;
  if (b->phases && cs_one_clock(world)) { /* arrival skew: every rank on one clock */
    c->arrive_cap = 1L << 16;
    c->arrive = malloc((size_t)c->arrive_cap * sizeof *c->arrive);
    c->arrive_k = malloc((size_t)c->arrive_cap * sizeof *c->arrive_k);
    int ok = c->arrive && c->arrive_k, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, world);
    if (!all) c->arrive_cap = 0; /* every rank alike: the skew is a collective step */
  }
  return CS_OK;
}

int cs_run_bench(const cs_bench *b, const cs_opts *o, MPI_Comm world, const cs_env *env,
                 FILE *out, int *ninvalid, int *nresults, cs_err *e) {
  size_t sizes[CS_MAX_SIZES];
  int nsizes, rc;
  rc = b->size_param ? cs_param_sizes(o->param, b, sizes, CS_MAX_SIZES, &nsizes, e)
                     : cs_sizes_expand(o, sizes, CS_MAX_SIZES, &nsizes, e);
  if (rc) return rc;
  if (b->sizeless) {
    sizes[0] = 0;
    nsizes = 1;
  }
  cs_ctx c = {0};
  if ((rc = ctx_open(b, o, world, env, sizes[nsizes - 1], &c, e))) return rc;
  MPI_Comm node = MPI_COMM_NULL;
  double copy_gbs = NAN, copy1_gbs = NAN;
  if (b->setup) {
    MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    copy_gbs = cs_copy_bandwidth(&c, node, &copy1_gbs);
  }
  for (int i = 0; i < nsizes && rc == CS_OK; i++) {
    cs_result r = {0};
    c.size = b->size_fix ? b->size_fix(&c, sizes[i]) : sizes[i];
    if (b->size_fix && (c.size == 0 || (i > 0 && c.size == b->size_fix(&c, sizes[i - 1]))))
      continue; /* e.g. 1 or 2 bytes of ints */
    cs_resolved_params(&c, r.params, sizeof r.params);
    r.copy_gbs = copy_gbs;
    r.copy1_gbs = copy1_gbs;
    rc = cs_app_setup(b, &c, node, e);
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
  ctx_close(&c);
  return rc;
}

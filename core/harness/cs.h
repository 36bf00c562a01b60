/* commscope measuring core: shared types.
 *
 * The data path inside the core is: options -> for each benchmark and size
 * -> calibrate a batch -> timed samples (untimed validation after each) ->
 * statistics -> one record.  Benchmarks are small declarations (struct
 * cs_bench) in core/bench/; the harness owns everything else.
 */
#ifndef CS_H
#define CS_H

#include <mpi.h>
#include <stddef.h>

#include "cs_chan.h"
#include <stdint.h>
#include <stdio.h>

#define CS_SCHEMA_VERSION 2
/* The C compiler this core was built with (the wrapper's, or --cc's). */
#define CS_STR_(x) #x
#define CS_STR(x) CS_STR_(x)
#if defined(__clang__)
#define CS_COMPILER                                                                      \
  "clang " CS_STR(__clang_major__) "." CS_STR(__clang_minor__) "." CS_STR(__clang_patchlevel__)
#elif defined(__GNUC__)
#define CS_COMPILER "gcc " __VERSION__
#else
#define CS_COMPILER "unknown"
#endif
/* A loop GCC 12 at -O2 would leave scalar (it vectorises only loops that
 * need no epilogue); clang vectorises at -O2 by itself.  And a copy loop the
 * compiler must not turn into a call of memcpy. */
#if defined(__clang__)
#define CS_VECTORIZE
#define CS_PLAIN_LOOP __attribute__((no_builtin("memcpy")))
#elif defined(__GNUC__)
#define CS_VECTORIZE __attribute__((optimize("tree-vectorize", "vect-cost-model=dynamic")))
#define CS_PLAIN_LOOP __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define CS_VECTORIZE
#define CS_PLAIN_LOOP
#endif
#ifndef CS_VERSION
#define CS_VERSION "0.1.0"
#endif

#define CS_MAX_BENCH 32
/* A sweep's limits: at most CS_MAX_SIZES sizes, none above CS_MAX_SIZE
 * bytes (--list --json states both in the --sizes entry). */
#define CS_MAX_SIZES 128
#define CS_MAX_SIZE ((size_t)1 << 30)
#define CS_MAX_PHASES 8
#define CS_ERRLEN 512

/* Return codes used throughout the core.  Helpers return them upward;
 * only main() turns them into an exit status. */
enum cs_status {
  CS_OK = 0,
  CS_EUSAGE = 2,   /* bad option or value */
  CS_EINVALID = 3, /* data validation failed: the MPI moved wrong bytes */
  CS_ENOMEM = 4,
  CS_EMPI = 5,
  CS_EIO = 6,
  CS_ESKIP = 7,    /* a GPU path this machine cannot run: skipped, with the reason */
};

/* Errors (err.c): an error with where it was raised; filled by CS_FAIL. */
typedef struct cs_err {
  int code;
  char msg[CS_ERRLEN];
} cs_err;

int cs_fail(cs_err *e, int code, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
#define CS_FAIL(e, code, ...) cs_fail((e), (code), __FILE__, __LINE__, __VA_ARGS__)

/* All options, passed explicitly.  One table (options.c) generates both
 * the parser and the usage text from this struct. */
typedef struct cs_opts {
  char bench[1024];      /* comma-separated benchmark names, each with @SIZES of its own */
  char sizes[64];        /* "MIN:MAX" or "N" with K/M/G suffixes */
  long factor;           /* size multiplier between steps */
  long min_samples;      /* never stop before this many samples */
  long max_samples;      /* never take more than this many samples */
  double target_ci;      /* stop when CI half-width / median <= this */
  double time_cap_s;     /* per-size wall-time cap for sampling */
  double sample_us;      /* target duration of one timed sample; 0: one
                          * repetition per sample (per-iteration timing);
                          * < 0: automatic, from the clock's cost (cs_clock) */
  double min_time_s;     /* per-size wall time always spent sampling */
  long warmup;           /* discarded samples after calibration */
  double warmup_s;       /* and at least this much warm-up time */
  long window;           /* messages in flight for bw/bibw */
  long root;             /* root rank for rooted collectives */
  int rotate_root;       /* root = sample mod np (the UMBC report: rank 0 wears out) */
  char dtype[16];        /* int | double: element type of reductions */
  long loggp_n;          /* messages per PRTT(n, d, s) train */
  double loggp_delay_us; /* d of PRTT(n, d, s) */
  int raw;               /* include raw per-sample times in records */
  int table;             /* print a human table on stdout */
  int list;              /* list benchmarks and exit */
  int expand_sizes;      /* print the sizes of --sizes/--factor as JSON and exit */
  int json;              /* with --list: JSON */
  int info;              /* print MPI library info as JSON and exit */
  int gpu_info;          /* print the GPUs this core sees as JSON and exit */
  int help;
  char output[1024];     /* JSON Lines destination, "-" for stdout */
  long plan_np;          /* with info: judge applications at this many processes */
  int plan_mem;          /* ... all on this machine: and their memory */
  char inject[64];       /* testing: KIND@SIZE, KIND in hang|crash|corrupt */
  char transport[16];    /* mpi | chan | chan-cma: what moves the timed data */
  char path[20];         /* host | staged | staged-pageable | staged-pipelined | cuda-aware |
                          * ipc | nccl */
  long stage_chunk;      /* staged-pipelined: bytes of one chunk (0: 256 KiB) */
  char param[256];       /* applications' parameters "K=V;K=V" (a list for the swept one) */
  char buffers[16];      /* hot: one buffer, as OSU | cold: a pool beyond the last-level cache |
                          * evicted: memory streamed before each timed operation */
  long cold_pool;        /* cold: bytes of each pool (0: twice the last-level cache) */
  long chan_ring, chan_eager, chan_chunk, chan_nchunks; /* 0: the channel's defaults */
} cs_opts;

/* The clock (clock.c).  CLOCK_MONOTONIC in microseconds. */
double cs_now_us(void);
/* The clock as measured at start: CLOCK_MONOTONIC's step (the gcd of
 * successive differences; 10 ns on some VMs whatever clock_getres says)
 * and the cost of one read. */
typedef struct cs_clock {
  double quantum_ns;
  double read_ns;
} cs_clock;
void cs_clock_measure(cs_clock *k);
/* Automatic sample length: long enough that one clock read and one step
 * of the clock are each under 0.5% of a sample. */
double cs_auto_sample_us(const cs_clock *k);

/* Memory (mem.c).  Page-aligned, zeroed memory whose pages are touched
 * now, outside any timed region (NULL when out of memory; free() releases
 * it). */
void *cs_alloc(size_t n);
/* Bytes the kernel says can be had without swapping; -1 where unknown. */
double cs_mem_available(void);

/* JSON (json.c): a string, escaped; ,"key":v with null for NaN. */
void cs_json_str(FILE *f, const char *s);
void cs_json_num(FILE *f, const char *key, double v);
void cs_json_number(FILE *f, double v); /* the value alone */

/* Agreement across ranks (agree.c).  Every rank learns whether any
 * failed: the first failing rank, whose reason `why` (len bytes) every
 * rank then holds, or -1 when none did. */
int cs_first_failure(MPI_Comm comm, int failed, char *why, size_t len);

/* The cache-line floor between rank 0 and its partner (floor.c). */
struct cs_floor_line;
typedef struct cs_floor {
  MPI_Win win;
  MPI_Comm comm;
  struct cs_floor_line *line;
  int role; /* 0: pings, 1: answers, -1: not in a shared-memory pair */
  unsigned long count;
} cs_floor;
int cs_floor_open(MPI_Comm comm, cs_floor *f);
void cs_floor_close(cs_floor *f);
double cs_floor_measure(cs_floor *f); /* ns one way; NAN where not measured */

struct cs_ctx;
/* What moves the timed data.  MPI is one implementation, Chai, Hartono and Panda's
 * channel (channel/) the other; the harness's own control traffic (sync,
 * reductions of times, decisions) always goes over MPI, untimed. */
typedef struct cs_transport {
  const char *name;
  int (*send)(struct cs_ctx *c, const void *buf, size_t n, int peer);
  int (*recv)(struct cs_ctx *c, void *buf, size_t n, int peer);
  /* non-blocking, into request slot `slot`; waitall completes slots 0..n-1 */
  int (*isend)(struct cs_ctx *c, const void *buf, size_t n, int peer, int slot);
  int (*irecv)(struct cs_ctx *c, void *buf, size_t n, int peer, int slot);
  int (*waitall)(struct cs_ctx *c, int n);
  int (*barrier)(struct cs_ctx *c);
  int (*alltoall)(struct cs_ctx *c, const void *sbuf, void *rbuf, size_t block);
  /* GPU paths' collectives (NULL: the benchmark calls MPI itself) */
  int (*bcast)(struct cs_ctx *c, void *buf, size_t n, int root);
  int (*allreduce)(struct cs_ctx *c, const void *s, void *r, size_t count);
} cs_transport;
extern const cs_transport cs_transport_mpi, cs_transport_chan;
/* What a transport call returns besides 0: an MPI error code (> 0), the
 * channel's (< 0, above -1000), or one of these. */
#define CS_TP_EGPU (-1000)    /* a CUDA, cuBLAS or NCCL call failed: cs_path_error() says */
#define CS_TP_ENOTICE (-1001) /* an IPC notice did not match its receive */
#define CS_TP_ETOOBIG (-1002) /* one message over MPI's int count */
/* The reason for a transport call's non-zero return, in words. */
const char *cs_transport_strerror(int rc);
/* A rank that cannot go on: the reason to stderr and to CS_ERROR_DIR, then
 * MPI_Abort (abort.c). */
void cs_abort(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Largest message one MPI call carries: its count is an int. */
#define CS_MSG_MAX ((size_t)2147483647)

/* Per-size state handed to a benchmark's callbacks. */
typedef struct cs_ctx {
  MPI_Comm comm;
  int rank, np;
  int peer;              /* p2p partner, or -1 when this rank sits out */
  int active;            /* this rank takes part in the timed kernel */
  int root;              /* rooted collectives: root of the current sample */
  const cs_opts *opts;
  size_t size;           /* message size in bytes */
  void *sbuf, *rbuf;     /* page-aligned, cs_bench.buf_bytes each */
  size_t buf_bytes;
  /* Validation runs give each message of a window or loop its own slot
   * (stride apart, nslots of them, reused modulo nslots beyond); timed
   * runs use one buffer (stride 0), as OSU does. */
  size_t stride;
  long nslots;
  long slot0;            /* cold buffers: the pool slot a timed sample starts at */
  void *vsbuf, *vrbuf;   /* the validation runs' slotted buffers */
  size_t vcap;
  /* Cold buffers (--buffers cold): timed samples rotate over a send and a
   * receive pool, each larger than the last-level cache; every slot is
   * filled before the size and the slots received into checked after it. */
  void *psbuf, *prbuf;
  size_t pcap;           /* bytes of each pool */
  size_t pstride;        /* this size's slot: its buffer, rounded up to a cache line */
  long pslots;           /* this size's slots */
  long pmoved;           /* messages the timed samples moved through the pool */
  /* Evicted (--buffers evicted): before each timed operation every rank
   * streams over this memory, read and written, and the ranks meet. */
  double *ebuf;
  size_t ebytes;
  cs_opts vopts;         /* a validation run's options (a window that fits) */
  cs_opts wopts;         /* a size's options when its window was narrowed */
  const cs_clock *clock;
  cs_floor *floor;
  MPI_Request *reqs;     /* 2 * window requests */
  MPI_Status *stats;     /* and their statuses (as OSU's reqstat) */
  const cs_transport *tp;
  struct cs_path *path;  /* a GPU path's state (NULL: host memory) */
  void *view;            /* host copy of device data for fill and check */
  size_t view_len;
  cs_chan *chan;         /* the channel, when tp is the channel */
  cs_chan_req **creqs;   /* its request slots */
  /* applications: private state (setup/teardown) and the phases of the
   * sample being timed (cs_phase) */
  const struct cs_bench *bench;
  void *state;
  double phase_mark;
  /* where every rank's clock is one (one kernel: local runs, emulated
   * clusters): when each phase was entered, in call order, this sample */
  double *arrive;
  int *arrive_k;
  long narrive, arrive_cap;
  double phase_t[CS_MAX_PHASES];
} cs_ctx;

/* A declared parameter of an application benchmark. */
typedef struct cs_param_def {
  const char *name;
  const char *def;  /* default value */
  const char *help;
} cs_param_def;
/* The value of parameter `name` for this run: --param, else its default. */
const char *cs_param(const cs_ctx *c, const char *name, char *buf, size_t len);
long cs_param_long(const cs_ctx *c, const char *name);
struct cs_bench;
/* Every parameter given must be declared by one of the benchmarks run. */
int cs_params_check(const char *spec, const struct cs_bench *const *benches, int nb, cs_err *e);
/* The swept parameter's values (e.g. N=512,1024): the sizes of the sweep. */
int cs_param_sizes(const char *spec, const struct cs_bench *b, size_t *out, int max, int *n,
                   cs_err *e);

/* How a sample is synchronised and whose clock counts. */
enum cs_timing {
  CS_TIME_PAIR = 0, /* p2p: rank 0 times; its partner says "ready" first */
  CS_TIME_MAX,      /* collectives: barrier, every rank times, max over ranks */
};

/* A benchmark is a table entry.  The harness times run() between two
 * clock reads, divides by reps * ops_per_rep and keeps the per-op time. */
typedef struct cs_bench {
  const char *name;
  const char *group;      /* "p2p" | "coll" | "coll-sends" */
  const char *metric;     /* what median_us means */
  const char *primary;    /* the figure a table shows: "mb_per_s", "rate_per_s" (NULL: time) */
  const char *desc;
  int min_np;
  int ops_per_rep_window; /* 1: ops_per_rep = window; 0: ops_per_rep = ops */
  double ops_per_rep;     /* e.g. 2 for ping-pong one-way time */
  /* Bytes moved per op, whose division by the per-op time is mb_per_s:
   * bytes_per_op x size, and x np where bytes_x_np (collectives, as
   * nccl-tests' algorithm bytes).  0: no bandwidth.  See cs_bench_bytes. */
  double bytes_per_op;
  int bytes_x_np;
  int has_rate;           /* report ops per second */
  /* Options the kernel reads that change what it measures (CS_USES_*),
   * beyond those the harness sees in this declaration (cs_bench_json). */
  int uses;
  double min_sample_us;   /* batch repetitions up to this (sendloop needs a loop) */
  /* Validation: an untimed run of valid_reps repetitions (0: 1), each
   * moving msgs_per_rep messages to the receiver (NULL: 1), every one of
   * them into its own slot and checked. */
  long valid_reps;
  long (*msgs_per_rep)(const struct cs_ctx *c);
  /* Applications: the parameter the sweep runs over instead of message
   * sizes (its values become the records' size), the declared parameters
   * (a NULL name ends them), the phases of a sample (NULL ends them), and
   * untimed per-size setup and teardown with private state in c->state
   * (setup returns non-zero with a reason to refuse, e.g. memory). */
  const char *size_param;
  const cs_param_def *params;
  const char *const *phases;
  int (*setup)(struct cs_ctx *c, char *why, size_t len);
  /* The rules a size's parameters must follow at c->np processes, judged
   * from c->size, c->np and the parameters alone, without MPI: before any
   * launch (--info --plan-np) and again in the job before setup. */
  int (*judge)(const struct cs_ctx *c, char *why, size_t len);
  /* Bytes rank `rank` will allocate at this size: summed over each node's
   * ranks and refused, with the figures, when above 80% of what the node
   * has available (before the launch where every rank runs on this
   * machine, and in the job on every node). */
  double (*mem_bytes)(const struct cs_ctx *c, int rank);
  /* Useful bytes this rank moves per repetition in each phase, after
   * setup: message payload sent plus received, or for a memory phase the
   * bytes read plus written (NULL: not counted). */
  void (*phase_bytes)(const struct cs_ctx *c, double *bytes);
  void (*teardown)(struct cs_ctx *c);
  void (*corrupt)(struct cs_ctx *c); /* testing: spoil this rank's result */
  int corrupt_before;                /* ... at the start of the run (a halo in flight) */
  enum cs_timing timing;
  int sizeless;           /* one record at size 0 (barrier) */
  int any_transport;      /* runs over the channel too (only transport calls) */
  int gpu;                /* runs on the GPU paths too (buffers through cs_buf_*) */
  int gpu_only;           /* runs on a GPU path only (device kernels, cuBLAS) */
  int rooted;             /* has a root (bcast, reduce, gather, scatter) */
  const char *equiv_of;   /* hand-rolled version of this collective */
  /* Seed 004's equivalent number of MPI_Send calls of one message. */
  long (*equiv_sends)(int np);
  /* nccl-tests' bus factor: busbw = mb_per_s x this (NULL: no busbw). */
  double (*bus_factor)(int np);
  /* The size actually used for a requested size (0: skip this size). */
  size_t (*size_fix)(const cs_ctx *c, size_t size);
  /* Bytes to allocate for each of sbuf and rbuf for a message size (NULL:
   * a token 64, for applications, whose data live in their state). */
  size_t (*buf_bytes)(const cs_ctx *c);
  /* Untimed: fill what this rank sends with the pattern for `sample`,
   * poison what it receives. */
  void (*prepare)(cs_ctx *c, long sample);
  /* Timed: `reps` repetitions of the kernel. */
  int (*run)(cs_ctx *c, long reps);
  /* Untimed: check what this rank received in `sample`; 0 when good. */
  int (*check)(cs_ctx *c, long sample, char *why, size_t whylen);
} cs_bench;

/* Options a kernel reads (cs_bench.uses). */
enum cs_uses {
  CS_USES_DTYPE = 1,       /* --dtype: the reductions' element type */
  CS_USES_LOGGP_N = 2,     /* --loggp-n: messages per train */
  CS_USES_LOGGP_DELAY = 4, /* --loggp-delay-us: the delay between them */
};

/* Registry (core/bench/registry.c). */
const cs_bench *cs_bench_find(const char *name);
const cs_bench *const *cs_bench_all(int *n);

/* A benchmark's facts, as its declaration implies them (facts.c), for the
 * records and for `cs-core --list --json`.  No MPI. */
/* The record field a table shows: "median_us", "mb_per_s" or "rate_per_s". */
const char *cs_bench_primary(const cs_bench *b);
/* Bytes moved per op at this size and process count (0: none counted). */
double cs_bench_bytes(const cs_bench *b, size_t size, int np);
/* --buffers applies: a benchmark of message buffers (not an application's
 * own data, not barrier's none). */
int cs_bench_buffered(const cs_bench *b);
/* CS_EUSAGE where np processes are too few for b. */
int cs_bench_np_check(const cs_bench *b, int np, cs_err *e);
/* b's entry of `--list --json`. */
void cs_bench_json(FILE *f, const cs_bench *b);

/* Options (options.c). */
void cs_opts_defaults(cs_opts *o);
int cs_opts_parse(cs_opts *o, int argc, char **argv, cs_err *e);
void cs_opts_usage(FILE *f);
void cs_opts_json(FILE *f);
/* The names --path takes, in order (path.c); NULL-terminated. */
extern const char *const cs_path_names[];
int cs_parse_size(const char *s, size_t *out);
int cs_sizes_expand(const cs_opts *o, size_t *out, int max, int *n, cs_err *e);
MPI_Datatype cs_dtype(const cs_opts *o);
size_t cs_dtype_size(const cs_opts *o);

/* Statistics (stats.c). */
typedef struct cs_stats {
  long n;
  double median, mean, min, max, p5, p95, ci_lo, ci_hi;
} cs_stats;
void cs_sort(double *x, long n);
double cs_quantile_sorted(const double *x, long n, double q);
void cs_median_ci_ranks(long n, long *lo, long *hi);
void cs_stats_compute(const double *x, long n, double *scratch, cs_stats *s);
int cs_ci_converged(const cs_stats *s, double target);
/* The sampling stop rule, checked at check points (rank 0 decides): after
 * n samples and elapsed_s seconds of sampling, with their statistics (NULL:
 * none computed, so no CI to judge), stop now and why, as the record's
 * "stop" says: "ci" (converged: at least --min-samples samples and
 * --min-time seconds, and the CI within --target-ci), "time_cap" (at or
 * past --time-cap, never with fewer than CS_MIN_SAMPLES_UNDER_CAP samples) or
 * "max_samples"; NULL: go on, and *step (always set, >= 1) samples more
 * before the next check (25% more, at least 5; none before --min-time, sooner
 * near the time cap, never past --max-samples).  No MPI, no clock. */
#define CS_MIN_SAMPLES_UNDER_CAP 5
const char *cs_stop_rule(const cs_opts *o, long n, double elapsed_s, const cs_stats *st,
                         long *step);
/* The first check point: after this many samples. */
long cs_first_check(const cs_opts *o);
/* The window a size runs: `window`, narrowed where one message of this size,
 * measured (op_us), times the window would exceed budget_us per sample. */
long cs_fit_window(long window, double op_us, double budget_us);

/* Slots of a validation run: message m of a window or loop. */
static inline void *cs_slot(const cs_ctx *c, void *base, long m) {
  return c->stride ? (char *)base + (size_t)((c->slot0 + m) % c->nslots) * c->stride : base;
}

/* GPU paths (path.c).  A path decides where a benchmark's buffers live
 * (host memory for host; device memory for every other) and what moves
 * them (cs_transport).  Benchmarks fill, poison and check their buffers
 * through cs_buf_*, which copy device data through a host view, untimed. */
typedef struct cs_path_env {
  struct cs_path *path;       /* NULL: host */
  const cs_transport *tp;
  char desc[1024];            /* JSON: the path, its device(s), what the library reports */
} cs_path_env;
int cs_path_check(const cs_opts *o, const struct cs_bench *const *benches, int nb, cs_err *e);
/* 1 where the buffers are device memory (a GPU path, not a stand-in). */
int cs_buf_on_device(const cs_ctx *c);
/* Every rank: the device by local rank, the library's support, NCCL's
 * communicator.  CS_ESKIP with the first failing rank's reason. */
int cs_path_open(const cs_opts *o, MPI_Comm comm, cs_path_env *pe, char *why, size_t len);
/* What the MPI library says of CUDA: at compile time (its header), and at
 * run time (Open MPI: MPIX_Query_cuda_support; MPICH: MPIX_GPU_query_support,
 * which only answers after MPI_Init). */
void cs_path_cuda_support(int *compiled, int *runtime);
void cs_path_close(cs_path_env *pe);
/* sbuf and rbuf of n bytes each on this path; with a peer (p2p), the IPC
 * path maps the peer's rbuf (both partners call it at once). */
int cs_buf_pair(cs_ctx *c, void **sbuf, void **rbuf, size_t n);
/* The same with sbuf of ns bytes and rbuf of nr (an application whose two
 * buffers hold different things). */
int cs_buf_pair_sized(cs_ctx *c, void **sbuf, size_t ns, void **rbuf, size_t nr);
void cs_buf_free(cs_ctx *c, void *p);
void cs_buf_fill(cs_ctx *c, void *p, size_t n, uint64_t seed);
void cs_buf_poison(cs_ctx *c, void *p, size_t n);
long cs_buf_check(cs_ctx *c, const void *p, size_t n, uint64_t seed, unsigned *got,
                  unsigned *want);
/* A host pointer holding p's n bytes (p itself for host memory); after
 * writing to it, cs_buf_put stores it back. */
void *cs_buf_get(cs_ctx *c, const void *p, size_t n);
void cs_buf_put(cs_ctx *c, void *p, const void *view, size_t n);
/* The applications' device work, on the device or on the stand-in (host
 * memory, done at once): 0, or CS_TP_EGPU with the reason in cs_path_error. */
int cs_dev_copy(cs_ctx *c, void *dst, const void *src, size_t n); /* device to device, queued */
int cs_dev_sync(cs_ctx *c);
/* CS_TP_EGPU when a cs_gpu_* call (non-zero) failed, else 0. */
#define CS_GPU_TRY(x) ((x) ? CS_TP_EGPU : 0)
/* The last GPU failure's reason (the CUDA, cuBLAS or NCCL string). */
const char *cs_path_error(void);
/* Testing (--inject gpufail@SIZE): this rank's next device copy fails. */
void cs_path_fail_next(cs_ctx *c);

/* Pattern fill and check (pattern.c). */
uint64_t cs_seed(size_t size, int rank, long sample);
uint64_t cs_msg_seed(size_t size, int rank, long sample, long m); /* message m of a sample */
void cs_fill(void *buf, size_t n, uint64_t seed);
void cs_poison(void *buf, size_t n);
long cs_check(const void *buf, size_t n, uint64_t seed, unsigned *got, unsigned *want);

/* Noise accounting (noise.c). */
typedef struct cs_noise_mark {
  double proc_cpu_s; /* this process's CPU time */
  unsigned long long busy, steal, total; /* /proc/stat ticks (leader only) */
  int have_stat;
} cs_noise_mark;
typedef struct cs_noise {
  double other_cpu_s; /* CPU used by processes other than our ranks */
  double steal_s;     /* time stolen by the hypervisor */
  double wall_s;
  double load1;
  int valid;
} cs_noise;
void cs_noise_mark_now(cs_noise_mark *m, int leader);
void cs_noise_finish(const cs_noise_mark *a, const cs_noise_mark *b, MPI_Comm machine,
                     MPI_Comm world, double wall_s, cs_noise *out);

/* Records (record.c). */
typedef struct cs_result {
  const cs_bench *bench;
  size_t size;
  int root;             /* -1: none or rotating */
  double mean_rank_avg; /* collectives: mean of per-iteration rank averages (OSU's figure) */
  int np;
  long batch;          /* repetitions per timed sample */
  double ops_per_rep;
  cs_stats st;
  const double *raw;   /* per-op times of each sample, us */
  long nraw;
  int converged;       /* CI target met (else: time cap or max samples) */
  const char *stop;    /* why sampling stopped */
  cs_noise noise;
  int valid;
  char why[CS_ERRLEN];
  double elapsed_s;
  double floor_ns;     /* cache-line floor just before sampling (NAN: none) */
  long validations;    /* untimed validation runs */
  long checked_msgs;   /* messages checked in them, by this size's receiver */
  double resolution_us; /* what the clock resolves of one op's time */
  long window;          /* bw, bibw: the window this size ran (0: no window) */
  int nphases;
  double phase_max[CS_MAX_PHASES]; /* median over samples of the max over ranks */
  double phase_skew[CS_MAX_PHASES]; /* median over samples of the sum, over the phase's
                                     * entries, of last minus first rank in (NAN: the
                                     * ranks' clocks are not one) */
  double *phase_rank;   /* np x nphases: each rank's median per phase (rank 0) */
  double *phase_bytes;  /* np x nphases: each rank's useful bytes per phase (rank 0) */
  double copy_gbs;      /* applications: one rank's copy bandwidth with every rank
                         * copying at once, bytes read + written per ns (NAN: none) */
  double copy1_gbs;     /* the same with rank 0 copying alone (a root's copies) */
  char params[256];     /* applications: every declared parameter's value, K=V;K=V */
  long pool_bytes;      /* cold buffers: bytes of each pool (0: hot, one buffer) */
  long evicted_bytes;   /* evicted: bytes each rank streamed before each operation (0: none) */
  long pool_slots;      /* ... its slots at this size, and those checked after it */
  long pool_checked;
  long llc_bytes;       /* ... the last-level cache it was sized against */
} cs_result;
/* The MPI_T control variables named (cvars.c). */
char *cs_cvars_capture(const char *names, int *opened);
void cs_cvars_done(int opened);
void cs_write_header(FILE *f, const cs_opts *o, int argc, char **argv, int np,
                     char **hosts, char **cpus, const char *libver, int mpi_major, int mpi_minor,
                     const cs_clock *clock, double floor_ns, const char *path_json,
                     const char *cvars_json);
void cs_write_result(FILE *f, const cs_result *r, int raw);
/* Every field cs_write_result writes (fields.h), for `--list --json`. */
void cs_result_fields_json(FILE *f);
void cs_write_footer(FILE *f, const char *status, int nresults, int ninvalid, double elapsed_s,
                     double floor_ns, const char *reason);
void cs_table_header(FILE *f);
void cs_table_row(FILE *f, const cs_result *r);

/* Fault injection for the test suite (parsed in options.c, acted out in
 * harness.c): the last rank hangs, crashes or corrupts its received data
 * at the given size, or (hang@exit) hangs after the last record, where a
 * broken MPI_Finalize would. */
enum cs_fault { CS_FAULT_NONE, CS_FAULT_HANG, CS_FAULT_CRASH, CS_FAULT_CORRUPT,
                CS_FAULT_HANG_EXIT, CS_FAULT_GPUFAIL };
int cs_inject_parse(const char *spec, enum cs_fault *kind, size_t *size);

/* Harness (harness.c). */
/* Validation runs happen before these timed samples: 0, 1, 2, 4, 8, ... */
int cs_validated_sample(long sample);
/* --buffers cold: one rank's two pools; evicted: the memory it streams (0: hot). */
double cs_cold_bytes(const struct cs_bench *b, const cs_ctx *c);
/* Memory refusal: `need` bytes for `nranks` processes on one node that
 * has `have` available (<= 0: unknown, never refused); 1 with the reason. */
int cs_mem_refuse(const struct cs_bench *b, const cs_ctx *c, double need, int nranks,
                  double have, char *why, size_t len);
/* Request slots: both ways of a bw window, or one per rank, and two spare
 * (the harness's requests and a GPU path's pending transfers alike). */
static inline size_t cs_nreq(const cs_opts *o, int np) {
  return (size_t)(2 * o->window > np ? 2 * o->window : np) + 2;
}
typedef struct cs_env {
  MPI_Comm machine;
  cs_chan *chan;
  const cs_path_env *path;
  const cs_clock *clock;
  cs_floor *floor;
} cs_env;
int cs_run_bench(const cs_bench *b, const cs_opts *o, MPI_Comm world, const cs_env *env,
                 FILE *out, int *ninvalid, int *nresults, cs_err *e);

static inline void cs_phase(cs_ctx *c, int k) {
  double t = cs_now_us();
  if (c->narrive < c->arrive_cap) { /* phase k began at the last mark */
    c->arrive[c->narrive] = c->phase_mark;
    c->arrive_k[c->narrive++] = k;
  }
  c->phase_t[k] += t - c->phase_mark;
  c->phase_mark = t;
}

/* Part k of n items split over p parts as evenly as can be: the first
 * (n mod p) parts get one more (matmul's rows, summa's and jacobi's blocks). */
static inline void cs_block(size_t n, int p, int k, size_t *len, size_t *first) {
  size_t base = n / (size_t)p, extra = n % (size_t)p;
  *len = base + ((size_t)k < extra ? 1 : 0);
  *first = (size_t)k * base + ((size_t)k < extra ? (size_t)k : extra);
}

/* A 2D process grid for np processes, as square as can be with rows >=
 * columns, either side given or 0 (free); 0 when np does not decompose
 * so.  Usable before MPI_Init, and the same under every MPI: MPICH's
 * MPI_Dims_create agrees for np <= 256, Open MPI 4.1's does not at 180
 * and 240 (18 x 10 and 20 x 12). */
static inline int cs_grid2(int np, long want_r, long want_c, int *rows, int *cols) {
  if (want_r < 0 || want_c < 0 || np < 1) return 0;
  if (want_r && want_c) {
    *rows = (int)want_r;
    *cols = (int)want_c;
    return want_r * want_c == np;
  }
  if (want_r || want_c) {
    long fixed = want_r ? want_r : want_c;
    if (np % fixed) return 0;
    *rows = want_r ? (int)want_r : (int)(np / want_c);
    *cols = want_c ? (int)want_c : (int)(np / want_r);
    return 1;
  }
  int c = 1;
  for (int k = 1; (long)k * k <= np; k++)
    if (np % k == 0) c = k;
  *rows = np / c;
  *cols = c;
  return 1;
}

static inline int cs_nphases(const cs_bench *b) {
  int n = 0;
  while (b->phases && b->phases[n]) n++;
  return n;
}

#endif

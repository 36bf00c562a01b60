/* One option table: it drives both the parser and the usage text. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cs.h"

enum opt_type { OPT_STR, OPT_LONG, OPT_DOUBLE, OPT_FLAG };

/* Where an option is offered: RUN options are also `commscope run`'s (the
 * Python side builds its arguments and its CoreOptions from this table,
 * through `cs-core --list --json`); CORE options are the core's own. */
enum opt_scope { CORE = 0, RUN = 1, HIDDEN = 2 };

typedef struct opt_def {
  const char *name;
  enum opt_type type;
  const char *field; /* the cs_opts member, and CoreOptions' field */
  size_t off;
  size_t len; /* for OPT_STR: capacity */
  double lo, hi;
  enum opt_scope scope;
  const char *const *choices; /* for OPT_STR: the values it takes, where they are few */
  const char *help;
} opt_def;

/* The values of the options that take one of a few words: the parser
 * refuses any other, and --list --json states them (Python reads them from
 * core_options.json, never from a list of its own). */
static const char *const TRANSPORTS[] = {"mpi", "chan", "chan-cma", NULL};
static const char *const DTYPES[] = {"int", "double", NULL};
static const char *const BUFFERS[] = {"hot", "cold", "evicted", NULL};

#define STR(f, sc) OPT_STR, #f, offsetof(cs_opts, f), sizeof(((cs_opts *)0)->f), 0, 0, sc, NULL
#define ONE_OF(f, sc, ch) \
  OPT_STR, #f, offsetof(cs_opts, f), sizeof(((cs_opts *)0)->f), 0, 0, sc, ch
#define LNG(f, lo, hi, sc) OPT_LONG, #f, offsetof(cs_opts, f), 0, lo, hi, sc, NULL
#define DBL(f, lo, hi, sc) OPT_DOUBLE, #f, offsetof(cs_opts, f), 0, lo, hi, sc, NULL
#define FLG(f, sc) OPT_FLAG, #f, offsetof(cs_opts, f), 0, 0, 0, sc, NULL

static const opt_def OPTS[] = {
    {"bench", STR(bench, CORE), "benchmarks, comma-separated, each with sizes of its own after "
                                "@ (e.g. --bench latency,bw or --bench bcast@1:8K,reduce@16K:4M)"},
    {"sizes", STR(sizes, RUN), "message sizes MIN:MAX or N, suffixes K M G (e.g. --sizes 1:4M)"},
    {"factor", LNG(factor, 2, 1L << 30, RUN), "multiplier between sizes (e.g. --factor 4)"},
    {"min-samples", LNG(min_samples, 3, 100000000, RUN),
     "samples always taken per size (e.g. --min-samples 50)"},
    {"max-samples", LNG(max_samples, 3, 100000000, RUN), "samples never exceeded per size"},
    {"target-ci", DBL(target_ci, 0.0, 1.0, RUN),
     "stop a size when the 95% CI of its median is within +-this fraction (e.g. 0.02); the "
     "figure's uncertainty comes from repetitions (--repeat), not from this"},
    {"time-cap", DBL(time_cap_s, 0.001, 3600.0, RUN),
     "seconds of sampling per size at most (e.g. --time-cap 1)"},
    {"sample-us", DBL(sample_us, -1.0, 1e7, RUN),
     "batch repetitions into samples of this many us (0: time each iteration; -1: automatic, "
     "200 clock reads long)"},
    {"min-time", DBL(min_time_s, 0.0, 3600.0, RUN),
     "seconds of sampling per size at least (e.g. --min-time 0.05)"},
    {"warmup", LNG(warmup, 0, 1000000, RUN), "samples discarded before timing, at least"},
    {"warmup-time", DBL(warmup_s, 0.0, 60.0, RUN), "seconds of warm-up per size, at least"},
    {"window", LNG(window, 1, 4096, RUN), "messages in flight for bw and bibw (e.g. 16)"},
    {"root", LNG(root, 0, 1 << 30, RUN), "root rank of rooted collectives (e.g. --root 1)"},
    {"rotate-root", FLG(rotate_root, RUN), "rotate the root over the ranks, one per sample"},
    {"buffers", ONE_OF(buffers, RUN, BUFFERS),
     "hot: every repetition reuses one buffer, in cache (OSU's way) | cold: rotate over pools "
     "larger than the last-level cache (IMB's off-cache way), every slot checked | evicted: "
     "before each timed operation, alone, every rank streams over memory larger than the "
     "last-level cache (an application's compute sweep), which leaves state other than the "
     "message data out of cache too"},
    {"cold-pool", LNG(cold_pool, 0, 1L << 40, HIDDEN),
     "with --buffers cold: bytes of each pool; with evicted: bytes each rank streams (0: twice "
     "the last-level cache)"},
    {"dtype", ONE_OF(dtype, RUN, DTYPES),
     "element type of reductions: int or double (e.g. --dtype double)"},
    {"loggp-n", LNG(loggp_n, 2, 4096, RUN), "messages per PRTT(n,d,s) train of the loggp "
     "benchmarks"},
    {"loggp-delay-us", DBL(loggp_delay_us, 0.0, 1e6, RUN),
     "delay d of PRTT(n,d,s) in us (e.g. 20)"},
    {"output", STR(output, CORE), "JSON Lines file, - for stdout (e.g. --output run.jsonl)"},
    {"raw", FLG(raw, RUN), "keep the raw per-sample times of every record"},
    {"table", FLG(table, CORE), "print a human-readable table on stdout"},
    {"list", FLG(list, CORE), "list the benchmarks and exit"},
    {"json", FLG(json, CORE), "with --list: print JSON (benchmarks and options)"},
    {"info", FLG(info, CORE), "print the MPI library identity as JSON and exit"},
    {"gpu-info", FLG(gpu_info, CORE),
     "print whether this core has CUDA and the GPUs it sees (or why none) as JSON and exit"},
    {"transport", ONE_OF(transport, CORE, TRANSPORTS),
     "what moves the timed data: mpi, chan or chan-cma (the intra-node channel)"},
    {"path", ONE_OF(path, CORE, cs_path_names),
     "where the buffers live and what moves them: host, staged, staged-pageable, "
     "staged-pipelined (device memory through host memory, whole or in chunks), cuda-aware "
     "(device pointers to MPI), ipc (CUDA IPC) or nccl"},
    {"stage-chunk", LNG(stage_chunk, 0, 1L << 30, RUN),
     "staged-pipelined: bytes of one chunk (0: 256 KiB; at most 64 chunks a message)"},
    {"chan-ring", LNG(chan_ring, 0, 1L << 30, CORE), "channel: per-pair ring bytes (power of 2)"},
    {"chan-eager", LNG(chan_eager, 0, 1L << 30, CORE),
     "channel: largest message sent through the ring"},
    {"chan-chunk", LNG(chan_chunk, 0, 1L << 30, CORE), "channel: bytes of one pool buffer"},
    {"chan-nchunks", LNG(chan_nchunks, 0, 4096, CORE), "channel: pool buffers per process"},
    {"param", STR(param, RUN),
     "applications' parameters K=V;K=V, a list for the swept one (e.g. --param "
     "'N=1000,2000;impl=naive'; see --list)"},
    {"inject", STR(inject, HIDDEN),
     "testing: make the last rank hang|crash|corrupt|gpufail at a size (crash@64)"},
    {"plan-np", LNG(plan_np, 0, 1 << 20, HIDDEN),
     "with --info: judge every application size at this many processes before a launch"},
    {"expand-sizes", FLG(expand_sizes, CORE),
     "print the sizes --sizes and --factor give as JSON and exit (or refuse them as a run "
     "would): the one size grammar, which Python's store/sizes.py is held to"},
    {"plan-mem", FLG(plan_mem, HIDDEN),
     "with --plan-np: every process runs on this machine; refuse what its memory cannot hold"},
    {"help", FLG(help, CORE), "this text"},
};
#define NOPTS ((int)(sizeof OPTS / sizeof OPTS[0]))

/* An option with choices holds one of them: else "--NAME must be a, b or c,
 * got 'x'", the list read from the table. */
static int check_choice(const cs_opts *o, const opt_def *d, cs_err *e) {
  if (!d->choices) return CS_OK;
  const char *v = (const char *)o + d->off;
  int n = 0;
  for (; d->choices[n]; n++)
    if (!strcmp(v, d->choices[n])) return CS_OK;
  char list[256] = "";
  size_t at = 0;
  for (int i = 0; i < n && at < sizeof list; i++)
    at += (size_t)snprintf(list + at, sizeof list - at, "%s%s",
                           i == 0 ? "" : i == n - 1 ? " or " : ", ", d->choices[i]);
  return CS_FAIL(e, CS_EUSAGE, "--%s must be %s, got '%s'", d->name, list, v);
}

void cs_opts_defaults(cs_opts *o) {
  memset(o, 0, sizeof *o);
  strcpy(o->bench, "latency");
  strcpy(o->sizes, "1:4M");
  o->factor = 2;
  o->min_samples = 20;
  o->max_samples = 1000000;
  /* Within one run a size is decided once its median is known to +-5%:
   * runs differ from each other by far more on a VM, and repetitions
   * (commscope run --repeat) measure that; sampling longer inside one run
   * would buy a precision the next run does not keep. */
  o->target_ci = 0.05;
  o->time_cap_s = 0.25;
  o->sample_us = -1.0;
  o->min_time_s = 0.002;
  o->warmup = 2;
  o->warmup_s = 0.001;
  o->window = 64;
  o->root = 0;
  strcpy(o->dtype, "int");
  strcpy(o->buffers, "hot");
  strcpy(o->transport, "mpi");
  strcpy(o->path, "host");
  o->loggp_n = 16;
  o->loggp_delay_us = 20.0;
  strcpy(o->output, "-");
}

int cs_parse_size(const char *s, size_t *out) {
  char *end;
  errno = 0;
  if (!isdigit((unsigned char)s[0])) return -1;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno) return -1;
  unsigned long long mul = 1;
  if (*end) {
    switch (toupper((unsigned char)*end)) {
      case 'K': mul = 1ull << 10; break;
      case 'M': mul = 1ull << 20; break;
      case 'G': mul = 1ull << 30; break;
      default: return -1;
    }
    end++;
    if (*end == 'i' || *end == 'I') end++;
    if (*end == 'b' || *end == 'B') end++;
    if (*end) return -1;
  }
  if (v > (1ull << 40) / mul) return -1;
  *out = (size_t)(v * mul);
  return 0;
}

int cs_sizes_expand(const cs_opts *o, size_t *out, int max, int *n, cs_err *e) {
  char buf[sizeof o->sizes];
  size_t lo, hi;
  strcpy(buf, o->sizes);
  char *colon = strchr(buf, ':');
  if (colon) *colon = 0;
  if (cs_parse_size(buf, &lo))
    return CS_FAIL(e, CS_EUSAGE, "bad size '%s' in --sizes %s", buf, o->sizes);
  hi = lo;
  if (colon && cs_parse_size(colon + 1, &hi))
    return CS_FAIL(e, CS_EUSAGE, "bad size '%s' in --sizes %s", colon + 1, o->sizes);
  if (hi < lo) return CS_FAIL(e, CS_EUSAGE, "size range %s is reversed", o->sizes);
  *n = 0;
  size_t s = lo;
  if (s == 0) {
    out[(*n)++] = 0;
    s = 1;
  }
  while (s <= hi) {
    if (*n >= max) return CS_FAIL(e, CS_EUSAGE, "too many sizes in %s", o->sizes);
    out[(*n)++] = s;
    if (s > hi / (size_t)o->factor) break; /* the next would pass hi (or wrap around) */
    s *= (size_t)o->factor;
  }
  if (*n == 0) return CS_FAIL(e, CS_EUSAGE, "size range %s is empty", o->sizes);
  if (out[*n - 1] > CS_MAX_SIZE)
    return CS_FAIL(e, CS_EUSAGE, "sizes %s: above 1 GiB, the largest the core takes",
                   o->sizes);
  return CS_OK;
}

static const opt_def *find_opt(const char *name, size_t len) {
  for (int i = 0; i < NOPTS; i++)
    if (strlen(OPTS[i].name) == len && !strncmp(OPTS[i].name, name, len)) return &OPTS[i];
  return NULL;
}

static int set_opt(cs_opts *o, const opt_def *d, const char *val, cs_err *e) {
  char *p = (char *)o + d->off;
  char *end;
  switch (d->type) {
    case OPT_FLAG: *(int *)p = 1; return CS_OK;
    case OPT_STR:
      if (strlen(val) >= d->len) return CS_FAIL(e, CS_EUSAGE, "value of --%s is too long", d->name);
      strcpy(p, val);
      return CS_OK;
    case OPT_LONG: {
      errno = 0;
      long v = strtol(val, &end, 10);
      if (errno || end == val || *end || v < d->lo || v > d->hi)
        return CS_FAIL(e, CS_EUSAGE, "--%s needs an integer in [%.0f, %.0f], got '%s'", d->name,
                       d->lo, d->hi, val);
      *(long *)p = v;
      return CS_OK;
    }
    case OPT_DOUBLE: {
      errno = 0;
      double v = strtod(val, &end);
      if (errno || end == val || *end || !isfinite(v) || v < d->lo || v > d->hi)
        return CS_FAIL(e, CS_EUSAGE, "--%s needs a number in [%g, %g], got '%s'", d->name, d->lo,
                       d->hi, val);
      *(double *)p = v;
      return CS_OK;
    }
  }
  return CS_FAIL(e, CS_EUSAGE, "internal: bad option type");
}

int cs_opts_parse(cs_opts *o, int argc, char **argv, cs_err *e) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strncmp(a, "--", 2) != 0) return CS_FAIL(e, CS_EUSAGE, "unexpected argument '%s'", a);
    a += 2;
    const char *eq = strchr(a, '=');
    size_t len = eq ? (size_t)(eq - a) : strlen(a);
    const opt_def *d = find_opt(a, len);
    if (!d) return CS_FAIL(e, CS_EUSAGE, "unknown option '%s'", argv[i]);
    const char *val = NULL;
    if (d->type != OPT_FLAG) {
      if (eq)
        val = eq + 1;
      else if (i + 1 < argc)
        val = argv[++i];
      else
        return CS_FAIL(e, CS_EUSAGE, "option --%s needs a value", d->name);
    } else if (eq) {
      return CS_FAIL(e, CS_EUSAGE, "option --%s takes no value", d->name);
    }
    int rc = set_opt(o, d, val, e);
    if (rc) return rc;
  }
  enum cs_fault k;
  size_t at;
  if (o->inject[0] && cs_inject_parse(o->inject, &k, &at))
    return CS_FAIL(e, CS_EUSAGE,
                   "bad --inject '%s' (use hang@SIZE, crash@SIZE, corrupt@SIZE, gpufail@SIZE or "
                   "hang@exit)",
                   o->inject);
  for (int i = 0; i < NOPTS; i++) {
    int rc = check_choice(o, &OPTS[i], e);
    if (rc) return rc;
  }
  if (!strcmp(o->buffers, "cold") && o->rotate_root)
    return CS_FAIL(e, CS_EUSAGE, "--buffers cold keeps one root per size: a rotating root "
                   "would overwrite the pool's slots with another root's data");
  if (!strcmp(o->buffers, "evicted") && o->sample_us >= 0)
    return CS_FAIL(e, CS_EUSAGE, "--buffers evicted times one operation a sample: not with "
                   "--sample-us");
  if (!strcmp(o->buffers, "evicted") && o->cold_pool > 0 && o->cold_pool < (1L << 20))
    return CS_FAIL(e, CS_EUSAGE, "--buffers evicted: --cold-pool %ld bytes would evict nothing "
                   "(at least 1 MiB; 0: twice the last-level cache)", o->cold_pool);
  if (strcmp(o->buffers, "hot") && o->path[0] && strcmp(o->path, "host"))
    return CS_FAIL(e, CS_EUSAGE, "--buffers %s is for host memory (--path host), not --path %s",
                   o->buffers, o->path);
  if (o->time_cap_s < o->min_time_s)
    return CS_FAIL(e, CS_EUSAGE, "--time-cap is below --min-time");
  if (o->max_samples < o->min_samples)
    return CS_FAIL(e, CS_EUSAGE, "--max-samples is below --min-samples");
  return CS_OK;
}

/* The option table as JSON: name, cs_opts field, type, range, default,
 * scope and help (and for --sizes the largest size and the most sizes a
 * sweep may have); Python builds `commscope run`'s options from it. */
void cs_opts_json(FILE *f) {
  static const char *types[] = {"str", "int", "float", "flag"};
  static const char *scopes[] = {"core", "run", "hidden"};
  cs_opts d;
  cs_opts_defaults(&d);
  fputc('[', f);
  for (int i = 0; i < NOPTS; i++) {
    const opt_def *o = &OPTS[i];
    const char *p = (const char *)&d + o->off;
    fprintf(f, "%s{\"name\":\"%s\",\"field\":\"%s\",\"type\":\"%s\",\"scope\":\"%s\"",
            i ? "," : "", o->name, o->field, types[o->type], scopes[o->scope]);
    if (o->type == OPT_LONG || o->type == OPT_DOUBLE) fprintf(f, ",\"lo\":%.17g,\"hi\":%.17g", o->lo, o->hi);
    fprintf(f, ",\"default\":");
    switch (o->type) {
      case OPT_STR: cs_json_str(f, p); break;
      case OPT_LONG: fprintf(f, "%ld", *(const long *)p); break;
      case OPT_DOUBLE: fprintf(f, "%.17g", *(const double *)p); break;
      case OPT_FLAG: fputs(*(const int *)p ? "true" : "false", f); break;
    }
    if (o->choices) {
      fputs(",\"choices\":[", f);
      for (int k = 0; o->choices[k]; k++) fprintf(f, "%s\"%s\"", k ? "," : "", o->choices[k]);
      fputc(']', f);
    }
    if (o->off == offsetof(cs_opts, sizes)) /* a sweep's limits (main.c holds runs to them) */
      fprintf(f, ",\"max_size\":%zu,\"max_sizes\":%d", CS_MAX_SIZE, CS_MAX_SIZES);
    fprintf(f, ",\"help\":");
    cs_json_str(f, o->help);
    fputc('}', f);
  }
  fputc(']', f);
}

void cs_opts_usage(FILE *f) {
  fprintf(f, "usage: cs-core [options]   (run under mpiexec)\n\noptions:\n");
  for (int i = 0; i < NOPTS; i++) {
    char left[48];
    snprintf(left, sizeof left, "--%s%s", OPTS[i].name, OPTS[i].type == OPT_FLAG ? "" : " V");
    fprintf(f, "  %-20s %s\n", left, OPTS[i].help);
  }
  fprintf(f, "\nexample: mpiexec -n 2 cs-core --bench latency,bw --sizes 1:1M --table\n");
}

int cs_inject_parse(const char *spec, enum cs_fault *kind, size_t *size) {
  *kind = CS_FAULT_NONE;
  *size = 0;
  if (!spec[0]) return 0;
  if (!strcmp(spec, "hang@exit")) {
    *kind = CS_FAULT_HANG_EXIT;
    return 0;
  }
  const char *at = strchr(spec, '@');
  if (!at) return -1;
  size_t n = (size_t)(at - spec);
  if (n == 4 && !strncmp(spec, "hang", 4))
    *kind = CS_FAULT_HANG;
  else if (n == 5 && !strncmp(spec, "crash", 5))
    *kind = CS_FAULT_CRASH;
  else if (n == 7 && !strncmp(spec, "corrupt", 7))
    *kind = CS_FAULT_CORRUPT;
  else if (n == 7 && !strncmp(spec, "gpufail", 7))
    *kind = CS_FAULT_GPUFAIL;
  else
    return -1;
  return cs_parse_size(at + 1, size);
}

MPI_Datatype cs_dtype(const cs_opts *o) { return strcmp(o->dtype, "double") ? MPI_INT : MPI_DOUBLE; }
size_t cs_dtype_size(const cs_opts *o) { return strcmp(o->dtype, "double") ? sizeof(int) : sizeof(double); }

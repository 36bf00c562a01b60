/* One option table: it drives both the parser and the usage text. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cs.h"

enum opt_type { OPT_STR, OPT_LONG, OPT_DOUBLE, OPT_FLAG };

typedef struct opt_def {
  const char *name;
  enum opt_type type;
  size_t off;
  size_t len; /* for OPT_STR: capacity */
  double lo, hi;
  const char *help;
} opt_def;

#define STR(f) OPT_STR, offsetof(cs_opts, f), sizeof(((cs_opts *)0)->f), 0, 0
#define LNG(f, lo, hi) OPT_LONG, offsetof(cs_opts, f), 0, lo, hi
#define DBL(f, lo, hi) OPT_DOUBLE, offsetof(cs_opts, f), 0, lo, hi
#define FLG(f) OPT_FLAG, offsetof(cs_opts, f), 0, 0, 0

static const opt_def OPTS[] = {
    {"bench", STR(bench), "benchmarks, comma-separated (e.g. --bench latency,bw)"},
    {"sizes", STR(sizes), "message sizes MIN:MAX or N, suffixes K M G (e.g. --sizes 1:4M)"},
    {"factor", LNG(factor, 2, 1L << 30), "multiplier between sizes (e.g. --factor 4)"},
    {"min-samples", LNG(min_samples, 3, 100000000), "samples always taken per size (e.g. 20)"},
    {"max-samples", LNG(max_samples, 3, 100000000), "samples never exceeded per size"},
    {"target-ci", DBL(target_ci, 0.0, 1.0),
     "stop when the 95% CI of the median is within +-this fraction (e.g. 0.02)"},
    {"time-cap", DBL(time_cap_s, 0.001, 3600.0), "seconds of sampling per size at most (e.g. 1)"},
    {"sample-us", DBL(sample_us, -1.0, 1e7),
     "batch repetitions into samples of this many us (0: time each iteration; default -1: "
     "automatic, 200 clock reads long)"},
    {"min-time", DBL(min_time_s, 0.0, 3600.0), "seconds of sampling per size at least (0.05)"},
    {"warmup", LNG(warmup, 0, 1000000), "samples discarded before timing, at least (e.g. 2)"},
    {"warmup-time", DBL(warmup_s, 0.0, 60.0), "seconds of warm-up per size, at least (0.01)"},
    {"window", LNG(window, 1, 4096), "messages in flight for bw and bibw (e.g. 64)"},
    {"root", LNG(root, 0, 1 << 30), "root rank of rooted collectives (e.g. --root 1)"},
    {"rotate-root", FLG(rotate_root), "rotate the root over the ranks, one per sample"},
    {"dtype", STR(dtype), "element type of reductions: int or double (e.g. --dtype double)"},
    {"loggp-n", LNG(loggp_n, 2, 4096), "messages per PRTT(n,d,s) train of the loggp benchmarks"},
    {"loggp-delay-us", DBL(loggp_delay_us, 0.0, 1e6), "delay d of PRTT(n,d,s) in us (e.g. 20)"},
    {"output", STR(output), "JSON Lines file, - for stdout (e.g. --output run.jsonl)"},
    {"raw", FLG(raw), "include raw per-sample times in each record"},
    {"table", FLG(table), "print a human-readable table on stdout"},
    {"list", FLG(list), "list the benchmarks and exit"},
    {"json", FLG(json), "with --list: print JSON"},
    {"info", FLG(info), "print the MPI library identity as JSON and exit"},
    {"transport", STR(transport),
     "what moves the timed data: mpi, chan or chan-cma (seed 002's channel)"},
    {"chan-ring", LNG(chan_ring, 0, 1L << 30), "channel: per-pair ring bytes (power of two)"},
    {"chan-eager", LNG(chan_eager, 0, 1L << 30), "channel: largest message sent through the ring"},
    {"chan-chunk", LNG(chan_chunk, 0, 1L << 30), "channel: bytes of one pool buffer"},
    {"chan-nchunks", LNG(chan_nchunks, 0, 4096), "channel: pool buffers per process"},
    {"inject", STR(inject), "testing: make the last rank hang|crash|corrupt at a size (crash@64)"},
    {"help", FLG(help), "this text"},
};
#define NOPTS ((int)(sizeof OPTS / sizeof OPTS[0]))

void cs_opts_defaults(cs_opts *o) {
  memset(o, 0, sizeof *o);
  strcpy(o->bench, "latency");
  strcpy(o->sizes, "1:4M");
  o->factor = 2;
  o->min_samples = 20;
  o->max_samples = 1000000;
  o->target_ci = 0.02;
  o->time_cap_s = 1.0;
  o->sample_us = -1.0;
  o->min_time_s = 0.05;
  o->warmup = 2;
  o->warmup_s = 0.01;
  o->window = 64;
  o->root = 0;
  strcpy(o->dtype, "int");
  strcpy(o->transport, "mpi");
  o->loggp_n = 16;
  o->loggp_delay_us = 20.0;
  strcpy(o->output, "-");
}

int cs_fail(cs_err *e, int code, const char *file, int line, const char *fmt, ...) {
  va_list ap;
  char tmp[CS_ERRLEN - 64];
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (e) {
    e->code = code;
    /* Usage errors are for users: no source location. */
    if (code == CS_EUSAGE)
      snprintf(e->msg, sizeof e->msg, "%s", tmp);
    else
      snprintf(e->msg, sizeof e->msg, "%s (%s:%d)", tmp, file, line);
  }
  return code;
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
  for (; s <= hi; s *= (size_t)o->factor) {
    if (*n >= max) return CS_FAIL(e, CS_EUSAGE, "too many sizes in %s", o->sizes);
    out[(*n)++] = s;
  }
  if (*n == 0) return CS_FAIL(e, CS_EUSAGE, "size range %s is empty", o->sizes);
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
                   "bad --inject '%s' (use hang@SIZE, crash@SIZE, corrupt@SIZE or hang@exit)",
                   o->inject);
  if (strcmp(o->transport, "mpi") && strcmp(o->transport, "chan") &&
      strcmp(o->transport, "chan-cma"))
    return CS_FAIL(e, CS_EUSAGE, "--transport must be mpi, chan or chan-cma, got '%s'",
                   o->transport);
  if (strcmp(o->dtype, "int") && strcmp(o->dtype, "double"))
    return CS_FAIL(e, CS_EUSAGE, "--dtype must be int or double, got '%s'", o->dtype);
  if (o->time_cap_s < o->min_time_s)
    return CS_FAIL(e, CS_EUSAGE, "--time-cap is below --min-time");
  if (o->max_samples < o->min_samples)
    return CS_FAIL(e, CS_EUSAGE, "--max-samples is below --min-samples");
  return CS_OK;
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
  else
    return -1;
  return cs_parse_size(at + 1, size);
}

MPI_Datatype cs_dtype(const cs_opts *o) { return strcmp(o->dtype, "double") ? MPI_INT : MPI_DOUBLE; }
size_t cs_dtype_size(const cs_opts *o) { return strcmp(o->dtype, "double") ? sizeof(int) : sizeof(double); }

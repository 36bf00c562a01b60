/* One writer for records: JSON Lines for machines, and a table for people
 * built from the same cs_result. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cs.h"
#include "fields.h"

/* The header's transport (with its channel's parameters where it is not
 * MPI) and the options the job ran with. */
static void write_run_options(FILE *f, const cs_opts *o) {
  fprintf(f, ",\"transport\":");
  cs_json_str(f, o->transport);
  if (strcmp(o->transport, "mpi")) {
    cs_chan_params p;
    cs_chan_defaults(&p);
    fprintf(f, ",\"channel\":{\"ring_bytes\":%ld,\"eager_max\":%ld,\"chunk_bytes\":%ld,"
               "\"nchunks\":%ld}",
            o->chan_ring ? o->chan_ring : (long)p.ring_bytes,
            o->chan_eager ? o->chan_eager : (long)p.eager_max,
            o->chan_chunk ? o->chan_chunk : (long)p.chunk_bytes,
            o->chan_nchunks ? o->chan_nchunks : (long)p.nchunks);
  }
  fprintf(f, ",\"options\":{\"bench\":");
  cs_json_str(f, o->bench);
  fprintf(f, ",\"sizes\":");
  cs_json_str(f, o->sizes);
  fprintf(f,
          ",\"factor\":%ld,\"min_samples\":%ld,\"max_samples\":%ld,\"target_ci\":%g,"
          "\"time_cap_s\":%g,\"min_time_s\":%g,\"sample_us\":%g,\"warmup\":%ld,"
          "\"warmup_s\":%g,\"window\":%ld,\"root\":%ld,\"rotate_root\":%s,\"dtype\":\"%s\","
          "\"buffers\":\"%s\",\"loggp_n\":%ld,\"loggp_delay_us\":%g,\"raw\":%s}",
          o->factor, o->min_samples, o->max_samples, o->target_ci, o->time_cap_s, o->min_time_s,
          o->sample_us, o->warmup, o->warmup_s, o->window, o->root,
          o->rotate_root ? "true" : "false", o->dtype, o->buffers, o->loggp_n, o->loggp_delay_us,
          o->raw ? "true" : "false");
}

void cs_write_header(FILE *f, const cs_opts *o, int argc, char **argv, int np, char **hosts,
                     char **cpus, const char *libver, int mpi_major, int mpi_minor,
                     const cs_clock *clock, double floor_ns, const char *path_json,
                     const char *cvars_json) {
  struct timespec res;
  clock_getres(CLOCK_MONOTONIC, &res);
  fprintf(f, "{\"type\":\"header\",\"schema\":%d,\"commscope_version\":", CS_SCHEMA_VERSION);
  cs_json_str(f, CS_VERSION);
  fprintf(f, ",\"mpi_library\":");
  cs_json_str(f, libver);
  fprintf(f, ",\"mpi_standard\":\"%d.%d\",\"np\":%d,\"hosts\":[", mpi_major, mpi_minor, np);
  for (int i = 0; i < np; i++) {
    if (i) fputc(',', f);
    cs_json_str(f, hosts[i]);
  }
  fprintf(f, "],\"cpus\":["); /* each rank's allowed CPUs: the binding it ran under */
  for (int i = 0; i < np; i++) {
    if (i) fputc(',', f);
    cs_json_str(f, cpus[i]);
  }
  fprintf(f, "],\"compiler\":");
  cs_json_str(f, CS_COMPILER);
  fprintf(f, ",\"clock\":\"CLOCK_MONOTONIC\",\"clock_res_ns\":%ld", (long)res.tv_nsec);
  fprintf(f, ",\"clock_overhead_ns\":%.1f,\"clock_quantum_ns\":%.1f", clock->read_ns,
          clock->quantum_ns);
  if (o->sample_us < 0)
    fprintf(f, ",\"timing\":\"batched: samples of at least %.2f us (200 clock reads or steps); "
               "collectives one call per sample between barriers\"",
            cs_auto_sample_us(clock));
  else if (o->sample_us > 0)
    fprintf(f, ",\"timing\":\"batched: samples of at least %.2f us\"", o->sample_us);
  else
    fprintf(f, ",\"timing\":\"per-iteration (sendloop: one loop of sends per sample)\"");
  fprintf(f, ",\"validation\":\"untimed runs before samples 0,1,2,4,8,... of every size, "
             "every message in its own slot, ranks resynchronised after the check\"");
  cs_json_num(f, "floor_ns", floor_ns);
  if (cvars_json) fputs(cvars_json, f); /* settings read back (main.c: COMMSCOPE_CVARS) */
  if (path_json) fprintf(f, ",\"path\":%s", path_json);
  write_run_options(f, o);
  fprintf(f, ",\"argv\":[");
  for (int i = 0; i < argc; i++) {
    if (i) fputc(',', f);
    cs_json_str(f, argv[i]);
  }
  fprintf(f, "]}\n");
  fflush(f);
}

/* Column k of an np x nph per-rank table, as "key":[...] (nothing when
 * the table was not gathered). */
static void rank_column(FILE *f, const char *key, const double *t, int np, int nph, int k,
                        const char *fmt) {
  if (!t) return;
  fprintf(f, ",\"%s\":[", key);
  for (int i = 0; i < np; i++) fprintf(f, fmt, i ? "," : "", t[(size_t)i * (size_t)nph + (size_t)k]);
  fputc(']', f);
}

/* The figures a result line computes from its median (fields.h). */
static double cs_result_mbps(const cs_result *r) {
  if (!(r->bench->bytes_per_op > 0 && r->st.median > 0)) return NAN;
  return cs_bench_bytes(r->bench, r->size, r->np) / r->st.median; /* bytes/us = MB/s */
}

static double cs_result_rate(const cs_result *r) {
  return r->bench->has_rate && r->st.median > 0 ? 1e6 / r->st.median : NAN;
}

static double cs_result_busbw(const cs_result *r) {
  double mbps = cs_result_mbps(r);
  return r->bench->bus_factor && isfinite(mbps) ? mbps * r->bench->bus_factor(r->np) : NAN;
}

/* An application's phases: each one's max over ranks, its skew, and each
 * rank's time and bytes in it. */
static void cs_write_phases(FILE *f, const cs_result *r) {
  fputc('{', f);
  for (int k = 0; k < r->nphases; k++) {
    fprintf(f, "%s", k ? "," : "");
    cs_json_str(f, r->bench->phases[k]);
    fprintf(f, ":{\"max_us\":%.6g", r->phase_max[k]);
    if (!isnan(r->phase_skew[k])) fprintf(f, ",\"skew_us\":%.6g", r->phase_skew[k]);
    rank_column(f, "ranks_us", r->phase_rank, r->np, r->nphases, k, "%s%.6g");
    rank_column(f, "bytes_ranks", r->phase_bytes, r->np, r->nphases, k, "%s%.17g");
    fputc('}', f);
  }
  fputc('}', f);
}

/* The per-op time of each sample (--raw). */
static void cs_write_raw(FILE *f, const cs_result *r) {
  fputc('[', f);
  for (long i = 0; i < r->nraw; i++) fprintf(f, "%s%.6g", i ? "," : "", r->raw[i]);
  fputc(']', f);
}

/* The writer's printers, one per kind of field (fields.h). */
typedef void (*field_fn)(FILE *, const cs_result *);
static void put_str(FILE *f, const cs_result *r, const char *v) {
  (void)r;
  cs_json_str(f, v ? v : "");
}
static void put_int(FILE *f, const cs_result *r, long v) {
  (void)r;
  fprintf(f, "%ld", v);
}
static void put_num(FILE *f, const cs_result *r, double v) {
  (void)r;
  cs_json_number(f, v);
}
static void put_bool(FILE *f, const cs_result *r, int v) {
  (void)r;
  fputs(v ? "true" : "false", f);
}
static void put_fn(FILE *f, const cs_result *r, field_fn v) { v(f, r); }
#define put_text put_str
#define put_opt_str put_str
#define put_primary put_str
#define put_opt_int put_int
#define put_json put_fn
#define put_raw put_fn

/* Where the writer is in the line: inside an object ("noise" of
 * "noise.valid") or not, and whether that object has a field yet. */
typedef struct {
  const char *obj; /* the key of the object open, up to its '.' (NULL: none) */
  int objlen;
  int first;
} cursor;

/* ,"key": for the next field, opening or closing an object as its key says. */
static void field_key(FILE *f, cursor *c, const char *key) {
  const char *dot = strchr(key, '.');
  int len = dot ? (int)(dot - key) : 0;
  if (c->obj && !(dot && len == c->objlen && !strncmp(key, c->obj, (size_t)len))) {
    fputc('}', f);
    c->obj = NULL;
  }
  if (dot && !c->obj) {
    fprintf(f, ",\"%.*s\":{", len, key);
    *c = (cursor){key, len, 1};
  }
  fprintf(f, "%s\"%s\":", c->obj && c->first ? "" : ",", dot ? dot + 1 : key);
  c->first = 0;
}

void cs_write_result(FILE *f, const cs_result *r, int raw) {
  const cs_stats *s = &r->st;
  cursor c = {NULL, 0, 0};
  fputs("{\"type\":\"result\"", f);
#define WRITE(name, key, kind, how, when, value) \
  if (when) {                                    \
    field_key(f, &c, key);                       \
    put_##kind(f, r, value);                     \
  }
  CS_RESULT_FIELDS(WRITE)
#undef WRITE
  fputs(c.obj ? "}}\n" : "}\n", f);
  fflush(f);
}

void cs_result_fields_json(FILE *f) {
  int i = 0;
  fputc('[', f);
#define LIST(name, key, kind, how, when, value)                                        \
  fprintf(f, "%s{\"name\":\"%s\",\"key\":\"%s\",\"kind\":\"%s\",\"how\":\"%s\"}", \
          i++ ? "," : "", #name, key, #kind, how);
  CS_RESULT_FIELDS(LIST)
#undef LIST
  fputc(']', f);
}

void cs_write_footer(FILE *f, const char *status, int nresults, int ninvalid, double elapsed_s,
                     double floor_ns, const char *reason) {
  fprintf(f,
          "{\"type\":\"footer\",\"status\":\"%s\",\"results\":%d,\"invalid\":%d,"
          "\"elapsed_s\":%.3f",
          status, nresults, ninvalid, elapsed_s);
  cs_json_num(f, "floor_ns", floor_ns);
  if (reason) {
    fprintf(f, ",\"reason\":");
    cs_json_str(f, reason);
  }
  fprintf(f, "}\n");
  fflush(f);
}

void cs_table_header(FILE *f) {
  fprintf(f, "%-10s %10s %8s %7s %11s %11s %11s %6s %11s %12s %s\n", "bench", "size_B",
          "samples", "batch", "median_us", "p5_us", "p95_us", "ci%", "MB/s", "rate/s", "note");
}

void cs_table_row(FILE *f, const cs_result *r) {
  const cs_stats *s = &r->st;
  double ci = s->median > 0 ? 100.0 * (s->ci_hi - s->ci_lo) / 2.0 / s->median : NAN;
  double mbps = cs_result_mbps(r), rps = cs_result_rate(r);
  char mb[32] = "-", rate[32] = "-";
  if (isfinite(mbps)) snprintf(mb, sizeof mb, "%.1f", mbps);
  if (isfinite(rps)) snprintf(rate, sizeof rate, "%.0f", rps);
  fprintf(f, "%-10s %10zu %8ld %7ld %11.3f %11.3f %11.3f %6.2f %11s %12s %s\n", r->bench->name,
          r->size, s->n, r->batch, s->median, s->p5, s->p95, ci, mb, rate,
          !r->valid ? "INVALID" : (r->converged ? "" : r->stop));
  fflush(f);
}

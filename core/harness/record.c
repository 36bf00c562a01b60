/* One writer for records: JSON Lines for machines, and a table for people
 * built from the same cs_result. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cs.h"

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

void cs_write_result(FILE *f, const cs_result *r, int raw) {
  const cs_stats *s = &r->st;
  fprintf(f, "{\"type\":\"result\",\"bench\":\"%s\",\"group\":\"%s\",\"metric\":\"%s\","
             "\"primary\":\"%s\"",
          r->bench->name, r->bench->group, r->bench->metric, cs_bench_primary(r->bench));
  fprintf(f, ",\"size_bytes\":%zu,\"np\":%d,\"valid\":%s", r->size, r->np,
          r->valid ? "true" : "false");
  if (!r->valid) {
    fprintf(f, ",\"error\":");
    cs_json_str(f, r->why);
  }
  fprintf(f, ",\"n_samples\":%ld,\"batch\":%ld,\"ops_per_rep\":%g,\"n_iters\":%ld", s->n,
          r->batch, r->ops_per_rep, s->n * r->batch);
  cs_json_num(f, "median_us", s->median);
  cs_json_num(f, "mean_us", s->mean);
  cs_json_num(f, "min_us", s->min);
  cs_json_num(f, "max_us", s->max);
  cs_json_num(f, "p5_us", s->p5);
  cs_json_num(f, "p95_us", s->p95);
  cs_json_num(f, "ci_lo_us", s->ci_lo);
  cs_json_num(f, "ci_hi_us", s->ci_hi);
  cs_json_num(f, "ci_us", (s->ci_hi - s->ci_lo) / 2.0);
  double mbps = NAN, rate = NAN, bus = NAN;
  if (r->bench->bytes_per_op > 0 && s->median > 0) {
    mbps = cs_bench_bytes(r->bench, r->size, r->np) / s->median; /* bytes/us = MB/s */
    if (r->bench->bus_factor) bus = mbps * r->bench->bus_factor(r->np);
  }
  if (r->bench->has_rate && s->median > 0) rate = 1e6 / s->median;
  cs_json_num(f, "mb_per_s", mbps);
  cs_json_num(f, "rate_per_s", rate);
  cs_json_num(f, "busbw_mb_per_s", bus);
  if (r->bench->timing == CS_TIME_MAX) {
    fprintf(f, ",\"timing\":\"barrier, max over ranks\"");
    cs_json_num(f, "mean_rank_avg_us", r->mean_rank_avg);
  }
  if (r->bench->rooted) fprintf(f, ",\"root\":%d", r->root);
  if (r->bench->equiv_sends) fprintf(f, ",\"equiv_sends\":%ld", r->bench->equiv_sends(r->np));
  if (r->bench->equiv_of) fprintf(f, ",\"equiv_of\":\"%s\"", r->bench->equiv_of);
  fprintf(f, ",\"converged\":%s,\"stop\":\"%s\"", r->converged ? "true" : "false", r->stop);
  fprintf(f, ",\"noise\":{\"valid\":%s", r->noise.valid ? "true" : "false");
  cs_json_num(f, "other_cpu_s", r->noise.other_cpu_s);
  cs_json_num(f, "steal_s", r->noise.steal_s);
  cs_json_num(f, "wall_s", r->noise.wall_s);
  cs_json_num(f, "load1", r->noise.load1);
  fputc('}', f);
  cs_json_num(f, "elapsed_s", r->elapsed_s);
  cs_json_num(f, "floor_ns", r->floor_ns);
  cs_json_num(f, "resolution_us", r->resolution_us);
  fprintf(f, ",\"validations\":%ld,\"checked_msgs\":%ld", r->validations, r->checked_msgs);
  if (r->window) fprintf(f, ",\"window\":%ld", r->window);
  if (r->pool_bytes)
    fprintf(f, ",\"pool\":{\"bytes\":%ld,\"slots\":%ld,\"checked\":%ld,\"llc_bytes\":%ld}",
            r->pool_bytes, r->pool_slots, r->pool_checked, r->llc_bytes);
  if (r->evicted_bytes)
    fprintf(f, ",\"evicted\":{\"bytes\":%ld,\"llc_bytes\":%ld}", r->evicted_bytes,
            r->llc_bytes);
  if (r->bench->size_param) {
    fprintf(f, ",\"size_param\":");
    cs_json_str(f, r->bench->size_param);
  }
  if (r->params[0]) {
    fprintf(f, ",\"params\":");
    cs_json_str(f, r->params);
  }
  if (r->nphases) {
    fprintf(f, ",\"phases\":{");
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
    if (isfinite(r->copy_gbs)) fprintf(f, ",\"copy_gbs\":%.4g", r->copy_gbs);
    if (isfinite(r->copy1_gbs)) fprintf(f, ",\"copy1_gbs\":%.4g", r->copy1_gbs);
  }
  if (raw && r->raw) {
    fprintf(f, ",\"raw_us\":[");
    for (long i = 0; i < r->nraw; i++) fprintf(f, "%s%.6g", i ? "," : "", r->raw[i]);
    fputc(']', f);
  }
  fprintf(f, "}\n");
  fflush(f);
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
  char mb[32] = "-", rate[32] = "-";
  if (r->bench->bytes_per_op > 0 && s->median > 0)
    snprintf(mb, sizeof mb, "%.1f", cs_bench_bytes(r->bench, r->size, r->np) / s->median);
  if (r->bench->has_rate && s->median > 0) snprintf(rate, sizeof rate, "%.0f", 1e6 / s->median);
  fprintf(f, "%-10s %10zu %8ld %7ld %11.3f %11.3f %11.3f %6.2f %11s %12s %s\n", r->bench->name,
          r->size, s->n, r->batch, s->median, s->p5, s->p95, ci, mb, rate,
          !r->valid ? "INVALID" : (r->converged ? "" : r->stop));
  fflush(f);
}

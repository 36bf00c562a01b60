/* A benchmark's facts as its declaration (struct cs_bench) implies them:
 * the figure its records lead with, the bytes it moves, the options that
 * change what it measures and the processes it needs.  The records use
 * them, and `cs-core --list --json` states them, so that Python reads them
 * from here (src/commscope/core_benches.json is a copy) instead of keeping
 * its own lists of benchmark names. */
#include <string.h>

#include "cs.h"

const char *cs_bench_primary(const cs_bench *b) { return b->primary ? b->primary : "median_us"; }

/* What the primary figure is, and its unit. */
static const char *figure_kind(const cs_bench *b) {
  const char *p = cs_bench_primary(b);
  return !strcmp(p, "mb_per_s") ? "bandwidth" : !strcmp(p, "rate_per_s") ? "rate" : "time";
}

/* A rate is of round trips: roundtrip is the one benchmark whose primary
 * figure is a rate, and every text a person reads says "round trips per
 * second". */
static const char *figure_unit(const cs_bench *b) {
  const char *p = cs_bench_primary(b);
  return !strcmp(p, "mb_per_s") ? "MB/s" : !strcmp(p, "rate_per_s") ? "round trips/s" : "us";
}

double cs_bench_bytes(const cs_bench *b, size_t size, int np) {
  double bytes = b->bytes_per_op * (double)size;
  return b->bytes_x_np ? bytes * (double)np : bytes;
}

int cs_bench_buffered(const cs_bench *b) {
  return !b->size_param && b->buf_bytes && !b->sizeless;
}

int cs_bench_np_check(const cs_bench *b, int np, cs_err *e) {
  if (np >= b->min_np) return CS_OK;
  return CS_FAIL(e, CS_EUSAGE, "benchmark %s needs at least %d processes, got %d", b->name,
                 b->min_np, np);
}

/* The bytes rule, machine-readable: factors joined by '*', each a number,
 * "np" (the processes) or "size" (the record's size_bytes), whose product
 * is the bytes moved per op: mb_per_s = that / median_us.  E.g. "size",
 * "2*size", "np*size".  JSON null where no bytes are counted (no
 * mb_per_s). */
static void bytes_rule(FILE *f, const cs_bench *b) {
  if (!(b->bytes_per_op > 0)) {
    fputs("null", f);
    return;
  }
  fputc('"', f);
  if (b->bytes_per_op != 1) fprintf(f, "%g*", b->bytes_per_op);
  if (b->bytes_x_np) fputs("np*", f);
  fputs("size\"", f);
}

/* The options that change what b measures, by their cs_opts field names
 * (core_options.json's "field", the records' header "options"): those its
 * declaration shows (a window, a root, message buffers, an application's
 * parameters) and those its kernel reads (cs_bench.uses). */
static void changed_by(FILE *f, const cs_bench *b) {
  const char *names[8];
  int n = 0;
  if (b->ops_per_rep_window) names[n++] = "window";
  if (b->rooted) {
    names[n++] = "root";
    names[n++] = "rotate_root";
  }
  if (b->uses & CS_USES_DTYPE) names[n++] = "dtype";
  if (cs_bench_buffered(b)) names[n++] = "buffers";
  if (b->uses & CS_USES_LOGGP_N) names[n++] = "loggp_n";
  if (b->uses & CS_USES_LOGGP_DELAY) names[n++] = "loggp_delay_us";
  if (b->params) names[n++] = "param";
  fputc('[', f);
  for (int i = 0; i < n; i++) fprintf(f, "%s\"%s\"", i ? "," : "", names[i]);
  fputc(']', f);
}

static const char *yes(int v) { return v ? "true" : "false"; }

void cs_bench_json(FILE *f, const cs_bench *b) {
  fprintf(f, "{\"name\":\"%s\",\"group\":\"%s\",\"min_np\":%d,\"bandwidth\":%s,\"rate\":%s,"
             "\"rooted\":%s,\"sizeless\":%s,\"any_transport\":%s,\"gpu\":%s,\"gpu_only\":%s,"
             "\"timing\":\"%s\",\"equiv_of\":",
          b->name, b->group, b->min_np, yes(b->bytes_per_op > 0), yes(b->has_rate),
          yes(b->rooted), yes(b->sizeless), yes(b->any_transport), yes(b->gpu), yes(b->gpu_only),
          b->timing == CS_TIME_MAX ? "max" : "pair");
  if (b->equiv_of)
    cs_json_str(f, b->equiv_of);
  else
    fputs("null", f);
  if (b->size_param) {
    fprintf(f, ",\"size_param\":");
    cs_json_str(f, b->size_param);
  }
  fprintf(f, ",\"params\":[");
  for (const cs_param_def *d = b->params; d && d->name; d++) {
    fprintf(f, "%s{\"name\":", d == b->params ? "" : ",");
    cs_json_str(f, d->name);
    fprintf(f, ",\"default\":");
    cs_json_str(f, d->def);
    fprintf(f, ",\"help\":");
    cs_json_str(f, d->help);
    fputc('}', f);
  }
  fprintf(f, "],\"phases\":[");
  for (int k = 0; b->phases && b->phases[k]; k++) {
    if (k) fputc(',', f);
    cs_json_str(f, b->phases[k]);
  }
  fputc(']', f);
  fprintf(f, ",\"equiv_sends\":\"%s\",\"metric\":",
          !b->equiv_sends ? "" : (b->equiv_sends(4) == 12 ? "n(n-1)" : "n-1"));
  cs_json_str(f, b->metric);
  fprintf(f, ",\"desc\":");
  cs_json_str(f, b->desc);
  /* what a table shows of its records (the records' "primary"), what kind
   * of figure that is and its unit; the bytes rule; what changes it */
  fprintf(f, ",\"primary\":\"%s\",\"figure\":\"%s\",\"unit\":\"%s\",\"bytes_per_op\":",
          cs_bench_primary(b), figure_kind(b), figure_unit(b));
  bytes_rule(f, b);
  fprintf(f, ",\"changed_by\":");
  changed_by(f, b);
  fputc('}', f);
}

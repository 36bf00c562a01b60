/* Reads numbers from stdin, prints the core's statistics of them as JSON,
 * so the test suite can hold the C and Python statistics to one answer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cs.h"

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "window")) { /* lines of: window op_us budget_us */
    long w;
    double op, budget;
    while (scanf("%ld %lf %lf", &w, &op, &budget) == 3)
      printf("%ld\n", cs_fit_window(w, op, budget));
    return 0;
  }
  if (argc > 1 && !strcmp(argv[1], "stop")) {
    /* lines of: n elapsed_s stats median ci_lo ci_hi min_samples max_samples target_ci
     * time_cap_s min_time_s (stats 0: none computed); prints the stop reason
     * (- to go on), the samples before the next check and the first check */
    long n, stats;
    double elapsed;
    cs_stats s = {0};
    cs_opts o = {0}; /* the rule reads the five options given */
    while (scanf("%ld %lf %ld %lf %lf %lf %ld %ld %lf %lf %lf", &n, &elapsed, &stats, &s.median,
                 &s.ci_lo, &s.ci_hi, &o.min_samples, &o.max_samples, &o.target_ci,
                 &o.time_cap_s, &o.min_time_s) == 11) {
      long step = -1;
      s.n = n;
      const char *why = cs_stop_rule(&o, n, elapsed, stats ? &s : NULL, &step);
      printf("%s %ld %ld\n", why ? why : "-", step, cs_first_check(&o));
    }
    return 0;
  }
  double target = argc > 1 ? atof(argv[1]) : 0.02;
  long n = 0, cap = 1024;
  double *x = malloc((size_t)cap * sizeof *x), v;
  while (scanf("%lf", &v) == 1) {
    if (n == cap) x = realloc(x, (size_t)(cap *= 2) * sizeof *x);
    x[n++] = v;
  }
  double *scratch = malloc((size_t)(n ? n : 1) * sizeof *scratch);
  cs_stats s;
  cs_stats_compute(x, n, scratch, &s);
  long lo, hi;
  cs_median_ci_ranks(n, &lo, &hi);
  printf("{\"n\":%ld,\"median\":%.17g,\"mean\":%.17g,\"min\":%.17g,\"max\":%.17g,"
         "\"p5\":%.17g,\"p95\":%.17g,\"ci_lo\":%.17g,\"ci_hi\":%.17g,\"lo\":%ld,\"hi\":%ld,"
         "\"converged\":%d}\n",
         s.n, s.median, s.mean, s.min, s.max, s.p5, s.p95, s.ci_lo, s.ci_hi, lo, hi,
         cs_ci_converged(&s, target));
  free(x);
  free(scratch);
  return 0;
}

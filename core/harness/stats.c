/* Order statistics: median, percentiles and a distribution-free 95%
 * confidence interval of the median (binomial order-statistic ranks with
 * the normal approximation, as in Conover's "Practical Nonparametric
 * Statistics").  src/commscope/analysis/stats.py mirrors these formulas;
 * tests check the two agree.  And the sampling stop rule built on them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cs.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void cs_sort(double *x, long n) { qsort(x, (size_t)n, sizeof *x, cmp_double); }

/* Linear interpolation between order statistics (Hyndman-Fan type 7). */
double cs_quantile_sorted(const double *x, long n, double q) {
  if (n <= 0) return NAN;
  double h = (double)(n - 1) * q;
  long i = (long)floor(h);
  if (i >= n - 1) return x[n - 1];
  return x[i] + (h - (double)i) * (x[i + 1] - x[i]);
}

/* 0-based ranks of the order statistics bounding the median's 95% CI. */
void cs_median_ci_ranks(long n, long *lo, long *hi) {
  const double z = 1.959963984540054;
  double half = z * sqrt((double)n) / 2.0;
  long j = (long)floor((double)n / 2.0 - half);      /* 1-based */
  long k = (long)ceil((double)n / 2.0 + 1.0 + half); /* 1-based */
  if (j < 1) j = 1;
  if (k > n) k = n;
  *lo = j - 1;
  *hi = k - 1;
}

void cs_stats_compute(const double *x, long n, double *scratch, cs_stats *s) {
  memset(s, 0, sizeof *s);
  s->n = n;
  if (n <= 0) return;
  memcpy(scratch, x, (size_t)n * sizeof *x);
  cs_sort(scratch, n);
  double sum = 0;
  for (long i = 0; i < n; i++) sum += scratch[i];
  s->mean = sum / (double)n;
  s->min = scratch[0];
  s->max = scratch[n - 1];
  s->median = cs_quantile_sorted(scratch, n, 0.5);
  s->p5 = cs_quantile_sorted(scratch, n, 0.05);
  s->p95 = cs_quantile_sorted(scratch, n, 0.95);
  long lo, hi;
  cs_median_ci_ranks(n, &lo, &hi);
  s->ci_lo = scratch[lo];
  s->ci_hi = scratch[hi];
}

/* Convergence: the CI half-width relative to the median. */
int cs_ci_converged(const cs_stats *s, double target) {
  if (s->n < 3 || !(s->median > 0)) return 0;
  double half = (s->ci_hi - s->ci_lo) / 2.0;
  return half / s->median <= target;
}

long cs_first_check(const cs_opts *o) {
  return o->min_samples < CS_MIN_SAMPLES_UNDER_CAP ? o->min_samples : CS_MIN_SAMPLES_UNDER_CAP;
}

const char *cs_stop_rule(const cs_opts *o, long n, double elapsed_s, const cs_stats *st,
                         long *step) {
  const char *stop = NULL;
  int enough = n >= o->min_samples && elapsed_s >= o->min_time_s;
  if (st && enough && cs_ci_converged(st, o->target_ci))
    stop = "ci";
  else if (elapsed_s >= o->time_cap_s && n >= CS_MIN_SAMPLES_UNDER_CAP)
    stop = "time_cap";
  else if (n >= o->max_samples)
    stop = "max_samples";
  /* Check again after 25% more samples, or sooner near the time cap. */
  double per_sample_s = elapsed_s / (double)n;
  double left_s = o->time_cap_s - elapsed_s;
  long k = n / 4 > 5 ? n / 4 : 5;
  double to_min_s = o->min_time_s - elapsed_s;
  if (per_sample_s > 0 && to_min_s / per_sample_s > (double)k)
    k = (long)(to_min_s / per_sample_s) + 1; /* no check before --min-time */
  if (per_sample_s > 0 && left_s / per_sample_s < (double)k)
    k = left_s > 0 ? (long)(left_s / per_sample_s) + 1 : 1;
  if (n + k > o->max_samples) k = o->max_samples - n;
  *step = k < 1 ? 1 : k;
  return stop;
}

/* The widest power of two that fits the budget: two libraries of nearly
 * the same speed then narrow to one window (50 and 45 would not), and the
 * sweep has fewer sizes to measure again at a common window. */
long cs_fit_window(long window, double op_us, double budget_us) {
  if (window <= 1 || !(op_us > 0) || op_us * (double)window <= budget_us) return window;
  double fit = budget_us / op_us;
  long w = 1;
  while ((double)(w * 2) <= fit && w * 2 < window) w *= 2;
  return w;
}

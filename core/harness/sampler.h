/* One size's samples as the timed loop takes them (sampler.c keeps and
 * reduces them), and the root of each sample.  The harness's files share
 * it: the timed loop (harness.c), validate.c, pools.c and app.c;
 * benchmarks include cs.h only. */
#ifndef CS_SAMPLER_H
#define CS_SAMPLER_H

#include "cs.h"

/* One size's samples as they are taken, and what went wrong on this rank. */
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

/* The root of a sample: fixed, or rotating with the sample (--rotate-root). */
static inline int cs_root_of(const cs_ctx *c, long sample) {
  if (!c->opts->rotate_root) return (int)c->opts->root;
  return (int)(((sample % c->np) + c->np) % c->np);
}

/* Keeping samples, reducing collectives' at check points (sampler.c). */
int cs_append(double **x, long *n, long *cap, double v, long max);
int cs_push(sampler *sm, double v, long max);
int cs_keep_local(sampler *sm, double v);
int cs_reduce_pending(const cs_bench *b, cs_ctx *c, sampler *sm, long max);
void cs_gather_why(cs_ctx *c, sampler *sm, char *why, size_t len);
double cs_median_of(double *x, long n);

#endif

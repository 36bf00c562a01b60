/* What the harness's files share (harness.c's timed loop, validate.c,
 * pools.c, sampler.c, app.c); benchmarks include cs.h only. */
#ifndef CS_HARNESS_H
#define CS_HARNESS_H

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

/* validate.c: an untimed run of the kernel that checks what it moved */
int cs_validation_run(const cs_bench *b, cs_ctx *c, long sample, sampler *sm, long *checked);

/* pools.c: cold buffers (--buffers cold) and the evicting stream (evicted) */
size_t cs_line_up(size_t n);
int cs_cold(const cs_bench *b, const cs_opts *o);
int cs_evicting(const cs_bench *b, const cs_opts *o);
size_t cs_pool_target(const cs_opts *o);
void cs_pool_prepare(const cs_bench *b, cs_ctx *c);
void cs_pool_check(const cs_bench *b, cs_ctx *c, sampler *sm, cs_result *r);
void cs_evict(cs_ctx *c);

/* sampler.c: keeping samples, reducing collectives' at check points */
int cs_append(double **x, long *n, long *cap, double v, long max);
int cs_push(sampler *sm, double v, long max);
int cs_keep_local(sampler *sm, double v);
int cs_reduce_pending(const cs_bench *b, cs_ctx *c, sampler *sm, long max);
void cs_gather_why(cs_ctx *c, sampler *sm, char *why, size_t len);
double cs_median_of(double *x, long n);

/* app.c: what applications need besides the timed loop */
void cs_arrival_skew(cs_ctx *c, int nph, double *sk);
int cs_one_clock(MPI_Comm comm);
void cs_reduce_phases(cs_ctx *c, sampler *sm, int nph, cs_result *r);
void cs_resolved_params(const cs_ctx *c, char *out, size_t len);
int cs_app_setup(const cs_bench *b, cs_ctx *c, MPI_Comm node, cs_err *e);
double cs_copy_bandwidth(const cs_ctx *c, MPI_Comm node, double *alone);

#endif

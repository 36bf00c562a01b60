/* A size's samples as they are taken: rank 0's figures, collectives'
 * per-rank times reduced at check points, the first failure's reason. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "sampler.h"

#define TAG_WHY 902

/* Append v to a growing array of at most max values. */
int cs_append(double **x, long *n, long *cap, double v, long max) {
  if (*n == *cap) {
    long grow = *cap ? *cap * 2 : 1024;
    if (grow > max) grow = max;
    double *y = grow > *n ? realloc(*x, (size_t)grow * sizeof *y) : NULL;
    if (!y) return CS_ENOMEM;
    *x = y;
    *cap = grow;
  }
  (*x)[(*n)++] = v;
  return CS_OK;
}

/* Rank 0's samples (max over ranks, for collectives). */
int cs_push(sampler *sm, double v, long max) { return cs_append(&sm->x, &sm->n, &sm->cap, v, max); }

/* Collectives: this rank's time for one sample, kept until a check point. */
int cs_keep_local(sampler *sm, double v) {
  return cs_append(&sm->local, &sm->nlocal, &sm->lcap, v, 1L << 40);
}

/* Collectives: every rank keeps its own times; at a check point they are
 * reduced in one go (max over ranks per iteration, and the rank average),
 * never between two timed iterations. */
int cs_reduce_pending(const cs_bench *b, cs_ctx *c, sampler *sm, long max) {
  if (b->timing != CS_TIME_MAX || sm->nlocal == 0) return CS_OK;
  long k = sm->nlocal;
  double *worst = c->rank == 0 ? malloc((size_t)k * sizeof *worst) : NULL;
  double *sum = c->rank == 0 ? malloc((size_t)k * sizeof *sum) : NULL;
  if (c->rank == 0 && (!worst || !sum)) {
    free(worst);
    free(sum);
    return CS_ENOMEM;
  }
  MPI_Reduce(sm->local, worst, (int)k, MPI_DOUBLE, MPI_MAX, 0, c->comm);
  MPI_Reduce(sm->local, sum, (int)k, MPI_DOUBLE, MPI_SUM, 0, c->comm);
  sm->nlocal = 0;
  int rc = CS_OK;
  if (c->rank == 0) {
    for (long i = 0; i < k && rc == CS_OK; i++) {
      rc = cs_push(sm, worst[i], max);
      sm->avg_sum += sum[i] / c->np;
    }
  }
  free(worst);
  free(sum);
  return rc;
}

/* Rank 0 learns the first failing rank's reason (untimed). */
void cs_gather_why(cs_ctx *c, sampler *sm, char *why, size_t len) {
  int me = sm->err ? c->rank : c->np, first = c->np;
  MPI_Allreduce(&me, &first, 1, MPI_INT, MPI_MIN, c->comm);
  if (first == 0) {
    if (c->rank == 0) snprintf(why, len, "%s", sm->why);
  } else if (c->rank == first) {
    MPI_Send(sm->why, CS_ERRLEN, MPI_CHAR, 0, TAG_WHY, c->comm);
  } else if (c->rank == 0) {
    char buf[CS_ERRLEN];
    MPI_Recv(buf, CS_ERRLEN, MPI_CHAR, first, TAG_WHY, c->comm, MPI_STATUS_IGNORE);
    buf[CS_ERRLEN - 1] = 0;
    snprintf(why, len, "%s", buf);
  }
}

double cs_median_of(double *x, long n) {
  if (n <= 0) return NAN;
  cs_sort(x, n);
  return cs_quantile_sorted(x, n, 0.5);
}

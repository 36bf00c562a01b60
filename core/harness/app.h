/* What applications need besides the timed loop (app.c). */
#ifndef CS_APP_H
#define CS_APP_H

#include "sampler.h"

void cs_arrival_skew(cs_ctx *c, int nph, double *sk);
int cs_one_clock(MPI_Comm comm);
void cs_reduce_phases(cs_ctx *c, sampler *sm, int nph, cs_result *r);
void cs_resolved_params(const cs_ctx *c, char *out, size_t len);
int cs_app_setup(const cs_bench *b, cs_ctx *c, MPI_Comm node, cs_err *e);
double cs_copy_bandwidth(const cs_ctx *c, MPI_Comm node, double *alone);

#endif

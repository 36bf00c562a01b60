/* Cold buffers (--buffers cold) and the evicting stream (evicted), pools.c. */
#ifndef CS_POOLS_H
#define CS_POOLS_H

#include "sampler.h"

size_t cs_line_up(size_t n);
int cs_cold(const cs_bench *b, const cs_opts *o);
int cs_evicting(const cs_bench *b, const cs_opts *o);
size_t cs_pool_target(const cs_opts *o);
void cs_pool_prepare(const cs_bench *b, cs_ctx *c);
void cs_pool_check(const cs_bench *b, cs_ctx *c, sampler *sm, cs_result *r);
void cs_evict(cs_ctx *c);

#endif

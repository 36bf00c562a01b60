/* Buffers out of cache: cold pools (every sample's message in slots not
 * touched since they were filled) and the evicting stream (--buffers
 * evicted). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "pools.h"

/* --buffers evicted, untimed before each sample (of one operation): every
 * rank reads and writes memory larger than the last-level cache, as an
 * application's compute sweep does between two exchanges, which leaves
 * the buffers and state other than the message data (code, TLB entries,
 * the library's data) out of cache; then the ranks meet, so that no rank's
 * stream is timed by another.  The barrier itself runs the library's
 * progress path to the same peers and warms part of that state again: the
 * figure is a lower bound of what an application's first call after its
 * sweep sees (it has no barrier there). */
void cs_evict(cs_ctx *c) {
  double *e = c->ebuf;
  size_t n = c->ebytes / sizeof *e;
  for (size_t i = 0; i < n; i++) e[i] += 1.0;
  MPI_Barrier(c->comm);
}

/* Cold buffers.  The pools are sized once for the largest size: each holds
 * at least --cold-pool bytes (default twice the last-level cache) of slots
 * of the largest buffer.  At a size, slot k is filled by the benchmark's own
 * prepare as sample POOL_SAMPLE + k would be (each slot its own pattern);
 * after the size, its own check runs on every slot a timed message landed
 * in, so what the timed samples moved is what is checked. */
#define POOL_SAMPLE (1L << 40)

/* A buffer's bytes rounded up to whole cache lines: one slot. */
size_t cs_line_up(size_t n) { return (n + 63) / 64 * 64; }

int cs_cold(const cs_bench *b, const cs_opts *o) {
  return !strcmp(o->buffers, "cold") && cs_bench_buffered(b);
}

int cs_evicting(const cs_bench *b, const cs_opts *o) {
  return !strcmp(o->buffers, "evicted") && cs_bench_buffered(b);
}

size_t cs_pool_target(const cs_opts *o) {
  long llc = cs_llc_bytes();
  return o->cold_pool > 0 ? (size_t)o->cold_pool : (size_t)(llc > 0 ? 2 * llc : 64L << 20);
}

/* One rank's two pools for a benchmark whose largest buffer is c's (0: hot). */
double cs_cold_bytes(const cs_bench *b, const cs_ctx *c) {
  if (cs_evicting(b, c->opts)) return (double)cs_pool_target(c->opts);
  if (!cs_cold(b, c->opts)) return 0;
  return 2.0 * (double)(cs_pool_target(c->opts) + cs_line_up(b->buf_bytes(c)));
}

static void pool_slot(cs_ctx *c, long k) {
  c->sbuf = (char *)c->psbuf + (size_t)k * c->pstride;
  c->rbuf = (char *)c->prbuf + (size_t)k * c->pstride;
}

void cs_pool_prepare(const cs_bench *b, cs_ctx *c) {
  size_t bytes = b->buf_bytes(c);
  c->pstride = cs_line_up(bytes);
  if (c->pstride == 0) c->pstride = 64;
  size_t want = cs_pool_target(c->opts);
  c->pslots = (long)((want + c->pstride - 1) / c->pstride);
  if ((size_t)c->pslots * c->pstride > c->pcap) c->pslots = (long)(c->pcap / c->pstride);
  c->pmoved = 0;
  if (!c->active) return;
  void *sbuf = c->sbuf, *rbuf = c->rbuf;
  c->root = cs_root_of(c, 0);
  for (long k = 0; k < c->pslots; k++) {
    pool_slot(c, k);
    b->prepare(c, POOL_SAMPLE + k);
  }
  c->sbuf = sbuf;
  c->rbuf = rbuf;
}

/* Every slot a timed message landed in, checked; the testing fault
 * corrupt@SIZE spoils the middle one on the last rank. */
void cs_pool_check(const cs_bench *b, cs_ctx *c, sampler *sm, cs_result *r) {
  long used = c->pmoved < c->pslots ? c->pmoved : c->pslots;
  r->pool_bytes = (long)c->pcap;
  r->pool_slots = c->pslots;
  r->pool_checked = 0;
  r->llc_bytes = cs_llc_bytes();
  if (!c->active) return;
  void *sbuf = c->sbuf, *rbuf = c->rbuf;
  enum cs_fault kind;
  size_t at;
  if (c->opts->inject[0] && c->rank == c->np - 1 && used > 0 &&
      !cs_inject_parse(c->opts->inject, &kind, &at) && kind == CS_FAULT_CORRUPT &&
      at == c->size && c->size > 0) {
    unsigned char *v = (unsigned char *)c->prbuf + (size_t)(used / 2) * c->pstride;
    v[c->size / 2] ^= 0x40;
  }
  c->root = cs_root_of(c, 0);
  for (long k = 0; k < used; k++) {
    char why[CS_ERRLEN / 2];
    pool_slot(c, k);
    if (!sm->err && b->check(c, POOL_SAMPLE + k, why, sizeof why)) {
      sm->err = 1;
      snprintf(sm->why, sizeof sm->why, "rank %d, %s size %zu, cold pool slot %ld of %ld: %s",
               c->rank, b->name, c->size, k, c->pslots, why);
      fprintf(stderr, "cs-core: VALIDATION FAILED: %s\n", sm->why);
    }
  }
  r->pool_checked = used;
  c->sbuf = sbuf;
  c->rbuf = rbuf;
  c->pslots = 0;
}

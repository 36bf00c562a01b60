/* Validation runs: every size checked before its first timed sample and
 * at samples 1, 2, 4, 8, ... while they cost little, untimed, each message
 * of a window or loop in a slot of its own; and the testing faults. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pools.h"
#include "validate.h"

#define TAG_READY 901

/* Untimed synchronisation around a validation run: before it, once the
 * buffers are prepared, and after it, once every rank has checked, so that
 * the next timed sample never starts while a partner is still checking.
 * Point-to-point partners hand rank 0 a zero-byte "ready"; collectives use
 * a barrier (every timed collective sample also ends with one). */
static void sync_ranks(const cs_bench *b, cs_ctx *c) {
  if (b->timing == CS_TIME_MAX) {
    MPI_Barrier(c->comm);
    return;
  }
  if (c->peer < 0) return;
  if (c->rank == 0)
    MPI_Recv(NULL, 0, MPI_BYTE, c->peer, TAG_READY, c->comm, MPI_STATUS_IGNORE);
  else
    MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_READY, c->comm);
}

/* Testing only: act out a fault on the last rank, outside the timed region.
 * corrupt@SIZE flips a byte of the first message's slot: with a window or
 * a loop, that message is not the last to land, so only a check of every
 * message catches it.  Faults act after the validation run's kernel, or
 * before it (`before`) for benchmarks that corrupt before the data moves;
 * gpufail@SIZE always before: the run's first device copy fails. */
static void act_out_fault(const cs_bench *b, cs_ctx *c, long sample, int before) {
  enum cs_fault kind;
  size_t at;
  if (!c->opts->inject[0] || c->rank != c->np - 1 || sample != 0) return;
  if (cs_inject_parse(c->opts->inject, &kind, &at) || at != c->size) return;
  if (kind == CS_FAULT_GPUFAIL) {
    if (before) cs_path_fail_next(c);
    return;
  }
  if (before != b->corrupt_before) return;
  if (kind == CS_FAULT_CORRUPT && c->pslots) return; /* cold: the pool's check is tested */
  if (kind == CS_FAULT_HANG)
    for (;;) pause();
  if (kind == CS_FAULT_CRASH) raise(SIGSEGV);
  if (kind == CS_FAULT_CORRUPT && b->corrupt)
    b->corrupt(c);
  else if (kind == CS_FAULT_CORRUPT && c->size > 0) {
    unsigned char *v = cs_buf_get(c, c->rbuf, c->size);
    v[c->size / 2] ^= 0x40;
    cs_buf_put(c, c->rbuf, v, c->size);
  }
}

/* Validation runs happen before timed samples 0, 1, 2, 4, 8, ...: enough
 * to catch a broken MPI at every size, while the timed samples run back to
 * back on untouched buffers, as a plain benchmark loop would. */
int cs_validated_sample(long sample) { return sample >= 0 && (sample & (sample - 1)) == 0; }

#define VALID_SLOT_BYTES ((size_t)32 << 20) /* per buffer */

/* The validation run's layout: every message of a window or loop in its
 * own slot.  Where a window or loop would need more than VALID_SLOT_BYTES
 * per buffer (64 x 1 MiB and up), the validation run moves fewer messages
 * (a shorter window or loop), so that still every message it moves has a
 * slot of its own and is checked. */
static int slots_for(const cs_bench *b, cs_ctx *c, long *nmsgs, long *reps) {
  *reps = b->valid_reps > 0 ? b->valid_reps : 1;
  long per = b->msgs_per_rep ? b->msgs_per_rep(c) : 1;
  *nmsgs = *reps * per;
  c->stride = 0;
  c->nslots = 1;
  if (*nmsgs <= 1 || c->size == 0) return CS_OK;
  size_t stride = cs_line_up(c->size);
  long fit = (long)(VALID_SLOT_BYTES / stride);
  if (fit < 1) fit = 1;
  if (*nmsgs > fit) {
    if (*reps > 1) *reps = fit / per > 0 ? fit / per : 1; /* a shorter loop */
    *nmsgs = *reps * per;
    if (*nmsgs > fit) { /* and, for a window, a narrower one */
      c->vopts = *c->opts;
      c->vopts.window = fit < c->opts->window ? fit : c->opts->window;
      c->opts = &c->vopts;
      per = b->msgs_per_rep(c);
      *nmsgs = *reps * per;
    }
  }
  long n = *nmsgs;
  size_t need = (size_t)n * stride;
  if (need > c->vcap) {
    cs_buf_free(c, c->vsbuf);
    cs_buf_free(c, c->vrbuf);
    c->vsbuf = c->vrbuf = NULL;
    c->vcap = 0;
    if (cs_buf_pair(c, &c->vsbuf, &c->vrbuf, need)) return CS_ENOMEM;
    c->vcap = need;
  }
  c->stride = stride;
  c->nslots = n;
  return CS_OK;
}

/* An untimed run of the kernel that checks what it moved: prepare, sync,
 * run, check, and sync again before the next timed sample. */
int cs_validation_run(const cs_bench *b, cs_ctx *c, long sample, sampler *sm, long *checked) {
  long nmsgs = 0, reps = 1;
  void *sbuf = c->sbuf, *rbuf = c->rbuf;
  const cs_opts *opts = c->opts;
  int rc = CS_OK;
  if (c->active && (rc = slots_for(b, c, &nmsgs, &reps))) return rc;
  int slotted = c->active && c->stride;
  if (slotted) {
    c->sbuf = c->vsbuf;
    c->rbuf = c->vrbuf;
  }
  c->root = cs_root_of(c, sample);
  if (c->active) b->prepare(c, sample);
  if (c->active) act_out_fault(b, c, sample, 1);
  sync_ranks(b, c);
  if (c->active) {
    int bad = b->run(c, reps);
    if (bad) {
      cs_abort("rank %d: %s failed in %s at %zu bytes (validation run): %s", c->rank,
               c->tp->name, b->name, c->size, cs_transport_strerror(bad));
    }
  }
  if (b->timing == CS_TIME_MAX) MPI_Barrier(c->comm);
  if (c->active) {
    act_out_fault(b, c, sample, 0);
    char why[CS_ERRLEN / 2];
    /* Every rank checks at every validation run, failed or not: a check
     * may be collective (jacobi gathers the grid to rank 0), and a rank
     * that skipped it after its first failure left the others waiting in
     * it (a hang, when the load let a second validation run in before the
     * check point).  The first failure is the one kept. */
    int bad = b->check(c, sample, why, sizeof why);
    if (bad && !sm->err) {
      sm->err = 1;
      snprintf(sm->why, sizeof sm->why, "rank %d, %s size %zu sample %ld: %s", c->rank, b->name,
               c->size, sample, why);
      fprintf(stderr, "cs-core: VALIDATION FAILED: %s\n", sm->why);
    }
    *checked += nmsgs;
  }
  sync_ranks(b, c);
  c->sbuf = sbuf;
  c->rbuf = rbuf;
  c->opts = opts;
  c->stride = 0;
  c->nslots = 1;
  return CS_OK;
}

/* Point-to-point benchmarks: each is a kernel plus what it sends and
 * checks.  Rank 0 pairs with its peer (the last rank); others sit out. */
#include <string.h>

#include "cs.h"


static size_t one_buffer(const cs_ctx *c) { return c->size; }

/* Validation runs give every message its own slot (cs_slot): the sender
 * fills slot m with message m's pattern, the receiver poisons its slots
 * and checks every one afterwards, so a window or loop is checked whole,
 * not only in the message that landed last. */
static void fill_slots(cs_ctx *c, long sample) {
  for (long m = 0; m < c->nslots; m++)
    cs_buf_fill(c, cs_slot(c, c->sbuf, m), c->size, cs_msg_seed(c->size, c->rank, sample, m));
}

static void poison_slots(cs_ctx *c) {
  for (long m = 0; m < c->nslots; m++) cs_buf_poison(c, cs_slot(c, c->rbuf, m), c->size);
}

static int check_slots(cs_ctx *c, long nslots, long sample, char *why, size_t len) {
  for (long m = 0; m < nslots; m++) {
    unsigned got = 0, want = 0;
    long bad = cs_buf_check(c, cs_slot(c, c->rbuf, m), c->size,
                            cs_msg_seed(c->size, c->peer, sample, m), &got, &want);
    if (bad >= 0) {
      snprintf(why, len, "message %ld of %ld from rank %d: byte %ld is 0x%02x, expected 0x%02x", m,
               nslots, c->peer, bad, got, want);
      return 1;
    }
  }
  return 0;
}

/* Both partners send, both check. */
static void prep_both(cs_ctx *c, long sample) {
  fill_slots(c, sample);
  poison_slots(c);
}

static int check_from_peer(cs_ctx *c, long sample, char *why, size_t len) {
  return check_slots(c, c->nslots, sample, why, len);
}

/* Only rank 0 sends data; its peer checks. */
static void prep_sender(cs_ctx *c, long sample) {
  if (c->rank == 0)
    fill_slots(c, sample);
  else
    poison_slots(c);
}

static int check_at_receiver(cs_ctx *c, long sample, char *why, size_t len) {
  return c->rank == 0 ? 0 : check_slots(c, c->nslots, sample, why, len);
}

static long msgs_window(const cs_ctx *c) { return c->opts->window; }
static long msgs_train(const cs_ctx *c) { return c->opts->loggp_n; }

/* Ping-pong: rank 0 sends, the peer returns its own message. */
static int run_pingpong(cs_ctx *c, long reps) {
  const cs_transport *t = c->tp;
  int rc = 0;
  if (c->rank == 0) {
    for (long i = 0; i < reps && !rc; i++) {
      rc = t->send(c, cs_slot(c, c->sbuf, i), c->size, c->peer);
      if (!rc) rc = t->recv(c, cs_slot(c, c->rbuf, i), c->size, c->peer);
    }
  } else {
    for (long i = 0; i < reps && !rc; i++) {
      rc = t->recv(c, cs_slot(c, c->rbuf, i), c->size, c->peer);
      if (!rc) rc = t->send(c, cs_slot(c, c->sbuf, i), c->size, c->peer);
    }
  }
  return rc;
}

/* Send loop: `reps` blocking sends, then one acknowledgement (the UMBC report's
 * "latency"; the implementation may batch or buffer the sends). */
static int run_sendloop(cs_ctx *c, long reps) {
  const cs_transport *t = c->tp;
  int ack = 0, rc = 0;
  if (c->rank == 0) {
    for (long i = 0; i < reps && !rc; i++) rc = t->send(c, cs_slot(c, c->sbuf, i), c->size, c->peer);
    if (!rc) rc = t->recv(c, &ack, sizeof ack, c->peer);
  } else {
    for (long i = 0; i < reps && !rc; i++) rc = t->recv(c, cs_slot(c, c->rbuf, i), c->size, c->peer);
    if (!rc) rc = t->send(c, &ack, sizeof ack, c->peer);
  }
  return rc;
}

/* Unidirectional bandwidth: a window of non-blocking sends, then an ack. */
static int run_bw(cs_ctx *c, long reps) {
  const cs_transport *t = c->tp;
  int w = (int)c->opts->window, ack = 0, rc = 0;
  for (long i = 0; i < reps && !rc; i++) {
    if (c->rank == 0) {
      for (int j = 0; j < w && !rc; j++)
        rc = t->isend(c, cs_slot(c, c->sbuf, i * w + j), c->size, c->peer, j);
      if (!rc) rc = t->waitall(c, w);
      if (!rc) rc = t->recv(c, &ack, sizeof ack, c->peer);
    } else {
      for (int j = 0; j < w && !rc; j++)
        rc = t->irecv(c, cs_slot(c, c->rbuf, i * w + j), c->size, c->peer, j);
      if (!rc) rc = t->waitall(c, w);
      if (!rc) rc = t->send(c, &ack, sizeof ack, c->peer);
    }
  }
  return rc;
}

/* Bidirectional bandwidth: both partners post a window each way. */
static int run_bibw(cs_ctx *c, long reps) {
  const cs_transport *t = c->tp;
  int w = (int)c->opts->window, rc = 0;
  for (long i = 0; i < reps && !rc; i++) {
    for (int j = 0; j < w && !rc; j++)
      rc = t->irecv(c, cs_slot(c, c->rbuf, i * w + j), c->size, c->peer, j);
    for (int j = 0; j < w && !rc; j++)
      rc = t->isend(c, cs_slot(c, c->sbuf, i * w + j), c->size, c->peer, w + j);
    if (!rc) rc = t->waitall(c, 2 * w);
  }
  return rc;
}

const cs_bench cs_bench_latency = {
    .name = "latency", .group = "p2p", .gpu = 1, .metric = "one-way time (round trip / 2)",
    .desc = "ping-pong with blocking MPI_Send/MPI_Recv; time = round trip / 2",
    .min_np = 2, .any_transport = 1, .ops_per_rep = 2, .bytes_per_op = 0, .has_rate = 0,
    .buf_bytes = one_buffer, .prepare = prep_both, .run = run_pingpong, .check = check_from_peer,
};

const cs_bench cs_bench_roundtrip = {
    .name = "roundtrip", .group = "p2p", .gpu = 1, .metric = "round-trip time", .primary = "rate_per_s",
    .desc = "ping-pong round trips; rate = round trips per second",
    .min_np = 2, .any_transport = 1, .ops_per_rep = 1, .bytes_per_op = 0, .has_rate = 1,
    .buf_bytes = one_buffer, .prepare = prep_both, .run = run_pingpong, .check = check_from_peer,
};

const cs_bench cs_bench_sendloop = {
    .name = "sendloop", .group = "p2p", .gpu = 1, .metric = "time per send",
    .desc = "many blocking sends then one acknowledgement; time per send",
    .min_np = 2, .any_transport = 1, .ops_per_rep = 1, .bytes_per_op = 1, .has_rate = 1,
    .min_sample_us = 100, /* a loop of sends, not one: the UMBC report used 5000 */
    .valid_reps = 64,     /* validation checks a loop of 64 sends */
    .buf_bytes = one_buffer, .prepare = prep_sender, .run = run_sendloop,
    .check = check_at_receiver,
};

const cs_bench cs_bench_bw = {
    .name = "bw", .group = "p2p", .gpu = 1, .metric = "time per message in a window", .primary = "mb_per_s",
    .desc = "unidirectional bandwidth: window of MPI_Isend, then an acknowledgement",
    .min_np = 2, .any_transport = 1, .ops_per_rep_window = 1, .bytes_per_op = 1, .has_rate = 1,
    .msgs_per_rep = msgs_window,
    .buf_bytes = one_buffer, .prepare = prep_sender, .run = run_bw, .check = check_at_receiver,
};

const cs_bench cs_bench_bibw = {
    .name = "bibw", .group = "p2p", .gpu = 1, .metric = "time per message pair in a window",
    .primary = "mb_per_s",
    .desc = "bidirectional bandwidth: both partners send a window at once",
    .min_np = 2, .any_transport = 1, .ops_per_rep_window = 1, .bytes_per_op = 2, .has_rate = 0,
    .msgs_per_rep = msgs_window, .buf_bytes = one_buffer, .prepare = prep_both, .run = run_bibw, .check = check_from_peer,
};

/* LogGP parameters the netgauge way: PRTT(n, d, s) is the time for rank 0
 * to send n messages of s bytes, waiting d us after each but the last, and
 * get one s-byte reply once its partner has all n.  Three trains give
 * L, o, g and G (src/commscope/analysis/loggp.py). */
static void spin_us(double d) {
  if (d <= 0) return;
  double until = cs_now_us() + d;
  while (cs_now_us() < until) {
  }
}

/* d_send: rank 0 waits after each send; d_recv: its partner waits after
 * each receive, which makes the receiver the bottleneck (o_r). */
static int prtt(cs_ctx *c, long reps, long n, double d_send, double d_recv) {
  const cs_transport *t = c->tp;
  int rc = 0;
  for (long i = 0; i < reps && !rc; i++) {
    if (c->rank == 0) {
      for (long k = 0; k < n && !rc; k++) {
        rc = t->send(c, cs_slot(c, c->sbuf, i * n + k), c->size, c->peer);
        if (k + 1 < n) spin_us(d_send);
      }
      if (!rc) rc = t->recv(c, cs_slot(c, c->rbuf, i), c->size, c->peer);
    } else {
      for (long k = 0; k < n && !rc; k++) {
        rc = t->recv(c, cs_slot(c, c->rbuf, i * n + k), c->size, c->peer);
        if (k + 1 < n) spin_us(d_recv);
      }
      if (!rc) rc = t->send(c, cs_slot(c, c->sbuf, i), c->size, c->peer);
    }
  }
  return rc;
}

static int run_prtt_1(cs_ctx *c, long reps) { return prtt(c, reps, 1, 0, 0); }
static int run_prtt_n(cs_ctx *c, long reps) { return prtt(c, reps, c->opts->loggp_n, 0, 0); }
static int run_prtt_nd(cs_ctx *c, long reps) {
  return prtt(c, reps, c->opts->loggp_n, c->opts->loggp_delay_us, 0);
}
static int run_prtt_ndr(cs_ctx *c, long reps) {
  return prtt(c, reps, c->opts->loggp_n, 0, c->opts->loggp_delay_us);
}

/* The train's receiver checks all n messages; rank 0 its one reply. */
static int check_train(cs_ctx *c, long sample, char *why, size_t len) {
  return check_slots(c, c->rank == 0 ? 1 : c->nslots, sample, why, len);
}

#define PRTT .group = "loggp", .min_np = 2, .any_transport = 1, .ops_per_rep = 1, \
             .buf_bytes = one_buffer, .prepare = prep_both, .check = check_train

const cs_bench cs_bench_loggp_1 = {
    .name = "loggp_1", PRTT, .metric = "PRTT(1,0,s)", .run = run_prtt_1,
    .desc = "LogGP: one message and its reply, PRTT(1,0,s)",
};
const cs_bench cs_bench_loggp_n = {
    .name = "loggp_n", PRTT, .msgs_per_rep = msgs_train, .metric = "PRTT(n,0,s)", .run = run_prtt_n,
    .uses = CS_USES_LOGGP_N,
    .desc = "LogGP: n back-to-back messages, then one reply, PRTT(n,0,s)",
};
const cs_bench cs_bench_loggp_nd = {
    .name = "loggp_nd", PRTT, .msgs_per_rep = msgs_train, .metric = "PRTT(n,d,s)", .run = run_prtt_nd,
    .uses = CS_USES_LOGGP_N | CS_USES_LOGGP_DELAY,
    .desc = "LogGP: n messages d us apart, then one reply, PRTT(n,d,s)",
};
const cs_bench cs_bench_loggp_ndr = {
    .name = "loggp_ndr", PRTT, .msgs_per_rep = msgs_train, .metric = "PRTT(n,d,s), receiver waits", .run = run_prtt_ndr,
    .uses = CS_USES_LOGGP_N | CS_USES_LOGGP_DELAY,
    .desc = "LogGP: n messages, the receiver waits d us after each, then one reply",
};

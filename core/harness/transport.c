/* The two transports: MPI, and the channel of Chai, Hartono and Panda's intra-node design. */
#include <stdio.h>
#include <string.h>

#include "cs.h"

#define TAG_T 7

const char *cs_transport_strerror(int rc) {
  static char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  switch (rc) {
    case 0: return "no error";
    case CS_TP_EGPU: return cs_path_error();
    case CS_TP_ENOTICE: return "an IPC notice did not match its receive";
    case CS_TP_ETOOBIG: return "a message over MPI's int count (2 GiB - 1 bytes)";
  }
  if (rc < 0) return cs_chan_strerror(rc);
  if (MPI_Error_string(rc, buf, &len) != MPI_SUCCESS) snprintf(buf, sizeof buf, "MPI error %d", rc);
  return buf;
}

/* -- MPI ------------------------------------------------------------------- */
/* Counts are ints: a larger message is refused, never truncated. */
static int m_send(cs_ctx *c, const void *buf, size_t n, int peer) {
  if (n > CS_MSG_MAX) return CS_TP_ETOOBIG;
  return MPI_Send(buf, (int)n, MPI_BYTE, peer, TAG_T, c->comm);
}
static int m_recv(cs_ctx *c, void *buf, size_t n, int peer) {
  if (n > CS_MSG_MAX) return CS_TP_ETOOBIG;
  return MPI_Recv(buf, (int)n, MPI_BYTE, peer, TAG_T, c->comm, MPI_STATUS_IGNORE);
}
static int m_isend(cs_ctx *c, const void *buf, size_t n, int peer, int slot) {
  if (n > CS_MSG_MAX) return CS_TP_ETOOBIG;
  return MPI_Isend(buf, (int)n, MPI_BYTE, peer, TAG_T, c->comm, &c->reqs[slot]);
}
static int m_irecv(cs_ctx *c, void *buf, size_t n, int peer, int slot) {
  if (n > CS_MSG_MAX) return CS_TP_ETOOBIG;
  return MPI_Irecv(buf, (int)n, MPI_BYTE, peer, TAG_T, c->comm, &c->reqs[slot]);
}
static int m_waitall(cs_ctx *c, int n) { return MPI_Waitall(n, c->reqs, c->stats); }
static int m_barrier(cs_ctx *c) { return MPI_Barrier(c->comm); }
static int m_alltoall(cs_ctx *c, const void *s, void *r, size_t block) {
  if (block > CS_MSG_MAX) return CS_TP_ETOOBIG;
  return MPI_Alltoall(s, (int)block, MPI_BYTE, r, (int)block, MPI_BYTE, c->comm);
}

const cs_transport cs_transport_mpi = {
    .name = "mpi", .send = m_send, .recv = m_recv, .isend = m_isend, .irecv = m_irecv,
    .waitall = m_waitall, .barrier = m_barrier, .alltoall = m_alltoall,
};

/* -- the channel ----------------------------------------------------------- */
static int c_send(cs_ctx *c, const void *buf, size_t n, int peer) {
  return cs_chan_send(c->chan, peer, buf, n);
}
static int c_recv(cs_ctx *c, void *buf, size_t n, int peer) {
  return cs_chan_recv(c->chan, peer, buf, n, NULL);
}
static int c_isend(cs_ctx *c, const void *buf, size_t n, int peer, int slot) {
  return cs_chan_isend(c->chan, peer, buf, n, &c->creqs[slot]);
}
static int c_irecv(cs_ctx *c, void *buf, size_t n, int peer, int slot) {
  return cs_chan_irecv(c->chan, peer, buf, n, &c->creqs[slot]);
}
static int c_waitall(cs_ctx *c, int n) { return cs_chan_waitall(c->chan, n, c->creqs); }
static int c_barrier(cs_ctx *c) { return cs_chan_barrier(c->chan); }
/* Pairwise: receives posted first, then a send to every rank in a rotated
 * order, as Chai, Hartono and Panda measured its alltoall over the channel. */
static int c_alltoall(cs_ctx *c, const void *s, void *r, size_t block) {
  int k = 0, rc = 0;
  for (int p = 0; p < c->np && !rc; p++)
    if (p != c->rank) rc = cs_chan_irecv(c->chan, p, (char *)r + (size_t)p * block, block,
                                         &c->creqs[k++]);
  for (int j = 1; j < c->np && !rc; j++) {
    int to = (c->rank + j) % c->np;
    rc = cs_chan_send(c->chan, to, (const char *)s + (size_t)to * block, block);
  }
  memcpy((char *)r + (size_t)c->rank * block, (const char *)s + (size_t)c->rank * block, block);
  return rc ? rc : cs_chan_waitall(c->chan, k, c->creqs);
}

const cs_transport cs_transport_chan = {
    .name = "chan", .send = c_send, .recv = c_recv, .isend = c_isend, .irecv = c_irecv,
    .waitall = c_waitall, .barrier = c_barrier, .alltoall = c_alltoall,
};

/* The ipc path: each partner maps the other's receive buffer once (path.c,
 * at allocation); a message is a device-to-device copy into it, then a small
 * MPI notice (offset, bytes) the receiver checks against its receive. */
#include <stdio.h>

#include "path.h"

/* The copy into the peer's buffer, then its notice. */
static int ipc_put(cs_ctx *c, const void *buf, size_t n, long hdr[2]) {
  region *r = cs_path_find(c->path, buf);
  if (!r || !r->peer) return 1;
  hdr[0] = (long)((const char *)buf - r->base);
  hdr[1] = (long)n;
  return cs_gpu_copy_async(r->peer + hdr[0], buf, n) ? CS_TP_EGPU : 0;
}

static int ipc_verify(cs_ctx *c, const void *where, size_t n, const long hdr[2]) {
  region *r = cs_path_find(c->path, where);
  long off = r ? (long)((const char *)where - r->base) : -1;
  if (hdr[0] == off && hdr[1] == (long)n) return 0;
  fprintf(stderr, "cs-core: rank %d: an IPC notice says %ld bytes at offset %ld, the receive "
          "expects %zu at %ld\n", c->rank, hdr[1], hdr[0], n, off);
  return CS_TP_ENOTICE;
}

static int i_send(cs_ctx *c, const void *buf, size_t n, int peer) {
  long hdr[2];
  int rc = ipc_put(c, buf, n, hdr);
  if (rc > 0) return cs_transport_mpi.send(c, buf, n, peer);
  if (rc || cs_gpu_sync()) return CS_TP_EGPU;
  return MPI_Send(hdr, 2, MPI_LONG, peer, TAG_IPC, c->comm);
}

static int i_recv(cs_ctx *c, void *buf, size_t n, int peer) {
  long hdr[2];
  if (!cs_path_find(c->path, buf)) return cs_transport_mpi.recv(c, buf, n, peer);
  int rc = MPI_Recv(hdr, 2, MPI_LONG, peer, TAG_IPC, c->comm, MPI_STATUS_IGNORE);
  return rc ? rc : ipc_verify(c, buf, n, hdr);
}

static int i_isend(cs_ctx *c, const void *buf, size_t n, int peer, int slot) {
  pending *q = &c->path->pend[slot];
  int rc = ipc_put(c, buf, n, q->hdr);
  if (rc > 0) return cs_transport_mpi.isend(c, buf, n, peer, slot);
  q->send = !rc;
  c->reqs[slot] = MPI_REQUEST_NULL; /* the notice goes at waitall, once the copy is done */
  return rc;
}

static int i_irecv(cs_ctx *c, void *buf, size_t n, int peer, int slot) {
  pending *q = &c->path->pend[slot];
  if (!cs_path_find(c->path, buf)) return cs_transport_mpi.irecv(c, buf, n, peer, slot);
  q->recv = 1;
  q->where = buf;
  q->n = n;
  return MPI_Irecv(q->hdr, 2, MPI_LONG, peer, TAG_IPC, c->comm, &c->reqs[slot]);
}

static int i_waitall(cs_ctx *c, int n) {
  int sends = 0, rc = 0;
  for (int i = 0; i < n; i++) sends += c->path->pend[i].send;
  if (sends && cs_gpu_sync()) return CS_TP_EGPU;
  for (int i = 0; i < n && !rc; i++) {
    pending *q = &c->path->pend[i];
    if (q->send) rc = MPI_Isend(q->hdr, 2, MPI_LONG, c->peer, TAG_IPC, c->comm, &c->reqs[i]);
    q->send = 0;
  }
  if (!rc) rc = MPI_Waitall(n, c->reqs, c->stats);
  for (int i = 0; i < n; i++) {
    pending *q = &c->path->pend[i];
    if (q->recv && !rc) rc = ipc_verify(c, q->where, q->n, q->hdr);
    q->recv = 0;
  }
  return rc;
}

const cs_transport cs_path_ipc = {
    .name = "ipc", .send = i_send, .recv = i_recv, .isend = i_isend, .irecv = i_irecv,
    .waitall = i_waitall,
};


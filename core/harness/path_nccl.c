/* The nccl path: NCCL's send, receive and collectives over a communicator
 * path.c opened (its id carried by MPI); acknowledgements travel in a
 * device word. */
#include "path.h"

static const void *n_place(cs_ctx *c, const void *buf) {
  return cs_path_find(c->path, buf) ? buf : c->path->ack; /* acknowledgements: a device word */
}

static int n_send(cs_ctx *c, const void *buf, size_t n, int peer) {
  const void *p = n_place(c, buf);
  return cs_nccl_send(p, p == buf ? n : 4, peer) || cs_gpu_sync() ? CS_TP_EGPU : 0;
}

static int n_recv(cs_ctx *c, void *buf, size_t n, int peer) {
  void *p = (void *)n_place(c, buf);
  return cs_nccl_recv(p, p == buf ? n : 4, peer) || cs_gpu_sync() ? CS_TP_EGPU : 0;
}

static int n_open_group(cs_ctx *c) {
  if (c->path->group) return 0;
  c->path->group = 1;
  return cs_nccl_group(1);
}

static int n_isend(cs_ctx *c, const void *buf, size_t n, int peer, int slot) {
  (void)slot;
  return n_open_group(c) || cs_nccl_send(buf, n, peer) ? CS_TP_EGPU : 0;
}

static int n_irecv(cs_ctx *c, void *buf, size_t n, int peer, int slot) {
  (void)slot;
  return n_open_group(c) || cs_nccl_recv(buf, n, peer) ? CS_TP_EGPU : 0;
}

static int n_waitall(cs_ctx *c, int n) {
  (void)n;
  int rc = c->path->group ? cs_nccl_group(0) : 0;
  c->path->group = 0;
  return rc || cs_gpu_sync() ? CS_TP_EGPU : 0;
}

static int n_alltoall(cs_ctx *c, const void *s, void *r, size_t block) {
  int rc = cs_nccl_group(1);
  for (int p = 0; p < c->np && !rc; p++) {
    if (p == c->rank) continue;
    rc = cs_nccl_send((const char *)s + (size_t)p * block, block, p) ||
         cs_nccl_recv((char *)r + (size_t)p * block, block, p);
  }
  if (!rc) rc = cs_nccl_group(0);
  size_t me = (size_t)c->rank * block;
  if (!rc) rc = cs_gpu_copy_async((char *)r + me, (const char *)s + me, block);
  return rc || cs_gpu_sync() ? CS_TP_EGPU : 0;
}

static int n_bcast(cs_ctx *c, void *buf, size_t n, int root) {
  (void)c;
  return cs_nccl_bcast(buf, n, root) || cs_gpu_sync() ? CS_TP_EGPU : 0;
}

static int n_allreduce(cs_ctx *c, const void *s, void *r, size_t count) {
  int dbl = cs_dtype_size(c->opts) == sizeof(double);
  return cs_nccl_allreduce(s, r, count, dbl) || cs_gpu_sync() ? CS_TP_EGPU : 0;
}

static int n_barrier(cs_ctx *c) { return MPI_Barrier(c->comm); }

const cs_transport cs_path_nccl = {
    .name = "nccl", .send = n_send, .recv = n_recv, .isend = n_isend, .irecv = n_irecv,
    .waitall = n_waitall, .barrier = n_barrier, .alltoall = n_alltoall, .bcast = n_bcast,
    .allreduce = n_allreduce,
};


/* The staged paths (path.c's comment): staged and staged-pageable copy each
 * message through host memory and send it with MPI; staged-pipelined sends
 * it in chunks, each copied as the one before it travels, and shares the
 * staged path's nonblocking calls and collectives. */
#include <string.h>

#include "path.h"

static int staged_out(cs_ctx *c, const void *buf, size_t n, const void **host) {
  region *r = cs_path_find(c->path, buf);
  *host = buf;
  if (!r) return 0; /* an acknowledgement on the stack */
  *host = r->host + ((const char *)buf - r->base);
  return cs_path_to_host(c, (void *)*host, buf, n);
}

static void *staged_in(cs_ctx *c, void *buf) {
  region *r = cs_path_find(c->path, buf);
  return r ? r->host + ((char *)buf - r->base) : buf;
}

static int s_send(cs_ctx *c, const void *buf, size_t n, int peer) {
  const void *h;
  if (staged_out(c, buf, n, &h)) return CS_TP_EGPU;
  return cs_transport_mpi.send(c, h, n, peer);
}

static int s_recv(cs_ctx *c, void *buf, size_t n, int peer) {
  void *h = staged_in(c, buf);
  int rc = cs_transport_mpi.recv(c, h, n, peer);
  if (!rc && h != buf && cs_path_from_host(c, buf, h, n)) rc = CS_TP_EGPU;
  return rc;
}

static int s_isend(cs_ctx *c, const void *buf, size_t n, int peer, int slot) {
  const void *h;
  if (staged_out(c, buf, n, &h)) return CS_TP_EGPU;
  return cs_transport_mpi.isend(c, h, n, peer, slot);
}

static int s_irecv(cs_ctx *c, void *buf, size_t n, int peer, int slot) {
  void *h = staged_in(c, buf);
  pending *q = &c->path->pend[slot];
  q->dev = buf;
  q->host = h;
  q->n = n;
  q->recv = h != buf;
  return cs_transport_mpi.irecv(c, h, n, peer, slot);
}

static int s_waitall(cs_ctx *c, int n) {
  int rc = cs_transport_mpi.waitall(c, n);
  for (int i = 0; i < n && !rc; i++) {
    pending *q = &c->path->pend[i];
    if (q->recv && cs_path_from_host(c, q->dev, q->host, q->n)) rc = CS_TP_EGPU;
    q->recv = 0;
  }
  return rc;
}

static int s_alltoall(cs_ctx *c, const void *s, void *r, size_t block) {
  const void *hs;
  size_t all = block * (size_t)c->np;
  if (staged_out(c, s, all, &hs)) return CS_TP_EGPU;
  void *hr = staged_in(c, r);
  int rc = cs_transport_mpi.alltoall(c, hs, hr, block);
  return rc ? rc : (cs_path_from_host(c, r, hr, all) ? CS_TP_EGPU : 0);
}

static int s_bcast(cs_ctx *c, void *buf, size_t n, int root) {
  const void *h = buf;
  if (n > CS_MSG_MAX) return CS_TP_ETOOBIG;
  if (c->rank == root && staged_out(c, buf, n, &h)) return CS_TP_EGPU;
  if (c->rank != root) h = staged_in(c, buf);
  int rc = MPI_Bcast((void *)h, (int)n, MPI_BYTE, root, c->comm);
  if (!rc && c->rank != root && cs_path_from_host(c, buf, h, n)) rc = CS_TP_EGPU;
  return rc;
}

static int s_allreduce(cs_ctx *c, const void *s, void *r, size_t count) {
  size_t n = count * cs_dtype_size(c->opts);
  const void *hs;
  if (count > CS_MSG_MAX) return CS_TP_ETOOBIG;
  if (staged_out(c, s, n, &hs)) return CS_TP_EGPU;
  void *hr = staged_in(c, r);
  int rc = MPI_Allreduce(hs, hr, (int)count, cs_dtype(c->opts), MPI_SUM, c->comm);
  return rc ? rc : (cs_path_from_host(c, r, hr, n) ? CS_TP_EGPU : 0);
}

const cs_transport cs_path_staged = {
    .name = "staged", .send = s_send, .recv = s_recv, .isend = s_isend, .irecv = s_irecv,
    .waitall = s_waitall, .alltoall = s_alltoall, .bcast = s_bcast, .allreduce = s_allreduce,
};

/* The stand-in copies at once; on a device the copies are queued on the
 * core's stream and a mark follows each. */
static int out_async(const cs_ctx *c, void *dst, const void *src, size_t n, int k) {
  if (cs_path_injected(c, "the queued copy to host")) return 1;
  if (!on_device(c)) {
    memcpy(dst, src, n);
    return 0;
  }
  return cs_gpu_to_host_async(dst, src, n) || cs_gpu_mark(k);
}

static int in_async(const cs_ctx *c, void *dst, const void *src, size_t n) {
  if (cs_path_injected(c, "the queued copy to the device")) return 1;
  if (!on_device(c)) {
    memcpy(dst, src, n);
    return 0;
  }
  return cs_gpu_from_host_async(dst, src, n);
}

static int wait_mark(const cs_ctx *c, int k) { return on_device(c) ? cs_gpu_wait_mark(k) : 0; }
static int drain(const cs_ctx *c) { return on_device(c) ? cs_gpu_sync() : 0; }

/* Chunks of --stage-chunk bytes (default 256 KiB), at most CS_GPU_MARKS of
 * them: a larger message gets larger chunks.  Both ends compute the same. */
static size_t chunking(const cs_ctx *c, size_t n, int *k) {
  size_t cs = c->opts->stage_chunk > 0 ? (size_t)c->opts->stage_chunk : (size_t)256 << 10;
  if ((n + cs - 1) / cs > CS_GPU_MARKS) cs = (n + CS_GPU_MARKS - 1) / CS_GPU_MARKS;
  *k = n ? (int)((n + cs - 1) / cs) : 1;
  return cs;
}

static size_t piece(size_t n, size_t cs, int i) {
  size_t off = (size_t)i * cs;
  return off >= n ? 0 : (n - off < cs ? n - off : cs);
}

static int p_send(cs_ctx *c, const void *buf, size_t n, int peer) {
  region *r = cs_path_find(c->path, buf);
  if (!r) return cs_transport_mpi.send(c, buf, n, peer); /* an acknowledgement */
  char *h = r->host + ((const char *)buf - r->base);
  int k;
  size_t cs = chunking(c, n, &k);
  for (int i = 0; i < k; i++) /* every copy queued at once: the copy engine streams */
    if (out_async(c, h + (size_t)i * cs, (const char *)buf + (size_t)i * cs, piece(n, cs, i), i))
      return CS_TP_EGPU;
  for (int i = 0; i < k; i++) {
    if (wait_mark(c, i)) return CS_TP_EGPU;
    int rc = MPI_Send(h + (size_t)i * cs, (int)piece(n, cs, i), MPI_BYTE, peer, TAG_CHUNK,
                      c->comm);
    if (rc) return rc;
  }
  return 0;
}

static int p_recv(cs_ctx *c, void *buf, size_t n, int peer) {
  region *r = cs_path_find(c->path, buf);
  if (!r) return cs_transport_mpi.recv(c, buf, n, peer);
  char *h = r->host + ((char *)buf - r->base);
  int k, rc = 0;
  size_t cs = chunking(c, n, &k);
  MPI_Request req[CS_GPU_MARKS];
  for (int i = 0; i < k; i++)
    MPI_Irecv(h + (size_t)i * cs, (int)piece(n, cs, i), MPI_BYTE, peer, TAG_CHUNK, c->comm,
              &req[i]);
  for (int i = 0; i < k; i++) { /* each chunk to the device as it lands */
    int e = MPI_Wait(&req[i], MPI_STATUS_IGNORE);
    if (!rc && e) rc = e;
    if (!rc && in_async(c, (char *)buf + (size_t)i * cs, h + (size_t)i * cs, piece(n, cs, i)))
      rc = CS_TP_EGPU;
  }
  return rc ? rc : (drain(c) ? CS_TP_EGPU : 0);
}

static int p_bcast(cs_ctx *c, void *buf, size_t n, int root) {
  region *r = cs_path_find(c->path, buf);
  if (!r) return MPI_Bcast(buf, (int)n, MPI_BYTE, root, c->comm);
  char *h = r->host + ((char *)buf - r->base);
  int k, me = c->rank == root;
  size_t cs = chunking(c, n, &k);
  for (int i = 0; me && i < k; i++)
    if (out_async(c, h + (size_t)i * cs, (char *)buf + (size_t)i * cs, piece(n, cs, i), i))
      return CS_TP_EGPU;
  for (int i = 0; i < k; i++) {
    if (me && wait_mark(c, i)) return CS_TP_EGPU;
    int rc = MPI_Bcast(h + (size_t)i * cs, (int)piece(n, cs, i), MPI_BYTE, root, c->comm);
    if (rc) return rc;
    if (!me && in_async(c, (char *)buf + (size_t)i * cs, h + (size_t)i * cs, piece(n, cs, i)))
      return CS_TP_EGPU;
  }
  return me ? 0 : (drain(c) ? CS_TP_EGPU : 0);
}

const cs_transport cs_path_pipelined = {
    .name = "staged-pipelined", .send = p_send, .recv = p_recv, .isend = s_isend,
    .irecv = s_irecv, .waitall = s_waitall, .alltoall = s_alltoall, .bcast = p_bcast,
    .allreduce = s_allreduce,
};


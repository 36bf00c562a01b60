/* GPU paths: where a benchmark's buffers live and what moves them.
 *
 *   host             host memory, MPI (the reference)
 *   staged           device memory; each message copied to page-locked host
 *                    memory, sent with MPI, copied to the device at the far end
 *   staged-pageable  the same through ordinary (pageable) host memory
 *   staged-pipelined staged in chunks (--stage-chunk): a blocking send
 *                    queues every chunk's copy to the host and sends each as
 *                    its copy ends, the receiver copies each chunk to the
 *                    device as it arrives; bcast likewise; the nonblocking
 *                    calls and the other collectives stage whole messages
 *   cuda-aware       device pointers handed to MPI; only where the library
 *                    says it supports CUDA (COMMSCOPE_FORCE_CUDA_AWARE=1 forces)
 *   ipc              CUDA IPC: each partner maps the other's receive buffer
 *                    once; a message is a device-to-device copy into it, an
 *                    event waited for, then a small MPI notice (offset, bytes)
 *   nccl             NCCL send/recv and collectives over a communicator
 *                    whose id MPI carried
 *
 * COMMSCOPE_GPU_STANDIN=host (testing only) runs staged, staged-pageable,
 * staged-pipelined and cuda-aware with host memory standing in for the
 * device: the paths' logic, with every copy, without a GPU.  Records say so. */
#include <stdlib.h>
#include <string.h>

#include "cs.h"
#include "cs_gpu.h"

#if defined(OPEN_MPI) && OPEN_MPI && __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#define TAG_IPC 11
#define TAG_CHUNK 12
#define MAX_REGIONS 8

/* The paths, in the order people read them (--list --json states them as
 * --path's choices, and options.c refuses any other name). */
enum { P_HOST, P_STAGED, P_PAGEABLE, P_PIPE, P_AWARE, P_IPC, P_NCCL };
const char *const cs_path_names[] = {"host", "staged", "staged-pageable", "staged-pipelined",
                                     "cuda-aware", "ipc", "nccl", NULL};

typedef struct region {
  char *base, *host, *peer; /* device memory, its host mirror (staged), the peer's (ipc) */
  size_t len;
} region;

typedef struct pending {
  char *dev, *host; /* staged: a receive's device and host places */
  size_t n;
  long hdr[2];      /* ipc: the notice sent or received (offset, bytes) */
  int send;         /* ipc: a notice to send at waitall */
  int recv;         /* a receive to finish at waitall */
  char *where;      /* ipc: the receive's device place */
} pending;

typedef struct cs_path {
  int kind;
  int standin;
  int fail_next; /* testing: the next device copy fails (--inject gpufail) */
  region reg[MAX_REGIONS];
  int nreg;
  pending *pend; /* by request slot (cs_nreq of them) */
  int group; /* nccl: a group is open */
  void *ack; /* nccl: the device word acknowledgements travel in */
} cs_path;

static int kind_of(const char *name) {
  for (int k = 0; cs_path_names[k]; k++)
    if (!strcmp(name, cs_path_names[k])) return k;
  return -1;
}

int cs_path_check(const cs_opts *o, const cs_bench *const *benches, int nb, cs_err *e) {
  int k = kind_of(o->path);
  if (k < 0) /* refused by the option table's choices before this */
    return CS_FAIL(e, CS_EUSAGE, "unknown --path '%s'", o->path);
  for (int i = 0; k == P_HOST && i < nb; i++)
    if (benches[i]->gpu_only)
      return CS_FAIL(e, CS_EUSAGE, "benchmark %s runs on a GPU path (--path staged, "
                     "staged-pageable, staged-pipelined, cuda-aware or nccl)", benches[i]->name);
  enum cs_fault fault;
  size_t at;
  if (!cs_inject_parse(o->inject, &fault, &at) && fault == CS_FAULT_GPUFAIL &&
      (k == P_HOST || k == P_IPC || k == P_NCCL))
    return CS_FAIL(e, CS_EUSAGE, "--inject gpufail fails a staged or cuda-aware path's copy, "
                   "not --path %s's", o->path);
  if (k == P_HOST) return CS_OK;
  if (strcmp(o->transport, "mpi"))
    return CS_FAIL(e, CS_EUSAGE, "--path %s moves data itself: not with --transport %s", o->path,
                   o->transport);
  for (int i = 0; i < nb; i++) {
    const cs_bench *b = benches[i];
    int coll = b->timing == CS_TIME_MAX;
    if (!b->gpu)
      return CS_FAIL(e, CS_EUSAGE, "benchmark %s has no GPU path (GPU paths run latency, "
                     "roundtrip, sendloop, bw, bibw, bcast, allreduce, alltoall, gpu_matmul, "
                     "gpu_jacobi)", b->name);
    if (k == P_IPC && coll)
      return CS_FAIL(e, CS_EUSAGE, "--path ipc is point-to-point only; %s is a collective",
                     b->name);
  }
  return CS_OK;
}

/* -- memory ------------------------------------------------------------------ */
static int on_device(const cs_ctx *c) { return c->path && !c->path->standin; }
int cs_buf_on_device(const cs_ctx *c) { return on_device(c); }

static char injected[160]; /* testing: the failure --inject gpufail made */

const char *cs_path_error(void) { return injected[0] ? injected : cs_gpu_error(); }

void cs_path_fail_next(cs_ctx *c) {
  if (c->path) c->path->fail_next = 1;
}

/* Testing: the copy --inject gpufail asked to fail, with its reason. */
static int injected_failure(const cs_ctx *c, const char *what) {
  if (!c->path || !c->path->fail_next) return 0;
  c->path->fail_next = 0;
  snprintf(injected, sizeof injected, "%s failed: injected failure (--inject gpufail, "
           "testing) on rank %d", what, c->rank);
  return 1;
}

static void *dev_alloc(const cs_ctx *c, size_t n) {
  return on_device(c) ? cs_gpu_alloc(n) : cs_alloc(n);
}

static void dev_free(const cs_ctx *c, void *p) {
  if (on_device(c))
    cs_gpu_free(p);
  else
    free(p);
}

static int to_host(const cs_ctx *c, void *dst, const void *src, size_t n) {
  if (injected_failure(c, "the copy to host")) return 1;
  if (!on_device(c)) {
    memcpy(dst, src, n);
    return 0;
  }
  return cs_gpu_to_host(dst, src, n);
}

static int from_host(const cs_ctx *c, void *dst, const void *src, size_t n) {
  if (injected_failure(c, "the copy to the device")) return 1;
  if (!on_device(c)) {
    memcpy(dst, src, n);
    return 0;
  }
  return cs_gpu_from_host(dst, src, n);
}

static region *find(cs_path *p, const void *ptr) {
  for (int i = 0; p && i < p->nreg; i++)
    if ((const char *)ptr >= p->reg[i].base && (const char *)ptr < p->reg[i].base + p->reg[i].len)
      return &p->reg[i];
  return NULL;
}

static void *mirror_alloc(cs_path *p, size_t n) {
  if (p->kind == P_PAGEABLE || p->standin) return cs_alloc(n);
  return cs_gpu_alloc_pinned(n);
}

static void mirror_free(cs_path *p, void *m) {
  if (p->kind == P_PAGEABLE || p->standin)
    free(m);
  else
    cs_gpu_free_pinned(m);
}

static int add_region(cs_ctx *c, void *base, size_t n) {
  cs_path *p = c->path;
  if (p->nreg == MAX_REGIONS) return CS_ENOMEM;
  region *r = &p->reg[p->nreg];
  memset(r, 0, sizeof *r);
  r->base = base;
  r->len = n;
  if (p->kind == P_STAGED || p->kind == P_PAGEABLE || p->kind == P_PIPE) {
    r->host = mirror_alloc(p, n);
    if (!r->host) return CS_ENOMEM;
  }
  p->nreg++;
  return CS_OK;
}

/* Untimed: the IPC path maps the partner's receive buffer into the region
 * of this rank's send buffer (both partners allocate alike, so a message
 * lands at the offset it left from). */
static int ipc_map(cs_ctx *c, void *sbuf, void *rbuf) {
  char mine[CS_GPU_IPC_BYTES] = {0}, theirs[CS_GPU_IPC_BYTES];
  int ok = !cs_gpu_ipc_handle(rbuf, mine), both = 0;
  MPI_Sendrecv(mine, CS_GPU_IPC_BYTES, MPI_BYTE, c->peer, TAG_IPC, theirs, CS_GPU_IPC_BYTES,
               MPI_BYTE, c->peer, TAG_IPC, c->comm, MPI_STATUS_IGNORE);
  MPI_Sendrecv(&ok, 1, MPI_INT, c->peer, TAG_IPC, &both, 1, MPI_INT, c->peer, TAG_IPC, c->comm,
               MPI_STATUS_IGNORE);
  if (!ok || !both) return CS_EMPI;
  region *r = find(c->path, sbuf);
  r->peer = cs_gpu_ipc_open(theirs);
  return r->peer ? CS_OK : CS_EMPI;
}

int cs_buf_pair(cs_ctx *c, void **sbuf, void **rbuf, size_t n) {
  return cs_buf_pair_sized(c, sbuf, n, rbuf, n);
}

int cs_buf_pair_sized(cs_ctx *c, void **sbuf, size_t ns, void **rbuf, size_t nr) {
  if (!c->path) {
    *sbuf = cs_alloc(ns);
    *rbuf = cs_alloc(nr);
    return *sbuf && *rbuf ? CS_OK : CS_ENOMEM;
  }
  *sbuf = dev_alloc(c, ns);
  *rbuf = dev_alloc(c, nr);
  if (!*sbuf || !*rbuf || add_region(c, *sbuf, ns) || add_region(c, *rbuf, nr))
    return CS_ENOMEM;
  size_t n = ns > nr ? ns : nr;
  if (n > c->view_len) {
    free(c->view);
    c->view = cs_alloc(n);
    c->view_len = c->view ? n : 0;
    if (!c->view) return CS_ENOMEM;
  }
  if (c->path->kind == P_IPC && c->peer >= 0) return ipc_map(c, *sbuf, *rbuf);
  return CS_OK;
}

void cs_buf_free(cs_ctx *c, void *ptr) {
  cs_path *p = c->path;
  if (!ptr) return;
  if (!p) {
    free(ptr);
    return;
  }
  region *r = find(p, ptr);
  if (r) {
    if (r->host) mirror_free(p, r->host);
    if (r->peer) {
      /* The partner's receive buffer is unmapped here, and the partners meet
       * before either frees its own (freed next: buffers go sbuf first), so
       * no buffer is freed while the other process still maps it. */
      cs_gpu_ipc_close(r->peer);
      char a = 0, b = 0;
      MPI_Sendrecv(&a, 1, MPI_CHAR, c->peer, TAG_IPC, &b, 1, MPI_CHAR, c->peer, TAG_IPC,
                   c->comm, MPI_STATUS_IGNORE);
    }
    *r = p->reg[--p->nreg];
  }
  dev_free(c, ptr);
}

void *cs_buf_get(cs_ctx *c, const void *p, size_t n) {
  if (!c->path) return (void *)p;
  if (to_host(c, c->view, p, n)) {
    cs_abort("rank %d: copying to the host: %s", c->rank, cs_path_error());
  }
  return c->view;
}

void cs_buf_put(cs_ctx *c, void *p, const void *view, size_t n) {
  if (!c->path) return;
  if (from_host(c, p, view, n)) {
    cs_abort("rank %d: copying to the device: %s", c->rank, cs_path_error());
  }
}

void cs_buf_fill(cs_ctx *c, void *p, size_t n, uint64_t seed) {
  void *v = c->path ? c->view : p;
  cs_fill(v, n, seed);
  cs_buf_put(c, p, v, n);
}

void cs_buf_poison(cs_ctx *c, void *p, size_t n) {
  void *v = c->path ? c->view : p;
  cs_poison(v, n);
  cs_buf_put(c, p, v, n);
}

long cs_buf_check(cs_ctx *c, const void *p, size_t n, uint64_t seed, unsigned *got,
                  unsigned *want) {
  return cs_check(cs_buf_get(c, p, n), n, seed, got, want);
}

int cs_dev_copy(cs_ctx *c, void *dst, const void *src, size_t n) {
  if (injected_failure(c, "the device-to-device copy")) return CS_TP_EGPU;
  if (!on_device(c)) {
    memcpy(dst, src, n);
    return 0;
  }
  return CS_GPU_TRY(cs_gpu_copy_async(dst, src, n));
}

int cs_dev_sync(cs_ctx *c) { return on_device(c) ? CS_GPU_TRY(cs_gpu_sync()) : 0; }

/* -- staged ---------------------------------------------------------------- */
static int staged_out(cs_ctx *c, const void *buf, size_t n, const void **host) {
  region *r = find(c->path, buf);
  *host = buf;
  if (!r) return 0; /* an acknowledgement on the stack */
  *host = r->host + ((const char *)buf - r->base);
  return to_host(c, (void *)*host, buf, n);
}

static void *staged_in(cs_ctx *c, void *buf) {
  region *r = find(c->path, buf);
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
  if (!rc && h != buf && from_host(c, buf, h, n)) rc = CS_TP_EGPU;
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
    if (q->recv && from_host(c, q->dev, q->host, q->n)) rc = CS_TP_EGPU;
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
  return rc ? rc : (from_host(c, r, hr, all) ? CS_TP_EGPU : 0);
}

static int s_bcast(cs_ctx *c, void *buf, size_t n, int root) {
  const void *h = buf;
  if (n > CS_MSG_MAX) return CS_TP_ETOOBIG;
  if (c->rank == root && staged_out(c, buf, n, &h)) return CS_TP_EGPU;
  if (c->rank != root) h = staged_in(c, buf);
  int rc = MPI_Bcast((void *)h, (int)n, MPI_BYTE, root, c->comm);
  if (!rc && c->rank != root && from_host(c, buf, h, n)) rc = CS_TP_EGPU;
  return rc;
}

static int s_allreduce(cs_ctx *c, const void *s, void *r, size_t count) {
  size_t n = count * cs_dtype_size(c->opts);
  const void *hs;
  if (count > CS_MSG_MAX) return CS_TP_ETOOBIG;
  if (staged_out(c, s, n, &hs)) return CS_TP_EGPU;
  void *hr = staged_in(c, r);
  int rc = MPI_Allreduce(hs, hr, (int)count, cs_dtype(c->opts), MPI_SUM, c->comm);
  return rc ? rc : (from_host(c, r, hr, n) ? CS_TP_EGPU : 0);
}

static const cs_transport staged = {
    .name = "staged", .send = s_send, .recv = s_recv, .isend = s_isend, .irecv = s_irecv,
    .waitall = s_waitall, .alltoall = s_alltoall, .bcast = s_bcast, .allreduce = s_allreduce,
};

/* -- staged-pipelined ------------------------------------------------------ */
/* The stand-in copies at once; on a device the copies are queued on the
 * core's stream and a mark follows each. */
static int out_async(const cs_ctx *c, void *dst, const void *src, size_t n, int k) {
  if (injected_failure(c, "the queued copy to host")) return 1;
  if (!on_device(c)) {
    memcpy(dst, src, n);
    return 0;
  }
  return cs_gpu_to_host_async(dst, src, n) || cs_gpu_mark(k);
}

static int in_async(const cs_ctx *c, void *dst, const void *src, size_t n) {
  if (injected_failure(c, "the queued copy to the device")) return 1;
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
  region *r = find(c->path, buf);
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
  region *r = find(c->path, buf);
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
  region *r = find(c->path, buf);
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

static const cs_transport pipelined = {
    .name = "staged-pipelined", .send = p_send, .recv = p_recv, .isend = s_isend,
    .irecv = s_irecv, .waitall = s_waitall, .alltoall = s_alltoall, .bcast = p_bcast,
    .allreduce = s_allreduce,
};

/* -- cuda-aware: device pointers straight to MPI ----------------------------- */
static int m_bcast(cs_ctx *c, void *buf, size_t n, int root) {
  if (n > CS_MSG_MAX) return CS_TP_ETOOBIG;
  return MPI_Bcast(buf, (int)n, MPI_BYTE, root, c->comm);
}
static int m_allreduce(cs_ctx *c, const void *s, void *r, size_t count) {
  if (count > CS_MSG_MAX) return CS_TP_ETOOBIG;
  return MPI_Allreduce(s, r, (int)count, cs_dtype(c->opts), MPI_SUM, c->comm);
}
static int m_alltoall(cs_ctx *c, const void *s, void *r, size_t block) {
  return cs_transport_mpi.alltoall(c, s, r, block);
}
static cs_transport aware; /* cs_transport_mpi's calls plus these (filled at open) */

/* -- ipc ------------------------------------------------------------------- */
/* The copy into the peer's buffer, then its notice. */
static int ipc_put(cs_ctx *c, const void *buf, size_t n, long hdr[2]) {
  region *r = find(c->path, buf);
  if (!r || !r->peer) return 1;
  hdr[0] = (long)((const char *)buf - r->base);
  hdr[1] = (long)n;
  return cs_gpu_copy_async(r->peer + hdr[0], buf, n) ? CS_TP_EGPU : 0;
}

static int ipc_verify(cs_ctx *c, const void *where, size_t n, const long hdr[2]) {
  region *r = find(c->path, where);
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
  if (!find(c->path, buf)) return cs_transport_mpi.recv(c, buf, n, peer);
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
  if (!find(c->path, buf)) return cs_transport_mpi.irecv(c, buf, n, peer, slot);
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

static const cs_transport ipc = {
    .name = "ipc", .send = i_send, .recv = i_recv, .isend = i_isend, .irecv = i_irecv,
    .waitall = i_waitall,
};

/* -- nccl ------------------------------------------------------------------ */
static const void *n_place(cs_ctx *c, const void *buf) {
  return find(c->path, buf) ? buf : c->path->ack; /* acknowledgements: a device word */
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

static const cs_transport nccl = {
    .name = "nccl", .send = n_send, .recv = n_recv, .isend = n_isend, .irecv = n_irecv,
    .waitall = n_waitall, .barrier = n_barrier, .alltoall = n_alltoall, .bcast = n_bcast,
    .allreduce = n_allreduce,
};

/* -- opening --------------------------------------------------------------- */
/* What the library says of CUDA, at compile time and at run time. */
void cs_path_cuda_support(int *compiled, int *runtime) {
  *compiled = *runtime = 0;
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  *compiled = 1;
#endif
#if defined(OPEN_MPI) && OPEN_MPI && defined(MPIX_CUDA_AWARE_SUPPORT)
  *runtime = MPIX_Query_cuda_support();
#elif defined(MPICH) && defined(MPIX_GPU_SUPPORT_CUDA)
  *compiled = 1; /* MPICH says at run time only */
  int yes = 0;
  if (MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &yes) == MPI_SUCCESS) *runtime = yes;
#endif
}

/* The first failing rank's reason, with its rank, on every rank. */
static int agree(MPI_Comm comm, int failed, char *why, size_t len) {
  char buf[CS_ERRLEN];
  snprintf(buf, sizeof buf, "%s", failed ? why : "");
  int first = cs_first_failure(comm, failed, buf, sizeof buf);
  if (first < 0) return 0;
  snprintf(why, len, "rank %d: %s", first, buf);
  return 1;
}

static void path_free(cs_path *p) {
  if (!p) return;
  if (p->kind == P_NCCL) cs_nccl_close();
  if (p->ack) cs_gpu_free(p->ack);
  free(p->pend);
  free(p);
}

/* What a path's record says of where it ran, and what decided it. */
typedef struct path_facts {
  int kind, stand, local, here, compiled, runtime, forced, nccl_v;
  char gpu[512];
} path_facts;

/* This rank's place on its node, and how many ranks the node holds. */
static void node_ranks(MPI_Comm comm, int *local, int *here) {
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, local);
  MPI_Comm_size(node, here);
  MPI_Comm_free(&node);
}

/* Whether the path cannot run on this rank (a stand-in for a path that
 * needs a GPU, no GPU, an MPI without CUDA support, fewer GPUs than NCCL's
 * ranks, no NCCL), with why; the GPU opened and described otherwise. */
static int refused(const cs_opts *o, path_facts *f, char *why, size_t len) {
  if (f->stand && (f->kind == P_IPC || f->kind == P_NCCL)) {
    snprintf(why, len, "--path %s needs a real GPU, not host memory standing in for one",
             o->path);
    return 1;
  }
  if (!f->stand) {
    int n = cs_gpu_count();
    if (n < 0 || cs_gpu_open(f->local % n)) {
      snprintf(why, len, "no GPU: %s", cs_gpu_error());
      return 1;
    }
    cs_gpu_describe(f->gpu, sizeof f->gpu);
  }
  cs_path_cuda_support(&f->compiled, &f->runtime); /* asked with the device open */
  if (f->kind == P_AWARE && !f->stand && !f->runtime && !f->forced) {
    snprintf(why, len, "the MPI library reports no CUDA support (compile time: %s, run time: "
             "no); set COMMSCOPE_FORCE_CUDA_AWARE=1 to try it anyway",
             f->compiled ? "yes" : "no");
    return 1;
  }
  if (f->kind == P_NCCL && !f->stand && f->here > cs_gpu_count()) {
    /* NCCL refuses a communicator in which two ranks share a device */
    snprintf(why, len, "--path nccl needs a GPU per rank: %d ranks on this node, %d GPU(s) "
             "(NCCL refuses two ranks on one GPU)", f->here, cs_gpu_count());
    return 1;
  }
  if (f->kind == P_NCCL && cs_nccl_load()) {
    snprintf(why, len, "%s", cs_gpu_error());
    return 1;
  }
  return 0;
}

/* NCCL's communicator over comm, its id carried by MPI from rank 0, and
 * the acknowledgement buffer; 1 where it failed on any rank. */
static int nccl_open(cs_path *p, MPI_Comm comm, char *why, size_t len) {
  int rank, np, failed = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &np);
  char id[CS_NCCL_ID_BYTES] = {0};
  if (rank == 0 && cs_nccl_id(id)) failed = 1;
  MPI_Bcast(&failed, 1, MPI_INT, 0, comm);
  if (!failed) {
    MPI_Bcast(id, sizeof id, MPI_BYTE, 0, comm);
    failed = cs_nccl_init(np, rank, id);
    p->ack = cs_gpu_alloc(64);
    failed = failed || !p->ack;
  }
  if (failed) snprintf(why, len, "NCCL: %s", cs_gpu_error());
  return agree(comm, failed, why, len);
}

/* The calls that move a path's data. */
static const cs_transport *transport_of(int k) {
  if (k == P_STAGED || k == P_PAGEABLE) return &staged;
  if (k == P_PIPE) return &pipelined;
  if (k == P_IPC) return &ipc;
  if (k == P_NCCL) return &nccl;
  if (k == P_AWARE) {
    aware = cs_transport_mpi;
    aware.name = "cuda-aware";
    aware.bcast = m_bcast;
    aware.allreduce = m_allreduce;
    aware.alltoall = m_alltoall;
    return &aware;
  }
  return &cs_transport_mpi;
}

static void describe(cs_path_env *pe, const cs_opts *o, const path_facts *f) {
  int gpus = f->stand ? 0 : cs_gpu_count();
  snprintf(pe->desc, sizeof pe->desc,
           "{\"path\":\"%s\",\"standin\":%s,\"gpu\":%s,\"cuda_built\":%s,\"cuda_runtime\":\"%s\","
           "\"mpi_cuda_support\":{\"compile_time\":%s,\"run_time\":%s,\"forced\":%s},"
           "\"nccl_version\":%d,\"device_by\":\"local rank %d\",\"ranks_on_node\":%d,"
           "\"gpus\":%d}",
           o->path, f->stand ? "true" : "false", f->gpu, cs_gpu_built() ? "true" : "false",
           cs_gpu_runtime(), f->compiled ? "true" : "false", f->runtime ? "true" : "false",
           f->forced && f->kind == P_AWARE ? "true" : "false", f->nccl_v, f->local, f->here,
           gpus > 0 ? gpus : 0);
}

int cs_path_open(const cs_opts *o, MPI_Comm comm, cs_path_env *pe, char *why, size_t len) {
  path_facts f = {.kind = kind_of(o->path), .here = 1, .gpu = "null"};
  memset(pe, 0, sizeof *pe);
  pe->tp = &cs_transport_mpi;
  snprintf(pe->desc, sizeof pe->desc, "{\"path\":\"host\"}");
  if (f.kind == P_HOST) return CS_OK;
  int np;
  MPI_Comm_size(comm, &np);
  node_ranks(comm, &f.local, &f.here);
  const char *standin = getenv("COMMSCOPE_GPU_STANDIN");
  f.stand = standin && !strcmp(standin, "host");
  const char *force = getenv("COMMSCOPE_FORCE_CUDA_AWARE");
  f.forced = force && !strcmp(force, "1");
  cs_path *p = calloc(1, sizeof *p);
  if (p) p->pend = calloc(cs_nreq(o, np), sizeof *p->pend); /* one per request slot */
  int failed = !p || !p->pend;
  if (failed) {
    snprintf(why, len, "out of memory");
  } else {
    p->kind = f.kind;
    p->standin = f.stand;
    failed = refused(o, &f, why, len);
  }
  if (agree(comm, failed, why, len) || (f.kind == P_NCCL && nccl_open(p, comm, why, len))) {
    path_free(p);
    return CS_ESKIP;
  }
  if (f.kind == P_NCCL) f.nccl_v = cs_nccl_version();
  pe->path = p;
  pe->tp = transport_of(f.kind);
  describe(pe, o, &f);
  return CS_OK;
}

void cs_path_close(cs_path_env *pe) {
  path_free(pe->path);
  pe->path = NULL;
}

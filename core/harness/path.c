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

#include "path.h"

#if defined(OPEN_MPI) && OPEN_MPI && __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

/* The paths, in the order people read them (--list --json states them as
 * --path's choices, and options.c refuses any other name). */
const char *const cs_path_names[] = {"host", "staged", "staged-pageable", "staged-pipelined",
                                     "cuda-aware", "ipc", "nccl", NULL};

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
int cs_buf_on_device(const cs_ctx *c) { return on_device(c); }

static char injected[160]; /* testing: the failure --inject gpufail made */

const char *cs_path_error(void) { return injected[0] ? injected : cs_gpu_error(); }

void cs_path_fail_next(cs_ctx *c) {
  if (c->path) c->path->fail_next = 1;
}

/* Testing: the copy --inject gpufail asked to fail, with its reason. */
int cs_path_injected(const cs_ctx *c, const char *what) {
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

int cs_path_to_host(const cs_ctx *c, void *dst, const void *src, size_t n) {
  if (cs_path_injected(c, "the copy to host")) return 1;
  if (!on_device(c)) {
    memcpy(dst, src, n);
    return 0;
  }
  return cs_gpu_to_host(dst, src, n);
}

int cs_path_from_host(const cs_ctx *c, void *dst, const void *src, size_t n) {
  if (cs_path_injected(c, "the copy to the device")) return 1;
  if (!on_device(c)) {
    memcpy(dst, src, n);
    return 0;
  }
  return cs_gpu_from_host(dst, src, n);
}

region *cs_path_find(cs_path *p, const void *ptr) {
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
  region *r = cs_path_find(c->path, sbuf);
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
  region *r = cs_path_find(p, ptr);
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
  if (cs_path_to_host(c, c->view, p, n)) {
    cs_abort("rank %d: copying to the host: %s", c->rank, cs_path_error());
  }
  return c->view;
}

void cs_buf_put(cs_ctx *c, void *p, const void *view, size_t n) {
  if (!c->path) return;
  if (cs_path_from_host(c, p, view, n)) {
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
  if (cs_path_injected(c, "the device-to-device copy")) return CS_TP_EGPU;
  if (!on_device(c)) {
    memcpy(dst, src, n);
    return 0;
  }
  return CS_GPU_TRY(cs_gpu_copy_async(dst, src, n));
}

int cs_dev_sync(cs_ctx *c) { return on_device(c) ? CS_GPU_TRY(cs_gpu_sync()) : 0; }

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
  if (k == P_STAGED || k == P_PAGEABLE) return &cs_path_staged;
  if (k == P_PIPE) return &cs_path_pipelined;
  if (k == P_IPC) return &cs_path_ipc;
  if (k == P_NCCL) return &cs_path_nccl;
  if (k == P_AWARE) return cs_path_aware();
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


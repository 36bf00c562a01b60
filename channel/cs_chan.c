/* cs_chan: see cs_chan.h for the design.  Memory orderings are stated at
 * each atomic access: every hand-over of data between processes is a
 * release store by the writer paired with an acquire load by the reader. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cs_chan.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define LINE 64
#define MAGIC 0x63736368616e3031ull /* "cschan01" */
#define ALIGN(x, a) (((x) + (a)-1) / (a) * (a))

enum { K_SMALL = 1, K_CHUNK = 2, K_CMA = 3, K_PAD = 4, K_RTS = 5 };

/* Every message in a ring starts with this 32-byte header; payloads are
 * padded to 32 bytes so that a header always fits before the wrap.  The
 * stamp (the message's position in the pair's byte stream, plus one) is
 * written last: the receiver polls the very line it is about to read, so a
 * small message costs one cache-line transfer, not two (seed 002's "cache
 * friendly").  The producer's tail is kept for space and liveness checks. */
typedef struct msg {
  _Atomic uint64_t stamp;
  uint32_t kind;  /* low byte: K_*; above: pool buffer index (chunk) */
  uint32_t len;   /* payload (small, pad), chunk bytes (chunk) */
  uint64_t total; /* whole message length (chunk, cma, rts) */
  uint64_t where; /* offset in the message (chunk), address (cma) */
} msg;
_Static_assert(sizeof(msg) == 32, "ring header is 32 bytes");
#define KIND(m) ((m)->kind & 0xff)
#define CHUNK_OF(m) ((m)->kind >> 8)

/* The consumer owns head, the producer owns tail, each on its own line. */
typedef struct ring_ctl {
  _Alignas(LINE) _Atomic uint64_t head;
  _Alignas(LINE) _Atomic uint64_t tail;
  _Alignas(LINE) _Atomic uint64_t cma_done; /* large messages read so far (cma) */
  _Atomic uint64_t cts;                      /* large messages matched so far (pool) */
} ring_ctl;

typedef struct flag {
  _Alignas(LINE) _Atomic uint32_t busy; /* pool buffer lent to a receiver */
} flag;

typedef struct hdr {
  uint64_t magic;
  uint32_t nprocs, cma;
  uint64_t ring_bytes, eager_max, chunk_bytes, nchunks, total_bytes;
  _Atomic uint32_t ready;    /* set (release) once rank 0 has initialised */
  _Atomic uint32_t attached; /* processes mapped so far */
  _Atomic int32_t pid[CS_CHAN_MAX_PROCS];
} hdr;

struct cs_chan_req {
  int peer, is_send, started, done, err;
  const char *sbuf;
  char *rbuf;
  size_t len, cap, off, total;
  uint64_t cma_seq;
  int on_stack;
  cs_chan_req *next;
};

typedef struct queue {
  cs_chan_req *head, *tail;
} queue;

struct cs_chan {
  char name[128];
  int rank, nprocs, fd, broken;
  cs_chan_params p;
  void *base;
  size_t bytes;
  hdr *h;
  uint64_t *cached_head; /* per destination: last head seen (producer side) */
  uint64_t *cma_sent;    /* per destination: large messages sent by cma */
  uint64_t *rts_sent;    /* per destination: large messages announced (pool) */
  uint32_t next_chunk;
  queue *sendq, *recvq;
  double timeout_s;
  cs_chan_req *free_reqs; /* finished requests, reused by isend/irecv */
  unsigned long work;   /* ring messages written or read: progress made */
  unsigned long idle;   /* consecutive progress calls without work */
  double idle_since, last_check;
};

/* -- layout ---------------------------------------------------------------- */
static size_t ring_stride(const cs_chan_params *p) { return sizeof(ring_ctl) + p->ring_bytes; }
static size_t hdr_bytes(void) { return ALIGN(sizeof(hdr), LINE); }
static size_t rings_bytes(int n, const cs_chan_params *p) {
  return (size_t)n * (size_t)(n - 1) * ring_stride(p);
}
static size_t pool_bytes(const cs_chan_params *p) { return p->nchunks * p->chunk_bytes; }

size_t cs_chan_footprint(int n, const cs_chan_params *p) {
  return hdr_bytes() + rings_bytes(n, p) + (size_t)n * pool_bytes(p) +
         (size_t)n * p->nchunks * sizeof(flag);
}

size_t cs_chan_footprint_per_pair(int n, const cs_chan_params *p) {
  /* one ring and one large buffer as big as a whole pool, per ordered pair */
  return hdr_bytes() + rings_bytes(n, p) + (size_t)n * (size_t)(n - 1) * pool_bytes(p);
}

static size_t pair_index(const cs_chan *c, int src, int dst) {
  return (size_t)src * (size_t)(c->nprocs - 1) + (size_t)(dst < src ? dst : dst - 1);
}
static ring_ctl *ring(const cs_chan *c, int src, int dst) {
  return (ring_ctl *)((char *)c->base + hdr_bytes() + pair_index(c, src, dst) * ring_stride(&c->p));
}
static char *ring_data(ring_ctl *r) { return (char *)(r + 1); }
static char *pool(const cs_chan *c, int owner) {
  return (char *)c->base + hdr_bytes() + rings_bytes(c->nprocs, &c->p) +
         (size_t)owner * pool_bytes(&c->p);
}
static flag *flags(const cs_chan *c, int owner) {
  return (flag *)((char *)c->base + hdr_bytes() + rings_bytes(c->nprocs, &c->p) +
                  (size_t)c->nprocs * pool_bytes(&c->p)) +
         (size_t)owner * c->p.nchunks;
}

/* -- parameters -------------------------------------------------------------- */
void cs_chan_defaults(cs_chan_params *p) {
  p->ring_bytes = 64 * 1024;
  p->eager_max = 8 * 1024;
  p->chunk_bytes = 256 * 1024;
  p->nchunks = 8;
  p->cma = 0;
  p->timeout_s = 30.0;
}

static int valid_params(int nprocs, const cs_chan_params *p) {
  if (nprocs < 1 || nprocs > CS_CHAN_MAX_PROCS) return 0;
  if (p->ring_bytes < 1024 || (p->ring_bytes & (p->ring_bytes - 1))) return 0;
  if (p->eager_max + 2 * sizeof(msg) > p->ring_bytes / 2) return 0;
  if (p->chunk_bytes < 64 || p->chunk_bytes % 64 || p->nchunks < 1) return 0;
  return 1;
}

const char *cs_chan_strerror(int err) {
  switch (err) {
    case CS_CHAN_OK: return "ok";
    case CS_CHAN_EINVAL: return "invalid argument";
    case CS_CHAN_ENOMEM: return "out of memory";
    case CS_CHAN_ESYS: return "system call failed";
    case CS_CHAN_ETIMEDOUT: return "timed out";
    case CS_CHAN_EPEERDEAD: return "peer process is gone";
    case CS_CHAN_ETRUNC: return "message larger than the receive buffer";
    case CS_CHAN_EEXIST: return "a live channel of that name exists";
  }
  return "unknown error";
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void shm_name(char *out, size_t n, const char *name) { snprintf(out, n, "/cschan-%s", name); }

/* Gone, or a zombie nobody has reaped yet (kill(pid, 0) still works on
 * those). */
static int pid_dead(pid_t pid) {
  if (pid <= 0) return 0;
  if (kill(pid, 0) != 0) return errno == ESRCH;
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  const char *rp = strrchr(buf, ')');
  return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
}

/* The test suite builds the channel once with this ordering weakened to
 * relaxed, to show that ThreadSanitizer reports the race it opens. */
#ifndef CS_CHAN_STAMP_ORDER
#define CS_CHAN_STAMP_ORDER memory_order_release
#endif

/* -- one mapping per segment and process ------------------------------------------
 * Every member of a process that opens the same channel (threads, in the
 * threaded stress test) shares one mapping: one address per byte of the
 * segment, so ThreadSanitizer sees every access to the rings and pools and
 * can report a race between them (with one mapping per thread it sees
 * different addresses and cannot). */
typedef struct shared_map {
  char name[160];
  void *base;
  size_t bytes;
  int refs;
} shared_map;
#define MAX_SHARED_MAPS 16
static shared_map g_maps[MAX_SHARED_MAPS];
static pthread_mutex_t g_maps_lock = PTHREAD_MUTEX_INITIALIZER;

static void *map_shared(const char *name, int fd, size_t bytes) {
  void *base = MAP_FAILED;
  pthread_mutex_lock(&g_maps_lock);
  shared_map *free_slot = NULL;
  for (int i = 0; i < MAX_SHARED_MAPS; i++) {
    shared_map *m = &g_maps[i];
    if (m->refs && !strcmp(m->name, name) && m->bytes == bytes) {
      m->refs++;
      base = m->base;
      goto out;
    }
    if (!m->refs && !free_slot) free_slot = m;
  }
  base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base != MAP_FAILED && free_slot) {
    snprintf(free_slot->name, sizeof free_slot->name, "%s", name);
    free_slot->base = base;
    free_slot->bytes = bytes;
    free_slot->refs = 1;
  }
out:
  pthread_mutex_unlock(&g_maps_lock);
  return base;
}

static void unmap_shared(void *base, size_t bytes) {
  pthread_mutex_lock(&g_maps_lock);
  for (int i = 0; i < MAX_SHARED_MAPS; i++) {
    shared_map *m = &g_maps[i];
    if (m->refs && m->base == base) {
      if (--m->refs == 0) munmap(base, bytes);
      pthread_mutex_unlock(&g_maps_lock);
      return;
    }
  }
  pthread_mutex_unlock(&g_maps_lock);
  munmap(base, bytes); /* mapped when the table was full */
}

/* -- open / close -------------------------------------------------------------- */
static int map_segment(cs_chan *c, int create) {
  char nm[160];
  shm_name(nm, sizeof nm, c->name);
  size_t want = cs_chan_footprint(c->nprocs, &c->p);
  double deadline = now_s() + (c->timeout_s > 0 ? c->timeout_s : 1e9);
  if (create) {
    c->fd = shm_open(nm, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (c->fd < 0) return errno == EEXIST ? CS_CHAN_EEXIST : CS_CHAN_ESYS;
    if (ftruncate(c->fd, (off_t)want)) return CS_CHAN_ESYS;
  } else {
    for (;;) { /* wait for rank 0 to create and size it */
      c->fd = shm_open(nm, O_RDWR, 0600);
      struct stat st;
      if (c->fd >= 0 && fstat(c->fd, &st) == 0 && (size_t)st.st_size == want) break;
      if (c->fd >= 0) close(c->fd);
      c->fd = -1;
      if (now_s() > deadline) return CS_CHAN_ETIMEDOUT;
      usleep(1000);
    }
  }
  c->base = map_shared(nm, c->fd, want);
  if (c->base == MAP_FAILED) return CS_CHAN_ESYS;
  c->bytes = want;
  c->h = c->base;
  if (create) {
    hdr *h = c->h;
    h->magic = MAGIC;
    h->nprocs = (uint32_t)c->nprocs;
    h->cma = (uint32_t)c->p.cma;
    h->ring_bytes = c->p.ring_bytes;
    h->eager_max = c->p.eager_max;
    h->chunk_bytes = c->p.chunk_bytes;
    h->nchunks = c->p.nchunks;
    h->total_bytes = want;
    /* release: the fields above are visible to whoever sees ready == 1 */
    atomic_store_explicit(&h->ready, 1, memory_order_release);
  } else {
    /* acquire: pairs with rank 0's release of ready */
    while (!atomic_load_explicit(&c->h->ready, memory_order_acquire)) {
      if (now_s() > deadline) return CS_CHAN_ETIMEDOUT;
      usleep(100);
    }
    hdr *h = c->h;
    if (h->magic != MAGIC || h->nprocs != (uint32_t)c->nprocs || h->ring_bytes != c->p.ring_bytes ||
        h->eager_max != c->p.eager_max || h->chunk_bytes != c->p.chunk_bytes ||
        h->nchunks != c->p.nchunks || h->cma != (uint32_t)c->p.cma)
      return CS_CHAN_EINVAL;
  }
  /* relaxed: the pid is only read for liveness checks */
  atomic_store_explicit(&c->h->pid[c->rank], (int32_t)getpid(), memory_order_relaxed);
  /* acq_rel: the last process to attach sees everybody and unlinks the name,
   * so no crash from here on can leave the segment behind */
  uint32_t n = atomic_fetch_add_explicit(&c->h->attached, 1, memory_order_acq_rel) + 1;
  if (n == (uint32_t)c->nprocs) shm_unlink(nm);
  return CS_CHAN_OK;
}

int cs_chan_open(const char *name, int nprocs, int rank, const cs_chan_params *p, cs_chan **out) {
  *out = NULL;
  if (!name || strlen(name) > 100 || strchr(name, '/') || rank < 0 || rank >= nprocs ||
      !valid_params(nprocs, p))
    return CS_CHAN_EINVAL;
  cs_chan *c = calloc(1, sizeof *c);
  if (!c) return CS_CHAN_ENOMEM;
  snprintf(c->name, sizeof c->name, "%s", name);
  c->rank = rank;
  c->nprocs = nprocs;
  c->p = *p;
  c->fd = -1;
  c->timeout_s = p->timeout_s;
  c->cached_head = calloc((size_t)nprocs, sizeof *c->cached_head);
  c->cma_sent = calloc((size_t)nprocs, sizeof *c->cma_sent);
  c->rts_sent = calloc((size_t)nprocs, sizeof *c->rts_sent);
  c->sendq = calloc((size_t)nprocs, sizeof *c->sendq);
  c->recvq = calloc((size_t)nprocs, sizeof *c->recvq);
  int rc = (c->cached_head && c->cma_sent && c->rts_sent && c->sendq && c->recvq)
               ? map_segment(c, rank == 0)
                                                                     : CS_CHAN_ENOMEM;
  if (rc) {
    int saved = errno;
    if (rank == 0 && rc != CS_CHAN_EEXIST && c->fd >= 0) {
      char nm[160];
      shm_name(nm, sizeof nm, name);
      shm_unlink(nm);
    }
    cs_chan_close(c);
    errno = saved;
    return rc;
  }
  *out = c;
  return CS_CHAN_OK;
}

static void free_queue(queue *q) {
  for (cs_chan_req *r = q->head, *nx; r; r = nx) {
    nx = r->next;
    if (!r->on_stack) free(r);
  }
}

int cs_chan_close(cs_chan *c) {
  if (!c) return CS_CHAN_OK;
  if (c->base && c->base != MAP_FAILED) unmap_shared(c->base, c->bytes);
  if (c->fd >= 0) close(c->fd);
  for (int i = 0; c->sendq && i < c->nprocs; i++) free_queue(&c->sendq[i]);
  for (int i = 0; c->recvq && i < c->nprocs; i++) free_queue(&c->recvq[i]);
  for (cs_chan_req *r = c->free_reqs, *nx; r; r = nx) {
    nx = r->next;
    free(r);
  }
  free(c->cached_head);
  free(c->cma_sent);
  free(c->rts_sent);
  free(c->sendq);
  free(c->recvq);
  free(c);
  return CS_CHAN_OK;
}

int cs_chan_unlink_stale(const char *name) {
  char nm[160];
  shm_name(nm, sizeof nm, name);
  int fd = shm_open(nm, O_RDWR, 0600);
  if (fd < 0) return errno == ENOENT ? CS_CHAN_OK : CS_CHAN_ESYS;
  struct stat st;
  int live = 0;
  if (fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(hdr)) {
    hdr *h = mmap(NULL, sizeof(hdr), PROT_READ, MAP_SHARED, fd, 0);
    if (h != MAP_FAILED) {
      for (uint32_t i = 0; h->magic == MAGIC && i < h->nprocs && i < CS_CHAN_MAX_PROCS; i++) {
        int32_t pid = atomic_load_explicit(&h->pid[i], memory_order_relaxed);
        if (pid > 0 && !pid_dead(pid)) live = 1;
      }
      munmap(h, sizeof(hdr));
    }
  }
  close(fd);
  if (live) return CS_CHAN_EEXIST;
  return shm_unlink(nm) == 0 ? CS_CHAN_OK : CS_CHAN_ESYS;
}

size_t cs_chan_segment_bytes(const cs_chan *c) {
  struct stat st;
  return fstat(c->fd, &st) == 0 ? (size_t)st.st_size : 0;
}

/* -- rings --------------------------------------------------------------------- */
/* Producer: room for `need` contiguous bytes?  Writes a pad marker when the
 * message would straddle the end.  Returns the write position or NULL. */
static char *ring_reserve(cs_chan *c, int dst, size_t need, uint64_t *tail_out) {
  ring_ctl *r = ring(c, c->rank, dst);
  size_t R = c->p.ring_bytes;
  /* relaxed: only this process writes tail */
  uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
  size_t pos = (size_t)(tail & (R - 1)), contig = R - pos;
  size_t want = need <= contig ? need : contig + need;
  if (tail + want - c->cached_head[dst] > R) {
    /* acquire: pairs with the consumer's release of head, so the space it
     * freed is really free before we overwrite it */
    c->cached_head[dst] = atomic_load_explicit(&r->head, memory_order_acquire);
    if (tail + want - c->cached_head[dst] > R) return NULL;
  }
  if (need > contig) {
    msg *pad = (msg *)(ring_data(r) + pos);
    pad->kind = K_PAD;
    pad->len = (uint32_t)contig;
    /* release: a pad is a message like any other; see ring_publish */
    atomic_store_explicit(&pad->stamp, tail + 1, memory_order_release);
    tail += contig;
    pos = 0;
  }
  *tail_out = tail;
  return ring_data(r) + pos;
}

static void ring_publish(cs_chan *c, int dst, uint64_t tail, size_t need) {
  c->work++;
  /* release: the tail never runs ahead of a published message; the
   * receiver polls stamps, the tail serves liveness checks */
  atomic_store_explicit(&ring(c, c->rank, dst)->tail, tail + need, memory_order_release);
}

static int ring_write(cs_chan *c, int dst, const msg *m, const void *payload, size_t n) {
  size_t need = ALIGN(sizeof(msg) + n, sizeof(msg));
  uint64_t tail;
  char *w = ring_reserve(c, dst, need, &tail);
  if (!w) return 0;
  msg *h = (msg *)w;
  h->kind = m->kind;
  h->len = m->len;
  h->total = m->total;
  h->where = m->where;
  if (n) memcpy(w + sizeof *m, payload, n);
  /* release: header fields and payload are visible before the stamp */
  atomic_store_explicit(&h->stamp, tail + 1, CS_CHAN_STAMP_ORDER);
  ring_publish(c, dst, tail, need);
  return 1;
}

/* Consumer: the next message from src, or NULL. Pads are skipped. */
static msg *ring_peek(cs_chan *c, int src) {
  ring_ctl *r = ring(c, src, c->rank);
  size_t R = c->p.ring_bytes;
  for (;;) {
    /* relaxed: only this process writes head */
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    msg *m = (msg *)(ring_data(r) + (head & (R - 1)));
    /* acquire: pairs with the producer's release of the stamp, so the
     * header and payload are complete; an older lap's stamp never matches */
    if (atomic_load_explicit(&m->stamp, memory_order_acquire) != head + 1) return NULL;
    if (KIND(m) != K_PAD) return m;
    atomic_store_explicit(&m->stamp, 0, memory_order_relaxed);
    /* release: the producer may reuse the pad's bytes */
    atomic_store_explicit(&r->head, head + m->len, memory_order_release);
  }
}

static void ring_consume(cs_chan *c, int src, msg *m) {
  c->work++;
  ring_ctl *r = ring(c, src, c->rank);
  size_t n = KIND(m) == K_SMALL ? m->len : 0;
  /* relaxed: clearing our own read stamp; ordered before reuse by head's release */
  atomic_store_explicit(&m->stamp, 0, memory_order_relaxed);
  uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
  /* release: we are done reading the message before the producer reuses it */
  atomic_store_explicit(&r->head, head + ALIGN(sizeof(msg) + n, sizeof(msg)),
                        memory_order_release);
}

/* -- progress -------------------------------------------------------------------- */
static int take_chunk(cs_chan *c) {
  flag *f = flags(c, c->rank);
  for (size_t k = 0; k < c->p.nchunks; k++) {
    uint32_t i = (c->next_chunk + (uint32_t)k) % (uint32_t)c->p.nchunks;
    /* acquire: pairs with the receiver's release when it handed the buffer
     * back, so its copy-out is finished before we overwrite the buffer */
    if (!atomic_load_explicit(&f[i].busy, memory_order_acquire)) {
      c->next_chunk = i + 1;
      return (int)i;
    }
  }
  return -1;
}

static int progress_send(cs_chan *c, cs_chan_req *q) {
  int dst = q->peer;
  if (q->len <= c->p.eager_max) {
    msg m = {.kind = K_SMALL, .len = (uint32_t)q->len};
    if (ring_write(c, dst, &m, q->sbuf, q->len)) q->done = 1;
    return 0;
  }
  if (c->p.cma) {
    if (!q->started) {
      msg m = {.kind = K_CMA, .total = q->len, .where = (uint64_t)(uintptr_t)q->sbuf};
      if (!ring_write(c, dst, &m, NULL, 0)) return 0;
      q->started = 1;
      q->cma_seq = ++c->cma_sent[dst];
    }
    /* acquire: the receiver has finished reading our buffer */
    if (atomic_load_explicit(&ring(c, c->rank, dst)->cma_done, memory_order_acquire) >= q->cma_seq)
      q->done = 1;
    return 0;
  }
  /* Rendezvous: announce, and take pool buffers only once the receiver has
   * matched the message, so unmatched messages never hold the pool. */
  if (!q->started) {
    msg m = {.kind = K_RTS, .total = q->len};
    if (!ring_write(c, dst, &m, NULL, 0)) return 0;
    q->started = 1;
    q->cma_seq = ++c->rts_sent[dst];
  }
  /* acquire: pairs with the receiver's release of cts */
  if (atomic_load_explicit(&ring(c, c->rank, dst)->cts, memory_order_acquire) < q->cma_seq)
    return 0;
  while (q->off < q->len) {
    uint64_t tail;
    size_t need = sizeof(msg);
    if (!ring_reserve(c, dst, need, &tail)) return 0; /* no room for the descriptor */
    int k = take_chunk(c);
    if (k < 0) return 0; /* every buffer lent out: wait for receivers */
    size_t n = q->len - q->off < c->p.chunk_bytes ? q->len - q->off : c->p.chunk_bytes;
    memcpy(pool(c, c->rank) + (size_t)k * c->p.chunk_bytes, q->sbuf + q->off, n);
    /* relaxed: published to the receiver by the ring's release below */
    atomic_store_explicit(&flags(c, c->rank)[k].busy, 1, memory_order_relaxed);
    msg m = {.kind = K_CHUNK | ((uint32_t)k << 8), .len = (uint32_t)n, .total = q->len,
             .where = q->off};
    ring_write(c, dst, &m, NULL, 0); /* room was reserved above */
    q->off += n;
  }
  q->done = 1;
  return 0;
}

static int progress_recv(cs_chan *c, cs_chan_req *q) {
  int src = q->peer;
  while (!q->done) {
    msg *m = ring_peek(c, src);
    if (!m) return 0;
    if (KIND(m) == K_SMALL) {
      if (m->len > q->cap) q->err = CS_CHAN_ETRUNC;
      else if (m->len) memcpy(q->rbuf, m + 1, m->len);
      q->total = m->len;
      ring_consume(c, src, m);
      q->done = 1;
    } else if (KIND(m) == K_RTS) {
      q->total = m->total;
      if (m->total > q->cap) q->err = CS_CHAN_ETRUNC; /* drained, not copied */
      ring_consume(c, src, m);
      /* release: matched; the sender may start lending us pool buffers */
      atomic_fetch_add_explicit(&ring(c, src, c->rank)->cts, 1, memory_order_release);
    } else if (KIND(m) == K_CHUNK) {
      q->total = m->total;
      if (m->total > q->cap) q->err = CS_CHAN_ETRUNC;
      else memcpy(q->rbuf + m->where, pool(c, src) + (size_t)CHUNK_OF(m) * c->p.chunk_bytes,
                  m->len);
      /* release: our copy-out is complete before the owner reuses the buffer */
      atomic_store_explicit(&flags(c, src)[CHUNK_OF(m)].busy, 0, memory_order_release);
      size_t end = m->where + m->len;
      ring_consume(c, src, m);
      if (end == q->total) q->done = 1;
    } else if (KIND(m) == K_CMA) {
      q->total = m->total;
      if (m->total > q->cap) {
        q->err = CS_CHAN_ETRUNC;
      } else {
        struct iovec local = {q->rbuf, m->total};
        struct iovec remote = {(void *)(uintptr_t)m->where, m->total};
        pid_t pid = atomic_load_explicit(&c->h->pid[src], memory_order_relaxed);
        if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t)m->total)
          q->err = (errno == ESRCH || pid_dead(pid)) ? CS_CHAN_EPEERDEAD : CS_CHAN_ESYS;
      }
      ring_consume(c, src, m);
      /* release: the sender may reuse its buffer once it sees the count */
      atomic_fetch_add_explicit(&ring(c, src, c->rank)->cma_done, 1, memory_order_release);
      q->done = 1;
    } else {
      return CS_CHAN_EINVAL; /* corrupt ring */
    }
  }
  return 0;
}

/* Advance every queue, in order per peer. */
static int progress(cs_chan *c) {
  for (int p = 0; p < c->nprocs; p++) {
    queue *s = &c->sendq[p];
    while (s->head) {
      int rc = progress_send(c, s->head);
      if (rc) return rc;
      if (!s->head->done) break;
      s->head = s->head->next;
      if (!s->head) s->tail = NULL;
    }
    queue *r = &c->recvq[p];
    while (r->head) {
      int rc = progress_recv(c, r->head);
      if (rc) return rc;
      if (!r->head->done) break;
      r->head = r->head->next;
      if (!r->head) r->tail = NULL;
    }
  }
  return 0;
}

static void enqueue(queue *q, cs_chan_req *r) {
  r->next = NULL;
  if (q->tail) q->tail->next = r;
  else q->head = r;
  q->tail = r;
}

/* A failed blocking call must not leave its stack request linked in. */
static void unlink_req(queue *q, cs_chan_req *r) {
  cs_chan_req **pp = &q->head, *prev = NULL;
  while (*pp && *pp != r) {
    prev = *pp;
    pp = &(*pp)->next;
  }
  if (!*pp) return;
  *pp = r->next;
  if (q->tail == r) q->tail = prev;
}

static int peer_dead(cs_chan *c, int peer) {
  return pid_dead(atomic_load_explicit(&c->h->pid[peer], memory_order_relaxed));
}

/* Called after each progress attempt on behalf of a request to `peer`:
 * yields when idle (more processes than cores), watches the peer every
 * 10 ms and gives up after the timeout without any progress. */
static int watch(cs_chan *c, int peer, unsigned long work_before) {
  if (c->work != work_before) {
    c->idle = 0;
    return 0;
  }
  c->idle++;
  if ((c->idle & 255) == 0) sched_yield();
  if ((c->idle & 1023) != 0) return 0;
  double t = now_s();
  if (c->idle == 1024) c->idle_since = c->last_check = t;
  if (t - c->last_check > 0.01) {
    c->last_check = t;
    if (peer_dead(c, peer)) {
      /* What the peer wrote before it died is still good: poll once more. */
      unsigned long w = c->work;
      int rc = progress(c);
      if (rc) return c->broken = rc;
      ring_ctl *from = ring(c, peer, c->rank);
      /* acquire: pairs with the dead producer's last release of tail */
      int unread = atomic_load_explicit(&from->tail, memory_order_acquire) !=
                   atomic_load_explicit(&from->head, memory_order_relaxed);
      if (c->work == w && !unread) return c->broken = CS_CHAN_EPEERDEAD;
      c->idle = 0;
    }
  }
  if (c->timeout_s > 0 && t - c->idle_since > c->timeout_s) return c->broken = CS_CHAN_ETIMEDOUT;
  return 0;
}

/* Spin until the request is done. */
static int wait_req(cs_chan *c, cs_chan_req *r) {
  for (;;) {
    if (c->broken) return c->broken;
    unsigned long before = c->work;
    int rc = progress(c);
    if (rc) return c->broken = rc;
    if (r->done) return r->err;
    if ((rc = watch(c, r->peer, before))) return rc;
  }
}

/* -- the API ----------------------------------------------------------------------- */
static int check_peer(const cs_chan *c, int peer) {
  return peer >= 0 && peer < c->nprocs && peer != c->rank;
}

int cs_chan_send(cs_chan *c, int dst, const void *buf, size_t n) {
  if (!check_peer(c, dst) || (n && !buf)) return CS_CHAN_EINVAL;
  if (!c->broken && n <= c->p.eager_max && !c->sendq[dst].head) {
    /* Fast path: nothing queued before it, so it may go straight in. */
    msg m = {.kind = K_SMALL, .len = (uint32_t)n};
    for (;;) {
      if (ring_write(c, dst, &m, buf, n)) return CS_CHAN_OK;
      unsigned long before = c->work;
      int rc = progress(c);
      if (rc) return c->broken = rc;
      if ((rc = watch(c, dst, before))) return rc;
    }
  }
  cs_chan_req r = {.peer = dst, .is_send = 1, .sbuf = buf, .len = n, .on_stack = 1};
  enqueue(&c->sendq[dst], &r);
  int rc = wait_req(c, &r);
  if (!r.done) unlink_req(&c->sendq[dst], &r);
  return rc;
}

int cs_chan_recv(cs_chan *c, int src, void *buf, size_t cap, size_t *got) {
  if (!check_peer(c, src) || (cap && !buf)) return CS_CHAN_EINVAL;
  while (!c->broken && !c->recvq[src].head) {
    /* Fast path: no receive queued before this one; small messages are
     * copied straight out of the ring. */
    msg *m = ring_peek(c, src);
    if (m && KIND(m) != K_SMALL) break; /* large: the general path */
    if (m) {
      int err = m->len > cap ? CS_CHAN_ETRUNC : CS_CHAN_OK;
      if (!err && m->len) memcpy(buf, m + 1, m->len);
      if (got) *got = m->len;
      ring_consume(c, src, m);
      return err;
    }
    unsigned long before = c->work;
    int rc = progress(c);
    if (rc) return c->broken = rc;
    if ((rc = watch(c, src, before))) return rc;
  }
  cs_chan_req r = {.peer = src, .rbuf = buf, .cap = cap, .on_stack = 1};
  enqueue(&c->recvq[src], &r);
  int rc = wait_req(c, &r);
  if (!r.done) unlink_req(&c->recvq[src], &r);
  if (got) *got = r.total;
  return rc;
}

static cs_chan_req *new_req(cs_chan *c) {
  cs_chan_req *r = c->free_reqs;
  if (r) {
    c->free_reqs = r->next;
    return r;
  }
  return malloc(sizeof *r);
}

static void free_req(cs_chan *c, cs_chan_req *r) {
  r->next = c->free_reqs;
  c->free_reqs = r;
}

int cs_chan_isend(cs_chan *c, int dst, const void *buf, size_t n, cs_chan_req **req) {
  if (!check_peer(c, dst) || (n && !buf)) return CS_CHAN_EINVAL;
  cs_chan_req *r = new_req(c);
  if (!r) return CS_CHAN_ENOMEM;
  *r = (cs_chan_req){.peer = dst, .is_send = 1, .sbuf = buf, .len = n};
  enqueue(&c->sendq[dst], r);
  *req = r;
  return progress(c);
}

int cs_chan_irecv(cs_chan *c, int src, void *buf, size_t cap, cs_chan_req **req) {
  if (!check_peer(c, src) || (cap && !buf)) return CS_CHAN_EINVAL;
  cs_chan_req *r = new_req(c);
  if (!r) return CS_CHAN_ENOMEM;
  *r = (cs_chan_req){.peer = src, .rbuf = buf, .cap = cap};
  enqueue(&c->recvq[src], r);
  *req = r;
  return progress(c);
}

int cs_chan_test(cs_chan *c, cs_chan_req *r, size_t *got) {
  if (c->broken) return c->broken;
  unsigned long before = c->work;
  int rc = progress(c);
  if (rc) return c->broken = rc;
  if (!r->done) return watch(c, r->peer, before);
  if (got) *got = r->total;
  int err = r->err;
  free_req(c, r);
  return err ? err : 1;
}

int cs_chan_wait(cs_chan *c, cs_chan_req *r, size_t *got) {
  int rc = wait_req(c, r);
  if (rc) return rc; /* the request stays queued: the channel is broken */
  if (got) *got = r->total;
  int err = r->err;
  free_req(c, r);
  return err;
}

int cs_chan_waitall(cs_chan *c, int n, cs_chan_req **reqs) {
  for (int i = 0; i < n; i++) {
    int rc = cs_chan_wait(c, reqs[i], NULL);
    if (rc) return rc;
  }
  return CS_CHAN_OK;
}

/* Dissemination barrier: log2(n) rounds of empty messages. */
int cs_chan_barrier(cs_chan *c) {
  for (int k = 1; k < c->nprocs; k *= 2) {
    int to = (c->rank + k) % c->nprocs, from = (c->rank - k + c->nprocs) % c->nprocs;
    cs_chan_req *s;
    int rc = cs_chan_isend(c, to, NULL, 0, &s);
    if (rc) return rc;
    if ((rc = cs_chan_recv(c, from, NULL, 0, NULL))) return rc;
    if ((rc = cs_chan_wait(c, s, NULL))) return rc;
  }
  return CS_CHAN_OK;
}

/* What the GPU paths' files share: a path's state, the memory helpers
 * every path's transport uses, and the transports themselves (path.c opens
 * a path and holds the buffer API; path_staged.c, path_ipc.c, path_nccl.c
 * and path_aware.c each hold one path's calls).  Private to those files:
 * benchmarks see cs.h's buffer API only. */
#ifndef CS_PATH_H
#define CS_PATH_H

#include "cs.h"
#include "cs_gpu.h"

#define TAG_IPC 11
#define TAG_CHUNK 12
#define MAX_REGIONS 8

/* The paths, in the order people read them (--list --json states them as
 * --path's choices, and options.c refuses any other name). */
enum { P_HOST, P_STAGED, P_PAGEABLE, P_PIPE, P_AWARE, P_IPC, P_NCCL };

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

static inline int on_device(const cs_ctx *c) { return c->path && !c->path->standin; }

/* The region (a buffer of the pair) holding ptr, or NULL (a word on the stack). */
region *cs_path_find(cs_path *p, const void *ptr);
/* Copies between the device and host memory (the stand-in: memcpy); non-zero
 * where they failed, cs_path_error() says why. */
int cs_path_to_host(const cs_ctx *c, void *dst, const void *src, size_t n);
int cs_path_from_host(const cs_ctx *c, void *dst, const void *src, size_t n);
/* Testing: 1 where --inject gpufail asked this copy to fail (its reason kept). */
int cs_path_injected(const cs_ctx *c, const char *what);

/* Each path's calls: staged and staged-pageable share one table. */
extern const cs_transport cs_path_staged, cs_path_pipelined, cs_path_ipc, cs_path_nccl;
/* cuda-aware: the MPI transport with device pointers, its collectives checked. */
const cs_transport *cs_path_aware(void);

#endif

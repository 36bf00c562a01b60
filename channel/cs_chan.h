/* cs_chan: an intra-node message channel between separate processes, after
 * Chai, Hartono and Panda's design (seed 002).
 *
 * - Small messages and control messages go through small per-pair receive
 *   buffers: one single-producer single-consumer ring per ordered pair.
 * - Large messages go through the sender's own shared buffer pool: the
 *   sender copies a chunk in, sends the chunk's descriptor through the
 *   pair's ring (its send queue), the receiver copies it out and hands the
 *   chunk back.  Pool memory grows with the process count, not its square.
 * - Optionally, large messages are read in one copy with process_vm_readv
 *   (cross-memory attach), as modern MPI implementations do.
 * Lock-free (C11 atomics), in order per pair.  Every call returns an error
 * code; nothing here calls exit(). */
#ifndef CS_CHAN_H
#define CS_CHAN_H

#include <stddef.h>
#include <stdint.h>

#define CS_CHAN_MAX_PROCS 256

enum cs_chan_err {
  CS_CHAN_OK = 0,
  CS_CHAN_EINVAL = -1,    /* bad argument */
  CS_CHAN_ENOMEM = -2,
  CS_CHAN_ESYS = -3,      /* a system call failed (see errno) */
  CS_CHAN_ETIMEDOUT = -4, /* nothing happened within the timeout */
  CS_CHAN_EPEERDEAD = -5, /* the peer process is gone */
  CS_CHAN_ETRUNC = -6,    /* the message is larger than the receive buffer */
  CS_CHAN_EEXIST = -7,    /* a live channel of that name exists */
};

typedef struct cs_chan_params {
  size_t ring_bytes;  /* per-pair receive buffer (power of two) */
  size_t eager_max;   /* messages up to this go through the ring */
  size_t chunk_bytes; /* size of one pool buffer */
  size_t nchunks;     /* pool buffers per process */
  int cma;            /* 1: large messages by process_vm_readv */
  double timeout_s;   /* how long a blocked call waits (<= 0: forever) */
} cs_chan_params;

typedef struct cs_chan cs_chan;
typedef struct cs_chan_req cs_chan_req;

/* Defaults measured on the development machine (see channel/README.md). */
void cs_chan_defaults(cs_chan_params *p);

/* Rank 0 creates the named channel for nprocs processes, the others attach;
 * all must pass the same parameters.  The segment's name is unlinked as
 * soon as everyone has attached, so no crash can leave it behind. */
int cs_chan_open(const char *name, int nprocs, int rank, const cs_chan_params *p, cs_chan **out);
int cs_chan_close(cs_chan *c);
/* Remove a segment left by processes that died before all attached. */
int cs_chan_unlink_stale(const char *name);

int cs_chan_send(cs_chan *c, int dst, const void *buf, size_t n);
int cs_chan_recv(cs_chan *c, int src, void *buf, size_t cap, size_t *got);
int cs_chan_isend(cs_chan *c, int dst, const void *buf, size_t n, cs_chan_req **req);
int cs_chan_irecv(cs_chan *c, int src, void *buf, size_t cap, cs_chan_req **req);
/* 1 when done (the request is freed), 0 when not yet, < 0 on error. */
int cs_chan_test(cs_chan *c, cs_chan_req *req, size_t *got);
int cs_chan_wait(cs_chan *c, cs_chan_req *req, size_t *got);
int cs_chan_waitall(cs_chan *c, int n, cs_chan_req **reqs);

int cs_chan_barrier(cs_chan *c);

/* Bytes of shared memory a channel uses, and what a design with one large
 * buffer per pair (the design seed 002 replaced) would use instead. */
size_t cs_chan_footprint(int nprocs, const cs_chan_params *p);
size_t cs_chan_footprint_per_pair(int nprocs, const cs_chan_params *p);
size_t cs_chan_segment_bytes(const cs_chan *c); /* measured: fstat of the segment */

const char *cs_chan_strerror(int err);

#endif

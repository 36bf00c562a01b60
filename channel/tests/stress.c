/* Stress test of cs_chan: N processes (or threads, for ThreadSanitizer)
 * exchange random-size messages across both paths in random interleavings;
 * every message is checked for size, content and order.  With --kill-at,
 * rank 1 dies mid-run and the others must stop with "peer is gone" (exit
 * 3) instead of hanging. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cs_chan.h"

#define W 8 /* requests in flight per direction */

typedef struct cfg {
  int procs, msgs, cma, threads, kill_at;
  unsigned seed;
  size_t max_size;
  char name[64];
  cs_chan_params p;
} cfg;

static uint64_t mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Size and content of message `seq` from src to dst: both sides derive them. */
static size_t msg_size(const cfg *g, int src, int dst, int seq) {
  uint64_t r = mix(g->seed ^ mix(((uint64_t)src << 40) ^ ((uint64_t)dst << 20) ^ (uint64_t)seq));
  switch (r % 4) {
    case 0: return r % 64;                           /* tiny, zero included */
    case 1: return r % (g->p.eager_max + 1);         /* up to the eager limit */
    case 2: return g->p.eager_max + 1 + r % (4 * g->p.chunk_bytes); /* large */
    default: return r % (g->max_size + 1);
  }
}

static unsigned char byte(int src, int dst, int seq, size_t i) {
  return (unsigned char)(mix(((uint64_t)src << 48) ^ ((uint64_t)dst << 32) ^ (uint64_t)seq) + i * 131);
}

typedef struct slot {
  cs_chan_req *req;
  int peer, seq;
  size_t len;
  unsigned char *buf;
} slot;

static int run_rank(const cfg *g, int rank) {
  cs_chan *c;
  int rc = cs_chan_open(g->name, g->procs, rank, &g->p, &c);
  if (rc) {
    fprintf(stderr, "rank %d: open: %s\n", rank, cs_chan_strerror(rc));
    return 2;
  }
  int n = g->procs;
  int *sent = calloc((size_t)n, sizeof *sent), *posted = calloc((size_t)n, sizeof *posted);
  int *checked = calloc((size_t)n, sizeof *checked);
  /* One receive always posted per peer (re-posted when it completes), so
   * every announced large message finds its match: a program that can
   * leave a peer without a posted receive may deadlock under rendezvous,
   * with MPI as with this channel. */
  slot sends[W] = {0}, *recvs = calloc((size_t)n, sizeof *recvs);
  size_t cap = g->max_size > 4 * g->p.chunk_bytes + g->p.eager_max + 1
                   ? g->max_size : 4 * g->p.chunk_bytes + g->p.eager_max + 1;
  for (int i = 0; i < W; i++) sends[i].buf = malloc(cap);
  for (int i = 0; i < n; i++) recvs[i].buf = malloc(cap);
  unsigned rnd = g->seed * 7919u + (unsigned)rank;
  long total_out = (long)g->msgs * (n - 1), done_out = 0, done_in = 0, actions = 0;
  int status = 0;
  while ((done_out < total_out || done_in < total_out) && !status) {
    actions++;
    if (g->kill_at && rank == 1 && actions == g->kill_at) raise(SIGKILL);
    int what = rand_r(&rnd) % 3, i = rand_r(&rnd) % W, peer = rand_r(&rnd) % n;
    if (what == 0 && !sends[i].req && peer != rank && sent[peer] < g->msgs) {
      slot *s = &sends[i];
      s->peer = peer;
      s->seq = sent[peer]++;
      s->len = msg_size(g, rank, peer, s->seq);
      for (size_t k = 0; k < s->len; k++) s->buf[k] = byte(rank, peer, s->seq, k);
      if ((rc = cs_chan_isend(c, peer, s->buf, s->len, &s->req))) status = rc;
    } else if (what == 1 && !recvs[peer].req && peer != rank && posted[peer] < g->msgs) {
      slot *r = &recvs[peer];
      r->peer = peer;
      r->seq = posted[peer]++;
      memset(r->buf, 0xEE, cap);
      if ((rc = cs_chan_irecv(c, peer, r->buf, cap, &r->req))) status = rc;
    } else {
      sched_yield(); /* oversubscribed on purpose: let the others run */
      for (int k = 0; k < W && !status; k++) {
        if (sends[k].req) {
          rc = cs_chan_test(c, sends[k].req, NULL);
          if (rc < 0) status = rc;
          else if (rc == 1) { sends[k].req = NULL; done_out++; }
        }
      }
      for (int k = 0; k < n && !status; k++) {
        if (recvs[k].req) {
          size_t got = 0;
          rc = cs_chan_test(c, recvs[k].req, &got);
          if (rc < 0) { status = rc; break; }
          if (rc == 0) continue;
          slot *r = &recvs[k];
          r->req = NULL;
          size_t want = msg_size(g, r->peer, rank, r->seq);
          if (got != want) {
            fprintf(stderr, "rank %d: message %d from %d has %zu bytes, expected %zu\n", rank,
                    r->seq, r->peer, got, want);
            return 1;
          }
          for (size_t b = 0; b < got; b++)
            if (r->buf[b] != byte(r->peer, rank, r->seq, b)) {
              fprintf(stderr, "rank %d: message %d from %d: byte %zu wrong (order or content)\n",
                      rank, r->seq, r->peer, b);
              return 1;
            }
          checked[r->peer]++;
          done_in++;
        }
      }
    }
  }
  if (status) {
    fprintf(stderr, "rank %d: %s\n", rank, cs_chan_strerror(status));
    cs_chan_close(c);
    return status == CS_CHAN_EPEERDEAD ? 3 : 4;
  }
  rc = cs_chan_barrier(c); /* nobody unmaps while others still read its pool */
  if (rc) fprintf(stderr, "rank %d: final barrier: %s\n", rank, cs_chan_strerror(rc));
  cs_chan_close(c);
  for (int i = 0; i < W; i++) free(sends[i].buf);
  for (int i = 0; i < n; i++) free(recvs[i].buf);
  free(recvs);
  free(sent);
  free(posted);
  free(checked);
  return rc ? 4 : 0;
}

typedef struct targ {
  const cfg *g;
  int rank, rc;
} targ;
static void *thread_main(void *a) {
  targ *t = a;
  t->rc = run_rank(t->g, t->rank);
  return NULL;
}

int main(int argc, char **argv) {
  cfg g = {.procs = 4, .msgs = 200, .seed = 1, .max_size = 1 << 20};
  cs_chan_defaults(&g.p);
  g.p.timeout_s = 20;
  snprintf(g.name, sizeof g.name, "stress-%d", (int)getpid());
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "0";
    if (!strcmp(a, "--procs")) g.procs = atoi(v), i++;
    else if (!strcmp(a, "--msgs")) g.msgs = atoi(v), i++;
    else if (!strcmp(a, "--seed")) g.seed = (unsigned)atoi(v), i++;
    else if (!strcmp(a, "--kill-at")) g.kill_at = atoi(v), i++;
    else if (!strcmp(a, "--timeout")) g.p.timeout_s = atof(v), i++;
    else if (!strcmp(a, "--cma")) g.p.cma = 1;
    else if (!strcmp(a, "--threads")) g.threads = 1;
    else if (!strcmp(a, "--small")) { /* tiny rings and pools: wrap and starve a lot */
      g.p.ring_bytes = 4096; g.p.eager_max = 1024; g.p.chunk_bytes = 4096; g.p.nchunks = 2;
      g.max_size = 64 * 1024;
    } else {
      fprintf(stderr, "stress: unknown option %s\n", a);
      return 2;
    }
  }
  int worst = 0;
  if (g.threads) {
    pthread_t th[CS_CHAN_MAX_PROCS];
    targ ta[CS_CHAN_MAX_PROCS];
    for (int r = 0; r < g.procs; r++) {
      ta[r] = (targ){&g, r, 0};
      pthread_create(&th[r], NULL, thread_main, &ta[r]);
    }
    for (int r = 0; r < g.procs; r++) {
      pthread_join(th[r], NULL);
      if (ta[r].rc > worst) worst = ta[r].rc;
    }
  } else {
    pid_t pids[CS_CHAN_MAX_PROCS];
    for (int r = 0; r < g.procs; r++) {
      pids[r] = fork();
      if (pids[r] == 0) _exit(run_rank(&g, r));
    }
    for (int r = 0; r < g.procs; r++) {
      int st;
      waitpid(pids[r], &st, 0);
      int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      printf("rank %d: %s %d\n", r, WIFEXITED(st) ? "exit" : "signal",
             WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
      if (!(g.kill_at && r == 1) && code > worst) worst = code;
    }
  }
  /* The segment's name must be gone, whatever happened. */
  char path[128];
  snprintf(path, sizeof path, "/dev/shm/cschan-%s", g.name);
  if (access(path, F_OK) == 0) {
    fprintf(stderr, "stress: %s was left behind\n", path);
    cs_chan_unlink_stale(g.name);
    return 5;
  }
  printf("stress: %d %s, %d messages per pair: %s\n", g.procs, g.threads ? "threads" : "processes",
         g.msgs, worst == 0 ? "all checked" : (worst == 3 ? "peer death detected" : "FAILED"));
  return worst;
}

/* The machine's floor: the round trip of one cache line between the two
 * cores that rank 0 and its point-to-point partner run on, bounced through
 * an MPI shared-memory window.  On a VM the host moves virtual CPUs between
 * physical cores (SMT siblings, other cores, other sockets), and this floor
 * jumps with it; every record carries the floor measured just before it, so
 * the analysis can tell which mode of the machine a figure belongs to. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "cs.h"

#define FLOOR_BATCHES 41
#define FLOOR_PER_BATCH 32
#define FLOOR_WARMUP 200

typedef struct cs_floor_line {
  _Alignas(64) _Atomic unsigned long ping;
  _Alignas(64) _Atomic unsigned long pong;
} cs_floor_line;

/* A pair that shares memory gets a window; anyone else gets none and
 * measures nothing (ranks on different nodes have no common cache).  Nor
 * does an oversubscribed node: two spinning ranks on one core would wait
 * a scheduler slice per bounce. */
int cs_floor_open(MPI_Comm comm, cs_floor *f) {
  int rank, np;
  f->win = MPI_WIN_NULL;
  f->line = NULL;
  f->role = -1;
  f->count = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &np);
  MPI_Comm node;
  int on_node = 0, cpus = (int)sysconf(_SC_NPROCESSORS_ONLN), crowded = 0;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &on_node);
  MPI_Comm_free(&node);
  int mine = on_node > cpus;
  MPI_Allreduce(&mine, &crowded, 1, MPI_INT, MPI_MAX, comm);
  int in_pair = np > 1 && !crowded && (rank == 0 || rank == np - 1);
  MPI_Comm pair, shared;
  MPI_Comm_split(comm, in_pair ? 0 : MPI_UNDEFINED, rank, &pair);
  if (pair == MPI_COMM_NULL) return CS_OK;
  MPI_Comm_split_type(pair, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
  MPI_Comm_free(&pair);
  int n = 0, me = 0;
  MPI_Comm_size(shared, &n);
  MPI_Comm_rank(shared, &me);
  if (n != 2) {
    MPI_Comm_free(&shared);
    return CS_OK;
  }
  void *base = NULL;
  MPI_Aint bytes = me == 0 ? (MPI_Aint)sizeof(cs_floor_line) : 0;
  if (MPI_Win_allocate_shared(bytes, 64, MPI_INFO_NULL, shared, &base, &f->win) != MPI_SUCCESS) {
    MPI_Comm_free(&shared);
    return CS_OK;
  }
  MPI_Aint sz;
  int disp;
  MPI_Win_shared_query(f->win, 0, &sz, &disp, &base);
  f->line = base;
  if (me == 0) {
    atomic_store(&f->line->ping, 0);
    atomic_store(&f->line->pong, 0);
  }
  MPI_Barrier(shared);
  f->role = me;
  f->comm = shared;
  return CS_OK;
}

void cs_floor_close(cs_floor *f) {
  if (f->win != MPI_WIN_NULL) {
    MPI_Win_free(&f->win);
    MPI_Comm_free(&f->comm);
  }
  f->line = NULL;
  f->role = -1;
}

#define FLOOR_GIVE_UP_US 500000.0

/* Wait until *v == want.  A partner that died (or never comes) would leave
 * this spinning forever, outside any MPI call that could notice: after
 * half a second the floor is given up for the rest of the job, and the
 * next MPI call meets the failure instead. */
static int wait_for(_Atomic unsigned long *v, unsigned long want) {
  unsigned spins = 0;
  double t0 = 0;
  while (atomic_load_explicit(v, memory_order_acquire) != want) {
    if (++spins % 4096 == 0) {
      double t = cs_now_us();
      if (t0 == 0)
        t0 = t;
      else if (t - t0 > FLOOR_GIVE_UP_US)
        return -1;
    }
  }
  return 0;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Both members of the pair call this at the same point of the program;
 * other ranks return NAN at once.  A few ms: 41 batches of 32 round trips,
 * each batch timed as a whole (one clock read per 64 one-way trips); the
 * figure is the median batch's one-way time in ns.  No MPI call runs
 * while the line bounces, so nothing else can be waited on. */
double cs_floor_measure(cs_floor *f) {
  if (!f->line) return NAN;
  cs_floor_line *l = f->line;
  unsigned long i = f->count;
  unsigned long total = FLOOR_WARMUP + (unsigned long)FLOOR_BATCHES * FLOOR_PER_BATCH;
  double t[FLOOR_BATCHES];
  if (f->role == 1) {
    for (unsigned long k = 1; k <= total; k++) {
      if (wait_for(&l->ping, i + k)) goto gone;
      atomic_store_explicit(&l->pong, i + k, memory_order_release);
    }
    f->count = i + total;
    return NAN;
  }
  unsigned long k = 0;
  for (int w = 0; w < FLOOR_WARMUP; w++) {
    atomic_store_explicit(&l->ping, i + ++k, memory_order_release);
    if (wait_for(&l->pong, i + k)) goto gone;
  }
  for (int b = 0; b < FLOOR_BATCHES; b++) {
    double t0 = cs_now_us();
    for (int r = 0; r < FLOOR_PER_BATCH; r++) {
      atomic_store_explicit(&l->ping, i + ++k, memory_order_release);
      if (wait_for(&l->pong, i + k)) goto gone;
    }
    t[b] = (cs_now_us() - t0) * 1e3 / (2.0 * FLOOR_PER_BATCH);
  }
  f->count = i + total;
  qsort(t, FLOOR_BATCHES, sizeof t[0], cmp_d);
  return t[FLOOR_BATCHES / 2];
gone:
  f->line = NULL; /* the window stays until close; the floor is not measured again */
  return NAN;
}

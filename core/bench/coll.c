/* Collectives, and the same collectives built by hand from point-to-point
 * calls (what a user would write instead).  Sizes: bcast and reductions
 * move `size` bytes per rank; gather, scatter, allgather, alltoall and
 * reduce_scatter move `size` bytes per rank and block (OSU's convention).
 * Bandwidth follows nccl-tests: algbw = the algorithm's bytes (size, or
 * np x size: bytes_per_op, bytes_x_np) / time, busbw = algbw x bus factor
 * (see docs/collectives.md).  Reductions read --dtype (CS_USES_DTYPE). */
#include <string.h>

#include "cs.h"

/* The buffers of repetition i: one pair (hot), or the i-th slot of a
 * sample's run through the cold pools (--buffers cold). */
#define S(c, i) cs_slot(c, (c)->sbuf, i)
#define R(c, i) cs_slot(c, (c)->rbuf, i)

#define TAG_COLL 3

/* -- sizes, factors, equivalents ---------------------------------------- */
static size_t whole_elems(const cs_ctx *c, size_t size) {
  size_t e = cs_dtype_size(c->opts);
  return size / e * e;
}
static double factor_1(int np) { (void)np; return 1.0; }
static double factor_allreduce(int np) { return 2.0 * (np - 1) / np; }
static double factor_nm1_n(int np) { return (double)(np - 1) / np; }
static long sends_nm1(int np) { return np - 1; }
static long sends_all(int np) { return (long)np * (np - 1); }

static size_t buf_size(const cs_ctx *c) { return c->size ? c->size : 1; }
static size_t buf_np(const cs_ctx *c) { return (c->size ? c->size : 1) * (size_t)c->np; }
static size_t buf_2np(const cs_ctx *c) { return 2 * buf_np(c); }

/* -- byte patterns (bcast, gather, scatter, allgather, alltoall) --------- */
/* Block `blk` of the data that `from` sends in `sample`. */
static uint64_t block_seed(const cs_ctx *c, int from, int blk, long sample) {
  return cs_seed(c->size, from * 65536 + blk, sample);
}

static int check_block(const void *p, const cs_ctx *c, int from, int blk, long sample, char *why,
                       size_t len) {
  unsigned got = 0, want = 0;
  long bad = cs_check(p, c->size, block_seed(c, from, blk, sample), &got, &want);
  if (bad < 0) return 0;
  snprintf(why, len, "block %d from rank %d: byte %ld is 0x%02x, expected 0x%02x", blk, from,
           bad, got, want);
  return 1;
}

static char *blk(void *base, const cs_ctx *c, int i) { return (char *)base + (size_t)i * c->size; }

/* -- integer-valued elements (reductions) ------------------------------- */
/* Small integers, so int and double sums are exact for any rank count. */
static long value(int rank, size_t i, long sample) {
  return (long)((i * 7 + (size_t)rank * 13 + (size_t)(sample & 0xffff) * 3) % 1000);
}

static void fill_values(void *buf, const cs_ctx *c, size_t count, size_t first, long sample) {
  int dbl = cs_dtype_size(c->opts) == sizeof(double);
  for (size_t i = 0; i < count; i++) {
    long v = value(c->rank, first + i, sample);
    if (dbl)
      ((double *)buf)[i] = (double)v;
    else
      ((int *)buf)[i] = (int)v;
  }
}

static int check_sums(const void *buf, const cs_ctx *c, size_t count, size_t first, long sample,
                      char *why, size_t len) {
  int dbl = cs_dtype_size(c->opts) == sizeof(double);
  for (size_t i = 0; i < count; i++) {
    long want = 0;
    for (int r = 0; r < c->np; r++) want += value(r, first + i, sample);
    double got = dbl ? ((const double *)buf)[i] : (double)((const int *)buf)[i];
    if (got != (double)want) {
      snprintf(why, len, "element %zu of the sum is %.17g, expected %ld", first + i, got, want);
      return 1;
    }
  }
  return 0;
}

static size_t count_of(const cs_ctx *c) { return c->size / cs_dtype_size(c->opts); }

/* -- barrier --------------------------------------------------------------- */
static size_t buf_none(const cs_ctx *c) { (void)c; return 64; }
static void prep_none(cs_ctx *c, long s) { (void)c; (void)s; }
static int check_none(cs_ctx *c, long s, char *w, size_t n) { (void)c; (void)s; (void)w; (void)n; return 0; }
static int run_barrier(cs_ctx *c, long reps) {
  int rc = 0;
  for (long i = 0; i < reps && !rc; i++) rc = c->tp->barrier(c);
  return rc;
}

/* -- bcast ----------------------------------------------------------------- */
/* Buffers are filled, poisoned and checked through cs_buf_* (a GPU path's
 * live on the device); the GPU paths' collectives go through c->tp. */
static void prep_bcast(cs_ctx *c, long s) {
  if (c->rank == c->root)
    cs_buf_fill(c, c->sbuf, c->size, block_seed(c, c->root, 0, s));
  else
    cs_buf_poison(c, c->sbuf, c->size);
}
static int check_bcast(cs_ctx *c, long s, char *why, size_t n) {
  return check_block(cs_buf_get(c, c->sbuf, c->size), c, c->root, 0, s, why, n);
}
/* Testing (--inject corrupt@SIZE): bcast's data lands in sbuf, not rbuf. */
static void corrupt_bcast(cs_ctx *c) {
  if (!c->size) return;
  unsigned char *v = cs_buf_get(c, c->sbuf, c->size);
  v[c->size / 2] ^= 0x40;
  cs_buf_put(c, c->sbuf, v, c->size);
}
static int run_bcast(cs_ctx *c, long reps) {
  int rc = 0;
  if (c->tp->bcast)
    for (long i = 0; i < reps && !rc; i++) rc = c->tp->bcast(c, S(c, i), c->size, c->root);
  else
    for (long i = 0; i < reps; i++) MPI_Bcast(S(c, i), (int)c->size, MPI_BYTE, c->root, c->comm);
  return rc;
}
static int run_bcast_sends(cs_ctx *c, long reps) {
  for (long i = 0; i < reps; i++) {
    if (c->rank == c->root) {
      for (int r = 0; r < c->np; r++)
        if (r != c->root) MPI_Send(S(c, i), (int)c->size, MPI_BYTE, r, TAG_COLL, c->comm);
    } else {
      MPI_Recv(S(c, i), (int)c->size, MPI_BYTE, c->root, TAG_COLL, c->comm, MPI_STATUS_IGNORE);
    }
  }
  return 0;
}

/* -- reduce / allreduce -------------------------------------------------- */
static void prep_reduce(cs_ctx *c, long s) {
  void *v = cs_buf_get(c, c->sbuf, c->size);
  fill_values(v, c, count_of(c), 0, s);
  cs_buf_put(c, c->sbuf, v, c->size);
  cs_buf_poison(c, c->rbuf, c->size);
}
static int check_reduce(cs_ctx *c, long s, char *why, size_t n) {
  return c->rank == c->root ? check_sums(c->rbuf, c, count_of(c), 0, s, why, n) : 0;
}
static int check_allreduce(cs_ctx *c, long s, char *why, size_t n) {
  return check_sums(cs_buf_get(c, c->rbuf, c->size), c, count_of(c), 0, s, why, n);
}
static int run_reduce(cs_ctx *c, long reps) {
  for (long i = 0; i < reps; i++)
    MPI_Reduce(S(c, i), R(c, i), (int)count_of(c), cs_dtype(c->opts), MPI_SUM, c->root, c->comm);
  return 0;
}
static int run_allreduce(cs_ctx *c, long reps) {
  int rc = 0;
  if (c->tp->allreduce)
    for (long i = 0; i < reps && !rc; i++) rc = c->tp->allreduce(c, S(c, i), R(c, i), count_of(c));
  else
    for (long i = 0; i < reps; i++)
      MPI_Allreduce(S(c, i), R(c, i), (int)count_of(c), cs_dtype(c->opts), MPI_SUM, c->comm);
  return rc;
}
/* Hand-rolled: everyone sends its vector to the root, which adds them up
 * (its scratch is the second half of rbuf). */
static void add_into(void *acc, const void *in, const cs_ctx *c) {
  size_t n = count_of(c);
  if (cs_dtype_size(c->opts) == sizeof(double))
    for (size_t i = 0; i < n; i++) ((double *)acc)[i] += ((const double *)in)[i];
  else
    for (size_t i = 0; i < n; i++) ((int *)acc)[i] += ((const int *)in)[i];
}
static int run_reduce_sends(cs_ctx *c, long reps) {
  int n = (int)count_of(c);
  MPI_Datatype t = cs_dtype(c->opts);
  for (long i = 0; i < reps; i++) {
    char *scratch = (char *)R(c, i) + c->size;
    if (c->rank == c->root) {
      memcpy(R(c, i), S(c, i), c->size);
      for (int r = 0; r < c->np; r++) {
        if (r == c->root) continue;
        MPI_Recv(scratch, n, t, r, TAG_COLL, c->comm, MPI_STATUS_IGNORE);
        add_into(R(c, i), scratch, c);
      }
    } else {
      MPI_Send(S(c, i), n, t, c->root, TAG_COLL, c->comm);
    }
  }
  return 0;
}

/* -- gather / allgather ------------------------------------------------- */
static void prep_gather(cs_ctx *c, long s) {
  cs_fill(c->sbuf, c->size, block_seed(c, c->rank, 0, s));
  cs_poison(c->rbuf, c->size * (size_t)c->np);
}
static int check_gathered(cs_ctx *c, long s, char *why, size_t n) {
  for (int r = 0; r < c->np; r++)
    if (check_block(blk(c->rbuf, c, r), c, r, 0, s, why, n)) return 1;
  return 0;
}
static int check_gather(cs_ctx *c, long s, char *why, size_t n) {
  return c->rank == c->root ? check_gathered(c, s, why, n) : 0;
}
static int run_gather(cs_ctx *c, long reps) {
  int n = (int)c->size;
  for (long i = 0; i < reps; i++)
    MPI_Gather(S(c, i), n, MPI_BYTE, R(c, i), n, MPI_BYTE, c->root, c->comm);
  return 0;
}
static int run_allgather(cs_ctx *c, long reps) {
  int n = (int)c->size;
  for (long i = 0; i < reps; i++)
    MPI_Allgather(S(c, i), n, MPI_BYTE, R(c, i), n, MPI_BYTE, c->comm);
  return 0;
}
static int run_gather_sends(cs_ctx *c, long reps) {
  int n = (int)c->size;
  for (long i = 0; i < reps; i++) {
    if (c->rank == c->root) {
      memcpy(blk(R(c, i), c, c->root), S(c, i), c->size);
      for (int r = 0; r < c->np; r++)
        if (r != c->root)
          MPI_Recv(blk(R(c, i), c, r), n, MPI_BYTE, r, TAG_COLL, c->comm, MPI_STATUS_IGNORE);
    } else {
      MPI_Send(S(c, i), n, MPI_BYTE, c->root, TAG_COLL, c->comm);
    }
  }
  return 0;
}

/* -- scatter -------------------------------------------------------------- */
static void prep_scatter(cs_ctx *c, long s) {
  if (c->rank == c->root)
    for (int r = 0; r < c->np; r++) cs_fill(blk(c->sbuf, c, r), c->size, block_seed(c, c->root, r, s));
  cs_poison(c->rbuf, c->size);
}
static int check_scatter(cs_ctx *c, long s, char *why, size_t n) {
  return check_block(c->rbuf, c, c->root, c->rank, s, why, n);
}
static int run_scatter(cs_ctx *c, long reps) {
  int n = (int)c->size;
  for (long i = 0; i < reps; i++)
    MPI_Scatter(S(c, i), n, MPI_BYTE, R(c, i), n, MPI_BYTE, c->root, c->comm);
  return 0;
}
static int run_scatter_sends(cs_ctx *c, long reps) {
  int n = (int)c->size;
  for (long i = 0; i < reps; i++) {
    if (c->rank == c->root) {
      for (int r = 0; r < c->np; r++)
        if (r != c->root) MPI_Send(blk(S(c, i), c, r), n, MPI_BYTE, r, TAG_COLL, c->comm);
      memcpy(R(c, i), blk(S(c, i), c, c->root), c->size);
    } else {
      MPI_Recv(R(c, i), n, MPI_BYTE, c->root, TAG_COLL, c->comm, MPI_STATUS_IGNORE);
    }
  }
  return 0;
}

/* -- alltoall ------------------------------------------------------------- */
static void prep_alltoall(cs_ctx *c, long s) {
  for (int r = 0; r < c->np; r++)
    cs_buf_fill(c, blk(c->sbuf, c, r), c->size, block_seed(c, c->rank, r, s));
  cs_buf_poison(c, c->rbuf, c->size * (size_t)c->np);
}
static int check_alltoall(cs_ctx *c, long s, char *why, size_t n) {
  void *v = cs_buf_get(c, c->rbuf, c->size * (size_t)c->np);
  for (int r = 0; r < c->np; r++)
    if (check_block(blk(v, c, r), c, r, c->rank, s, why, n)) return 1;
  return 0;
}
static int run_alltoall(cs_ctx *c, long reps) {
  int rc = 0;
  for (long i = 0; i < reps && !rc; i++) rc = c->tp->alltoall(c, S(c, i), R(c, i), c->size);
  return rc;
}
/* Hand-rolled: post every receive, then send in a rotated order so that
 * not everyone targets rank 0 first; blocking sends cannot deadlock as
 * all receives are already posted. */
static int run_alltoall_sends(cs_ctx *c, long reps) {
  int n = (int)c->size, k = 0;
  for (long i = 0; i < reps; i++) {
    k = 0;
    for (int r = 0; r < c->np; r++)
      if (r != c->rank)
        MPI_Irecv(blk(R(c, i), c, r), n, MPI_BYTE, r, TAG_COLL, c->comm, &c->reqs[k++]);
    for (int j = 1; j < c->np; j++) {
      int to = (c->rank + j) % c->np;
      MPI_Send(blk(S(c, i), c, to), n, MPI_BYTE, to, TAG_COLL, c->comm);
    }
    memcpy(blk(R(c, i), c, c->rank), blk(S(c, i), c, c->rank), c->size);
    MPI_Waitall(k, c->reqs, c->stats);
  }
  return 0;
}

/* -- reduce_scatter -------------------------------------------------------- */
static void prep_reduce_scatter(cs_ctx *c, long s) {
  fill_values(c->sbuf, c, count_of(c) * (size_t)c->np, 0, s);
  cs_poison(c->rbuf, c->size);
}
static int check_reduce_scatter(cs_ctx *c, long s, char *why, size_t n) {
  return check_sums(c->rbuf, c, count_of(c), count_of(c) * (size_t)c->rank, s, why, n);
}
static int run_reduce_scatter(cs_ctx *c, long reps) {
  for (long i = 0; i < reps; i++)
    MPI_Reduce_scatter_block(S(c, i), R(c, i), (int)count_of(c), cs_dtype(c->opts), MPI_SUM,
                             c->comm);
  return 0;
}

/* -- the table entries ------------------------------------------------------ */
#define COLL .group = "coll", .min_np = 2, .ops_per_rep = 1, .timing = CS_TIME_MAX
#define SENDS .group = "coll-sends", .min_np = 2, .ops_per_rep = 1, .timing = CS_TIME_MAX

const cs_bench cs_bench_barrier = {
    .name = "barrier", COLL, .metric = "time per barrier", .sizeless = 1, .any_transport = 1,
    .desc = "MPI_Barrier", .buf_bytes = buf_none, .prepare = prep_none, .run = run_barrier,
    .check = check_none,
};
const cs_bench cs_bench_bcast = {
    .name = "bcast", COLL, .gpu = 1, .metric = "time per broadcast", .rooted = 1,
    .desc = "MPI_Bcast of size bytes from the root", .equiv_sends = sends_nm1,
    .bytes_per_op = 1, .bus_factor = factor_1, .buf_bytes = buf_size, .prepare = prep_bcast,
    .run = run_bcast, .check = check_bcast, .corrupt = corrupt_bcast,
};
const cs_bench cs_bench_bcast_sends = {
    .name = "bcast_sends", SENDS, .metric = "time per broadcast", .rooted = 1,
    .desc = "broadcast by hand: the root sends to every rank", .equiv_of = "bcast",
    .equiv_sends = sends_nm1, .bytes_per_op = 1, .bus_factor = factor_1,
    .buf_bytes = buf_size, .prepare = prep_bcast, .run = run_bcast_sends, .check = check_bcast,
    .corrupt = corrupt_bcast,
};
const cs_bench cs_bench_reduce = {
    .name = "reduce", COLL, .metric = "time per reduction", .rooted = 1, .uses = CS_USES_DTYPE,
    .desc = "MPI_Reduce (sum) of size bytes to the root", .equiv_sends = sends_nm1,
    .bytes_per_op = 1, .bus_factor = factor_1, .size_fix = whole_elems,
    .buf_bytes = buf_2np, .prepare = prep_reduce, .run = run_reduce, .check = check_reduce,
};
const cs_bench cs_bench_reduce_sends = {
    .name = "reduce_sends", SENDS, .metric = "time per reduction", .rooted = 1,
    .uses = CS_USES_DTYPE,
    .desc = "reduction by hand: every rank sends to the root, which sums",
    .equiv_of = "reduce", .equiv_sends = sends_nm1, .bytes_per_op = 1,
    .bus_factor = factor_1, .size_fix = whole_elems, .buf_bytes = buf_2np,
    .prepare = prep_reduce, .run = run_reduce_sends, .check = check_reduce,
};
const cs_bench cs_bench_allreduce = {
    .name = "allreduce", COLL, .gpu = 1, .metric = "time per reduction", .uses = CS_USES_DTYPE,
    .desc = "MPI_Allreduce (sum) of size bytes", .bytes_per_op = 1,
    .bus_factor = factor_allreduce, .size_fix = whole_elems, .buf_bytes = buf_size,
    .prepare = prep_reduce, .run = run_allreduce, .check = check_allreduce,
};
const cs_bench cs_bench_gather = {
    .name = "gather", COLL, .metric = "time per gather", .rooted = 1,
    .desc = "MPI_Gather of size bytes per rank", .equiv_sends = sends_nm1,
    .bytes_per_op = 1, .bytes_x_np = 1, .bus_factor = factor_nm1_n, .buf_bytes = buf_np,
    .prepare = prep_gather, .run = run_gather, .check = check_gather,
};
const cs_bench cs_bench_gather_sends = {
    .name = "gather_sends", SENDS, .metric = "time per gather", .rooted = 1,
    .desc = "gather by hand: every rank sends to the root", .equiv_of = "gather",
    .equiv_sends = sends_nm1, .bytes_per_op = 1, .bytes_x_np = 1, .bus_factor = factor_nm1_n,
    .buf_bytes = buf_np, .prepare = prep_gather, .run = run_gather_sends, .check = check_gather,
};
const cs_bench cs_bench_scatter = {
    .name = "scatter", COLL, .metric = "time per scatter", .rooted = 1,
    .desc = "MPI_Scatter of size bytes per rank", .equiv_sends = sends_nm1,
    .bytes_per_op = 1, .bytes_x_np = 1, .bus_factor = factor_nm1_n, .buf_bytes = buf_np,
    .prepare = prep_scatter, .run = run_scatter, .check = check_scatter,
};
const cs_bench cs_bench_scatter_sends = {
    .name = "scatter_sends", SENDS, .metric = "time per scatter", .rooted = 1,
    .desc = "scatter by hand: the root sends each rank its block", .equiv_of = "scatter",
    .equiv_sends = sends_nm1, .bytes_per_op = 1, .bytes_x_np = 1, .bus_factor = factor_nm1_n,
    .buf_bytes = buf_np, .prepare = prep_scatter, .run = run_scatter_sends,
    .check = check_scatter,
};
const cs_bench cs_bench_allgather = {
    .name = "allgather", COLL, .metric = "time per allgather",
    .desc = "MPI_Allgather of size bytes per rank", .bytes_per_op = 1, .bytes_x_np = 1,
    .bus_factor = factor_nm1_n, .buf_bytes = buf_np, .prepare = prep_gather,
    .run = run_allgather, .check = check_gathered,
};
const cs_bench cs_bench_alltoall = {
    .name = "alltoall", COLL, .gpu = 1, .metric = "time per alltoall", .any_transport = 1,
    .desc = "MPI_Alltoall of size bytes per pair", .equiv_sends = sends_all,
    .bytes_per_op = 1, .bytes_x_np = 1, .bus_factor = factor_nm1_n, .buf_bytes = buf_np,
    .prepare = prep_alltoall, .run = run_alltoall, .check = check_alltoall,
};
const cs_bench cs_bench_alltoall_sends = {
    .name = "alltoall_sends", SENDS, .metric = "time per alltoall",
    .desc = "alltoall by hand: receives posted, then a send to every rank",
    .equiv_of = "alltoall", .equiv_sends = sends_all, .bytes_per_op = 1, .bytes_x_np = 1,
    .bus_factor = factor_nm1_n, .buf_bytes = buf_np, .prepare = prep_alltoall,
    .run = run_alltoall_sends, .check = check_alltoall,
};
const cs_bench cs_bench_reduce_scatter = {
    .name = "reduce_scatter", COLL, .metric = "time per reduce-scatter", .uses = CS_USES_DTYPE,
    .desc = "MPI_Reduce_scatter_block (sum), size bytes per rank", .bytes_per_op = 1, .bytes_x_np = 1,
    .bus_factor = factor_nm1_n, .size_fix = whole_elems, .buf_bytes = buf_np,
    .prepare = prep_reduce_scatter, .run = run_reduce_scatter, .check = check_reduce_scatter,
};

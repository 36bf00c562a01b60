/* The benchmark table: the one place that names every benchmark.  Python
 * reads it through `cs-core --list --json`. */
#include <string.h>

#include "cs.h"

extern const cs_bench cs_bench_latency, cs_bench_roundtrip, cs_bench_sendloop, cs_bench_bw,
    cs_bench_bibw, cs_bench_loggp_1, cs_bench_loggp_n, cs_bench_loggp_nd, cs_bench_loggp_ndr;
extern const cs_bench cs_bench_barrier, cs_bench_bcast, cs_bench_reduce, cs_bench_allreduce,
    cs_bench_gather, cs_bench_scatter, cs_bench_alltoall, cs_bench_allgather,
    cs_bench_reduce_scatter;
extern const cs_bench cs_bench_matmul, cs_bench_jacobi, cs_bench_summa, cs_bench_gpu_matmul,
    cs_bench_gpu_jacobi;
extern const cs_bench cs_bench_bcast_sends, cs_bench_reduce_sends, cs_bench_gather_sends,
    cs_bench_scatter_sends, cs_bench_alltoall_sends;

static const cs_bench *const TABLE[] = {
    /* point-to-point */
    &cs_bench_latency, &cs_bench_roundtrip, &cs_bench_sendloop, &cs_bench_bw, &cs_bench_bibw,
    /* LogGP trains */
    &cs_bench_loggp_1, &cs_bench_loggp_n, &cs_bench_loggp_nd, &cs_bench_loggp_ndr,
    /* collectives */
    &cs_bench_barrier, &cs_bench_bcast, &cs_bench_reduce, &cs_bench_allreduce, &cs_bench_gather,
    &cs_bench_scatter, &cs_bench_alltoall, &cs_bench_allgather, &cs_bench_reduce_scatter,
    /* the same, built from point-to-point calls */
    &cs_bench_bcast_sends, &cs_bench_reduce_sends, &cs_bench_gather_sends,
    &cs_bench_scatter_sends, &cs_bench_alltoall_sends,
    /* applications */
    &cs_bench_matmul, &cs_bench_summa, &cs_bench_jacobi,
    /* applications on GPUs */
    &cs_bench_gpu_matmul, &cs_bench_gpu_jacobi,
};

const cs_bench *const *cs_bench_all(int *n) {
  *n = (int)(sizeof TABLE / sizeof TABLE[0]);
  return TABLE;
}

const cs_bench *cs_bench_find(const char *name) {
  int n;
  const cs_bench *const *all = cs_bench_all(&n);
  for (int i = 0; i < n; i++)
    if (!strcmp(all[i]->name, name)) return all[i];
  return NULL;
}

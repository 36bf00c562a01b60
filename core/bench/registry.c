/* The benchmark table: the one place that names every benchmark.  Python
 * reads it through `cs-core --list --json`. */
#include <string.h>

#include "cs.h"

extern const cs_bench cs_bench_latency, cs_bench_roundtrip, cs_bench_sendloop, cs_bench_bw,
    cs_bench_bibw;

static const cs_bench *const TABLE[] = {
    &cs_bench_latency, &cs_bench_roundtrip, &cs_bench_sendloop, &cs_bench_bw, &cs_bench_bibw,
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

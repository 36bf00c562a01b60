/* Memory: page-aligned buffers touched outside any timed region, and what
 * the machine has available. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cs.h"

void *cs_alloc(size_t n) {
  void *p = NULL;
  if (posix_memalign(&p, 4096, n ? n : 64)) return NULL;
  memset(p, 0, n ? n : 64); /* first touch outside any timed region */
  return p;
}

/* Bytes the kernel says can be had without swapping (applications check
 * their footprint against it before allocating); -1 where unknown. */
double cs_mem_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  char line[256];
  double kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
  if (f) fclose(f);
  return kb < 0 ? -1 : kb * 1024.0;
}

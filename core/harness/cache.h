/* The caches this CPU sees, as the kernel describes them (sysfs).  glibc's
 * sysconf(_SC_LEVEL3_CACHE_SIZE) reads CPUID, which a VM may fill with the
 * whole socket's figure (320 MiB here, where the core shares 32 MiB): the
 * kernel's per-CPU description is the one a rank's data competes in.
 * Header-only: the core and the probe (one file, no MPI) both include it. */
#ifndef CS_CACHE_H
#define CS_CACHE_H

#include <stdio.h>
#include <unistd.h>

/* Bytes of the cache of `level` (2, 3) that cpu0 sees, or -1: from sysfs
 * ("32768K"), else from sysconf. */
static inline long cs_cache_bytes(int level) {
  for (int i = 0; i < 16; i++) {
    char path[96];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    FILE *f = fopen(path, "r");
    if (!f) break;
    int lv = 0;
    int got = fscanf(f, "%d", &lv);
    fclose(f);
    if (got != 1 || lv != level) continue;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    if (!(f = fopen(path, "r"))) continue;
    long n = 0;
    char unit = 0;
    got = fscanf(f, "%ld%c", &n, &unit);
    fclose(f);
    if (got < 1 || n <= 0) continue;
    return unit == 'K' ? n << 10 : unit == 'M' ? n << 20 : n;
  }
  long s = sysconf(level == 2 ? _SC_LEVEL2_CACHE_SIZE : _SC_LEVEL3_CACHE_SIZE);
  return s > 0 ? s : -1;
}

/* The last level: L3 where there is one, else L2. */
static inline long cs_llc_bytes(void) {
  long l3 = cs_cache_bytes(3);
  return l3 > 0 ? l3 : cs_cache_bytes(2);
}

#endif

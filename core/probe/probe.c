/* The machine under MPI, measured without MPI: what the hardware and the
 * kernel allow before any library adds its cost.  Prints one JSON object.
 *
 *   cs-probe [--cpus LIST] [--pair-ms MS] [--mem-mib MIB]
 *
 * - core-to-core: one cache line bounced between two threads pinned to two
 *   cores, for every pair of the cores we may run on (or of LIST); the
 *   one-way time is half a round trip, median over batches;
 * - copy: one core copying with plain stores (as the stencil does), at a
 *   size that stays in cache and one that does not; bytes read plus written;
 * - process_vm_readv (the single-copy path of Open MPI and MPICH within a
 *   node): the time of one 8-byte call and the bandwidth of 4 MiB calls,
 *   reading a child process's memory;
 * - page size, transparent huge pages, NUMA nodes and their CPUs, the
 *   clock's resolution, its observed step and the cost of one read.
 * Every transfer is checked after its timing; a check that fails turns the
 * figure into null with the reason. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../harness/cache.h"

#define MAXCPU 256

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int pin(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  return pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

/* -- core to core ---------------------------------------------------------- */
typedef struct {
  _Alignas(64) _Atomic unsigned long ping;
  _Alignas(64) _Atomic unsigned long pong;
  _Alignas(64) unsigned long total;
  _Atomic int stop; /* the measuring side is done: the echo returns at once */
  int cpu;
  int ok;
} bounce;

static void *echo(void *arg) {
  bounce *b = arg;
  b->ok = pin(b->cpu) == 0;
  for (unsigned long i = 1; i <= b->total; i++) {
    unsigned long v;
    while ((v = atomic_load_explicit(&b->ping, memory_order_acquire)) < i) {
      if (atomic_load_explicit(&b->stop, memory_order_relaxed)) return NULL;
    }
    if (v != i) { /* the value is the message: anything else is a lost bounce */
      b->ok = 0;
      atomic_store_explicit(&b->pong, ~0UL, memory_order_release);
      return NULL;
    }
    atomic_store_explicit(&b->pong, i, memory_order_release);
  }
  return NULL;
}

/* One-way ns between cpu a and cpu b (median and min over batches), or
 * negative when a thread could not be pinned or a bounce was lost. */
static int pair(int a, int b, double budget_ms, double *med, double *lo) {
  enum { PER = 200, BATCHES = 41 };
  static bounce bx;
  memset(&bx, 0, sizeof bx);
  bx.total = (unsigned long)PER * BATCHES * 64 + 2000;
  bx.cpu = b;
  pthread_t th;
  if (pthread_create(&th, NULL, echo, &bx)) return -1;
  int ok = pin(a) == 0;
  double t[BATCHES * 64];
  int nb = 0;
  unsigned long i = 0;
  double stop = now_ns() + budget_ms * 1e6;
  while (i < bx.total && ok) {
    double t0 = now_ns();
    int k;
    for (k = 0; k < PER && i < bx.total; k++) {
      atomic_store_explicit(&bx.ping, ++i, memory_order_release);
      unsigned long v;
      while ((v = atomic_load_explicit(&bx.pong, memory_order_acquire)) != i) {
        if (v == ~0UL) {
          ok = 0;
          break;
        }
      }
      if (!ok) break;
    }
    double dt = now_ns() - t0;
    if (i > 2000 && k == PER && nb < BATCHES * 64) t[nb++] = dt / PER / 2.0; /* after warm-up */
    if (now_ns() > stop && nb >= 5) break;
  }
  atomic_store_explicit(&bx.stop, 1, memory_order_relaxed);
  pthread_join(th, NULL);
  if (!ok || !bx.ok || nb == 0) return -1;
  *med = median(t, nb);
  *lo = t[0];
  return nb;
}

/* -- copy ------------------------------------------------------------------ */
static void plain_copy(double *restrict d, const double *restrict s, size_t n) {
  for (size_t i = 0; i < n; i++) d[i] = s[i];
}

/* GB/s of bytes read plus written, median over repetitions lasting at least
 * budget_ms in all; negative (with *why) when the copy did not copy. */
static double copy_gbs(size_t bytes, double budget_ms, const char **why) {
  size_t n = bytes / 8;
  double *a = aligned_alloc(4096, n * 8), *b = aligned_alloc(4096, n * 8);
  if (!a || !b) {
    free(a);
    free(b);
    *why = "cannot allocate";
    return -1.0;
  }
  for (size_t i = 0; i < n; i++) a[i] = (double)(i * 7 + 3);
  memset(b, 0, n * 8);
  plain_copy(b, a, n);
  double t[501];
  int k = 0;
  double stop = now_ns() + budget_ms * 1e6;
  while (k < 501 && (k < 5 || now_ns() < stop)) {
    a[k % n] += 1.0; /* a new value each time: the copy cannot be skipped */
    double t0 = now_ns();
    plain_copy(b, a, n);
    t[k++] = now_ns() - t0;
    if (b[k % n] != a[k % n] || b[(k - 1) % n] != a[(k - 1) % n]) {
      *why = "copied data differs";
      free(a);
      free(b);
      return -1.0;
    }
  }
  int bad = memcmp(a, b, n * 8) != 0;
  free(a);
  free(b);
  if (bad) {
    *why = "copied data differs";
    return -1.0;
  }
  return 16.0 * (double)n / median(t, k);
}

/* -- process_vm_readv ---------------------------------------------------- */
static unsigned char pattern(size_t i) { return (unsigned char)(i * 131u + 17u); }

static int cma(double *call_ns, double *gbs, const char **why) {
  const size_t big = (size_t)4 << 20;
  unsigned char *src = aligned_alloc(4096, big), *dst = aligned_alloc(4096, big);
  if (!src || !dst) {
    *why = "cannot allocate";
    return -1;
  }
  for (size_t i = 0; i < big; i++) src[i] = pattern(i);
  int go[2];
  if (pipe(go)) return -1;
  pid_t child = fork();
  if (child < 0) {
    *why = strerror(errno);
    return -1;
  }
  if (child == 0) { /* holds src (the same address after fork) until the parent is done */
    char c;
    close(go[1]);
    ssize_t r = read(go[0], &c, 1);
    _exit(r < 0);
  }
  close(go[0]);
  int rc = 0;
  struct iovec l = {dst, 8}, r = {src, 8};
  if (process_vm_readv(child, &l, 1, &r, 1, 0) != 8) {
    *why = strerror(errno); /* EPERM: ptrace scope or a container's seccomp */
    rc = -1;
  } else {
    double t[41];
    for (int b = 0; b < 41; b++) {
      double t0 = now_ns();
      for (int k = 0; k < 1000; k++) {
        r.iov_base = src + (size_t)(k % 512) * 8;
        process_vm_readv(child, &l, 1, &r, 1, 0);
      }
      t[b] = (now_ns() - t0) / 1000.0;
    }
    *call_ns = median(t, 41);
    if (memcmp(dst, src + (size_t)(999 % 512) * 8, 8) != 0) {
      *why = "data read differs";
      rc = -1;
    }
    l.iov_len = r.iov_len = big;
    l.iov_base = dst;
    r.iov_base = src;
    for (int b = 0; b < 21 && rc == 0; b++) {
      memset(dst, 0, 64);
      double t0 = now_ns();
      ssize_t got = process_vm_readv(child, &l, 1, &r, 1, 0);
      t[b] = now_ns() - t0;
      if (got != (ssize_t)big || memcmp(dst, src, big) != 0) {
        *why = "data read differs";
        rc = -1;
      }
    }
    if (rc == 0) *gbs = (double)big / median(t, 21);
  }
  close(go[1]);
  waitpid(child, NULL, 0);
  free(src);
  free(dst);
  return rc;
}

/* -- the system ---------------------------------------------------------- */
static void json_file(const char *key, const char *path) {
  char buf[512] = "";
  FILE *f = fopen(path, "r");
  if (f) {
    if (!fgets(buf, sizeof buf, f)) buf[0] = 0;
    fclose(f);
  }
  buf[strcspn(buf, "\n")] = 0;
  printf(",\"%s\":", key);
  if (!f) {
    printf("null");
    return;
  }
  putchar('"');
  for (char *p = buf; *p; p++)
    if (*p == '"' || *p == '\\')
      printf("\\%c", *p);
    else if ((unsigned char)*p >= 32)
      putchar(*p);
  putchar('"');
}

static void numa(void) {
  printf(",\"numa\":[");
  int first = 1;
  for (int n = 0; n < 1024; n++) {
    char path[96], buf[512];
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", n);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    if (!fgets(buf, sizeof buf, f)) buf[0] = 0;
    fclose(f);
    buf[strcspn(buf, "\n")] = 0;
    printf("%s{\"node\":%d,\"cpus\":\"%s\"}", first ? "" : ",", n, buf);
    first = 0;
  }
  printf("]");
}

static void clock_figures(void) {
  struct timespec res;
  clock_getres(CLOCK_MONOTONIC, &res);
  double step = 1e18, t0 = now_ns();
  for (int k = 0; k < 200000; k++) {
    double a = now_ns(), b = now_ns();
    if (b > a && b - a < step) step = b - a;
  }
  double cost = (now_ns() - t0) / 400000.0;
  printf(",\"clock\":{\"resolution_ns\":%ld,\"step_ns\":%.1f,\"read_ns\":%.1f}",
         (long)res.tv_sec * 1000000000L + res.tv_nsec, step, cost);
}

static int parse_cpus(const char *s, int *cpus) {
  int n = 0;
  while (*s) {
    char *end;
    long a = strtol(s, &end, 10), b = a;
    if (end == s || a < 0 || a >= MAXCPU) return -1;
    if (*end == '-') {
      s = end + 1;
      b = strtol(s, &end, 10);
      if (end == s || b < a || b >= MAXCPU) return -1;
    }
    for (long c = a; c <= b && n < MAXCPU; c++) {
      for (int k = 0; k < n; k++)
        if (cpus[k] == c) return -1; /* twice: two threads on one core bounce by the scheduler */
      cpus[n++] = (int)c;
    }
    s = end;
    if (*s == ',') s++;
    else if (*s) return -1;
  }
  return n;
}

int main(int argc, char **argv) {
  int cpus[MAXCPU], ncpu = 0;
  double pair_ms = 40.0, mem_mib = 64.0;
  cpu_set_t mine;
  sched_getaffinity(0, sizeof mine, &mine);
  for (int c = 0; c < MAXCPU; c++)
    if (CPU_ISSET(c, &mine)) cpus[ncpu++] = c;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--cpus") && i + 1 < argc) {
      ncpu = parse_cpus(argv[++i], cpus);
      if (ncpu <= 0) {
        fprintf(stderr, "cs-probe: --cpus wants a list such as 0-3,8, each cpu once\n");
        return 2;
      }
      for (int k = 0; k < ncpu; k++)
        if (!CPU_ISSET(cpus[k], &mine)) {
          fprintf(stderr, "cs-probe: cpu %d is not one this process may run on\n", cpus[k]);
          return 2;
        }
    } else if (!strcmp(argv[i], "--pair-ms") && i + 1 < argc) {
      pair_ms = atof(argv[++i]);
      if (!(pair_ms > 0 && pair_ms <= 10000)) {
        fprintf(stderr, "cs-probe: --pair-ms wants 0 < MS <= 10000\n");
        return 2;
      }
    } else if (!strcmp(argv[i], "--mem-mib") && i + 1 < argc) {
      mem_mib = atof(argv[++i]);
      if (!(mem_mib >= 1 && mem_mib <= 4096)) {
        fprintf(stderr, "cs-probe: --mem-mib wants 1 <= MIB <= 4096\n");
        return 2;
      }
    } else {
      fprintf(stderr, "cs-probe: unknown argument %s (--cpus LIST, --pair-ms MS, --mem-mib MIB)\n",
              argv[i]);
      return 2;
    }
  }
  printf("{\"probe\":1,\"cpus\":[");
  for (int k = 0; k < ncpu; k++) printf("%s%d", k ? "," : "", cpus[k]);
  printf("],\"core_to_core\":[");
  int first = 1;
  for (int x = 0; x < ncpu; x++)
    for (int y = x + 1; y < ncpu; y++) {
      double med = 0, lo = 0;
      int nb = pair(cpus[x], cpus[y], pair_ms, &med, &lo);
      printf("%s{\"a\":%d,\"b\":%d,", first ? "" : ",", cpus[x], cpus[y]);
      if (nb > 0)
        printf("\"one_way_ns\":%.2f,\"min_ns\":%.2f,\"batches\":%d}", med, lo, nb);
      else
        printf("\"one_way_ns\":null,\"error\":\"a thread could not be pinned or a bounce was "
               "lost\"}");
      first = 0;
    }
  printf("]");
  pin(cpus[0]);
  long l2 = cs_cache_bytes(2);
  size_t small = l2 > 0 ? (size_t)l2 / 4 : (size_t)64 << 10;
  size_t sizes[2] = {small, (size_t)(mem_mib * 1048576.0)};
  const char *names[2] = {"cache", "memory"};
  printf(",\"copy\":[");
  for (int k = 0; k < 2; k++) {
    const char *why = NULL;
    double g = copy_gbs(sizes[k], k ? 200.0 : 50.0, &why);
    printf("%s{\"where\":\"%s\",\"bytes\":%zu,", k ? "," : "", names[k], sizes[k]);
    if (g > 0)
      printf("\"gbs\":%.3f}", g);
    else
      printf("\"gbs\":null,\"error\":\"%s\"}", why);
  }
  printf("]");
  double call_ns = 0, gbs = 0;
  const char *why = "unknown";
  if (cma(&call_ns, &gbs, &why) == 0)
    printf(",\"process_vm_readv\":{\"call_8b_ns\":%.1f,\"gbs_4mib\":%.3f}", call_ns, gbs);
  else
    printf(",\"process_vm_readv\":{\"call_8b_ns\":null,\"gbs_4mib\":null,\"error\":\"%s\"}", why);
  printf(",\"page_bytes\":%ld", sysconf(_SC_PAGESIZE));
  json_file("thp", "/sys/kernel/mm/transparent_hugepage/enabled");
  json_file("thp_defrag", "/sys/kernel/mm/transparent_hugepage/defrag");
  json_file("ptrace_scope", "/proc/sys/kernel/yama/ptrace_scope");
  numa();
  printf(",\"l2_bytes\":%ld,\"l3_bytes\":%ld", l2, cs_cache_bytes(3));
  clock_figures();
  printf("}\n");
  return 0;
}

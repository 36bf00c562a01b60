/* The physical floor of intra-node latency: two processes pinned to two
 * cores bounce one cache line.  Prints the median one-way time in us over
 * batches of round trips, as JSON. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  _Alignas(64) _Atomic unsigned long ping;
  _Alignas(64) _Atomic unsigned long pong;
} line_pair;

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static void pin(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  sched_setaffinity(0, sizeof s, &s);
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int batches = argc > 1 ? atoi(argv[1]) : 200, per = argc > 2 ? atoi(argv[2]) : 1000;
  int cpu0 = argc > 3 ? atoi(argv[3]) : 0, cpu1 = argc > 4 ? atoi(argv[4]) : 1;
  line_pair *lp = mmap(NULL, sizeof *lp, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (lp == MAP_FAILED) return 1;
  unsigned long total = (unsigned long)batches * (unsigned long)per + 1000;
  pid_t child = fork();
  if (child == 0) {
    pin(cpu1);
    for (unsigned long i = 1; i <= total; i++) {
      /* acquire/release: the line's value is the message */
      while (atomic_load_explicit(&lp->ping, memory_order_acquire) != i) {
      }
      atomic_store_explicit(&lp->pong, i, memory_order_release);
    }
    _exit(0);
  }
  pin(cpu0);
  double *t = malloc((size_t)batches * sizeof *t);
  unsigned long i = 0;
  for (int w = 0; w < 1000; w++) { /* warm-up */
    atomic_store_explicit(&lp->ping, ++i, memory_order_release);
    while (atomic_load_explicit(&lp->pong, memory_order_acquire) != i) {
    }
  }
  for (int b = 0; b < batches; b++) {
    double t0 = now_us();
    for (int k = 0; k < per; k++) {
      atomic_store_explicit(&lp->ping, ++i, memory_order_release);
      while (atomic_load_explicit(&lp->pong, memory_order_acquire) != i) {
      }
    }
    t[b] = (now_us() - t0) / per / 2.0;
  }
  waitpid(child, NULL, 0);
  qsort(t, (size_t)batches, sizeof *t, cmp);
  printf("{\"one_way_us\":%.6f,\"min_us\":%.6f,\"batches\":%d,\"round_trips_per_batch\":%d}\n",
         t[batches / 2], t[0], batches, per);
  return 0;
}

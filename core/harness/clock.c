/* The clock: CLOCK_MONOTONIC in microseconds, and what it can resolve
 * (its step and the cost of one read), measured at start. */
#include <time.h>

#include "cs.h"

double cs_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static long gcd_l(long a, long b) {
  while (b) {
    long t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* The clock's step and the cost of one read, measured, not asked:
 * clock_getres says 1 ns on VMs whose CLOCK_MONOTONIC moves in 10 ns
 * steps.  The step is the gcd of the nonzero differences between reads. */
void cs_clock_measure(cs_clock *k) {
  enum { N = 2001 };
  static double d[N];
  struct timespec a, b;
  long g = 0;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < N; i++) {
    clock_gettime(CLOCK_MONOTONIC, &b);
    long ns = (b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec);
    d[i] = (double)ns;
    if (ns > 0) g = gcd_l(g, ns);
    a = b;
  }
  cs_sort(d, N);
  k->read_ns = d[N / 2];
  k->quantum_ns = g > 0 ? (double)g : 1.0;
}

double cs_auto_sample_us(const cs_clock *k) {
  double by_read = 200.0 * k->read_ns * 1e-3, by_step = 200.0 * k->quantum_ns * 1e-3;
  return by_read > by_step ? by_read : by_step;
}

/* Shared memory of the channel against the process count, next to the
 * design seed 002 replaced (one large buffer per ordered pair).  The
 * arithmetic comes from cs_chan_footprint*; for counts up to --measure N,
 * N real processes open a channel and rank 0 reports the segment's size
 * (fstat), which must equal the arithmetic.  JSON Lines on stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cs_chan.h"

static long measured(int n, const cs_chan_params *p) {
  char name[64];
  snprintf(name, sizeof name, "fp-%d-%d", (int)getpid(), n);
  int fds[2];
  if (pipe(fds)) return -1;
  for (int r = 0; r < n; r++) {
    if (fork() == 0) {
      cs_chan *c;
      long size = -1;
      if (cs_chan_open(name, n, r, p, &c) == CS_CHAN_OK) {
        size = (long)cs_chan_segment_bytes(c);
        cs_chan_barrier(c);
        cs_chan_close(c);
      }
      if (r == 0 && write(fds[1], &size, sizeof size) != sizeof size) _exit(1);
      _exit(size < 0);
    }
  }
  long size = -1;
  if (read(fds[0], &size, sizeof size) != sizeof size) size = -1;
  for (int r = 0; r < n; r++) wait(NULL);
  close(fds[0]);
  close(fds[1]);
  return size;
}

int main(int argc, char **argv) {
  int measure_up_to = 16;
  for (int i = 1; i + 1 < argc; i++)
    if (!strcmp(argv[i], "--measure")) measure_up_to = atoi(argv[++i]);
  cs_chan_params p;
  cs_chan_defaults(&p);
  int counts[] = {2, 4, 8, 16, 32, 64};
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
    int n = counts[i];
    size_t ours = cs_chan_footprint(n, &p), per_pair = cs_chan_footprint_per_pair(n, &p);
    long m = n <= measure_up_to ? measured(n, &p) : -2;
    printf("{\"procs\":%d,\"channel_bytes\":%zu,\"per_pair_bytes\":%zu,\"measured_bytes\":%ld,"
           "\"ring_bytes\":%zu,\"pool_bytes\":%zu}\n",
           n, ours, per_pair, m, p.ring_bytes, p.chunk_bytes * p.nchunks);
  }
  return 0;
}

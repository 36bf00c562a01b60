/* The plainest latency figure there is: a blocking ping-pong of 8 B (or
 * argv[1] bytes) between ranks 0 and 1, timed as whole loops of 10^4 round
 * trips, so one clock read is spread over 2 x 10^4 one-way trips.  Prints
 * the median and minimum over rounds of the one-way time in us; after
 * each round, untimed, rank 0 checks the echo.  A reference for
 * bench/integrity.py, not part of commscope. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  size_t size = argc > 1 ? (size_t)atol(argv[1]) : 8;
  int rounds = argc > 2 ? atoi(argv[2]) : 21;
  enum { LOOP = 10000 };
  char *buf = calloc(size ? size : 1, 1);
  double *t = calloc((size_t)rounds, sizeof *t);
  int bad = 0;
  for (int r = -2; r < rounds; r++) { /* two rounds of warm-up */
    /* untimed: rank 0 sends this round's pattern, rank 1 echoes what it
     * received, so what comes back last must be the pattern */
    if (rank == 0)
      for (size_t i = 0; i < size; i++) buf[i] = (char)(i * 7 + (size_t)r + 3);
    else
      memset(buf, 0, size);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_us();
    for (int i = 0; i < LOOP; i++) {
      if (rank == 0) {
        MPI_Send(buf, (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(buf, (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(buf, (int)size, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, (int)size, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
      }
    }
    if (r >= 0) t[r] = (now_us() - t0) / (2.0 * LOOP);
    for (size_t i = 0; rank == 0 && i < size; i++) bad |= buf[i] != (char)(i * 7 + (size_t)r + 3);
  }
  if (bad) {
    fprintf(stderr, "loop_ref: the echoed message differs from what was sent\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (rank == 0) {
    qsort(t, (size_t)rounds, sizeof *t, cmp);
    printf("{\"size\":%zu,\"median_us\":%.6f,\"min_us\":%.6f,\"rounds\":%d,\"loop\":%d}\n", size,
           t[rounds / 2], t[0], rounds, LOOP);
  }
  free(buf);
  free(t);
  MPI_Finalize();
  return 0;
}

/* A job that holds still for bench/footprint.py: every rank talks to every
 * other once (an alltoall of 1 KiB and an allreduce, so that a library that
 * maps its shared memory per peer on first use has done so), rank 0 then
 * writes READY, and every rank sleeps, outside MPI, until STOP appears; a
 * last barrier, and out.  Memory only: timing means nothing here (64 ranks
 * on 2 cores).  Usage: footprint_prog READY STOP */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  if (argc < 3) MPI_Abort(MPI_COMM_WORLD, 2);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int block = 1024;
  char *s = malloc((size_t)size * block), *r = malloc((size_t)size * block);
  if (!s || !r) MPI_Abort(MPI_COMM_WORLD, 3);
  for (int p = 0; p < size; p++) memset(s + (size_t)p * block, (rank * 31 + p) & 0xff, block);
  MPI_Alltoall(s, block, MPI_CHAR, r, block, MPI_CHAR, MPI_COMM_WORLD);
  int bad = 0; /* what arrived is what each sender wrote for this rank */
  for (int p = 0; p < size; p++)
    for (int i = 0; i < block; i++)
      if ((unsigned char)r[(size_t)p * block + i] != ((p * 31 + rank) & 0xff)) bad = 1;
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) { /* written whole, then renamed: never read half-written */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    char v[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    MPI_Get_library_version(v, &len);
    v[strcspn(v, "\n,\t")] = 0; /* its first words: "Open MPI v4.1.4", "MVAPICH2 Version ..." */
    FILE *f = fopen(tmp, "w");
    if (f) {
      fprintf(f, "%d %d\n%.120s\n", size, any, v);
      fclose(f);
      rename(tmp, argv[1]);
    }
  }
  struct timespec nap = {0, 10 * 1000 * 1000};
  for (int i = 0; i < 12000 && access(argv[2], F_OK) != 0; i++) nanosleep(&nap, NULL);
  MPI_Barrier(MPI_COMM_WORLD);
  free(s);
  free(r);
  MPI_Finalize();
  return any;
}

/* Agreement across ranks: every rank learns what one of them found. */
#include "cs.h"

int cs_first_failure(MPI_Comm comm, int failed, char *why, size_t len) {
  int rank, np, first;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &np);
  int mine = failed ? rank : np;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == np) return -1;
  MPI_Bcast(why, (int)len, MPI_CHAR, first, comm);
  return first;
}

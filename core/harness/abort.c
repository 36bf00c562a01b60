/* A rank that cannot go on says why and ends the job.  The reason goes to
 * stderr and, where the runner named a folder (CS_ERROR_DIR), into a file of
 * its own there: a launcher that tears the job down at MPI_Abort may drop the
 * last lines a rank wrote to stderr (MPICH's Hydra did, about one job in
 * three here), and "exit code 5" is not a reason. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cs.h"

void cs_abort(const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "cs-core: %s\n", msg);
  const char *dir = getenv("CS_ERROR_DIR");
  if (dir && *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/abort-%ld.err", dir, (long)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
      size_t n = strlen(msg);
      msg[n] = '\n';
      ssize_t w = write(fd, msg, n + 1);
      (void)w;
      close(fd);
    }
  }
  MPI_Abort(MPI_COMM_WORLD, CS_EMPI);
  abort(); /* MPI_Abort does not return */
}

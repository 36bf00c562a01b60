/* Noise accounting: how much CPU did processes other than our ranks use
 * on each machine (the ranks sharing one kernel) while a size was
 * measured, and how much did the hypervisor steal.  The machine leader reads /proc/stat; every rank reads its own CPU
 * time; the difference is the others' share.  Untimed, once per size. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cs.h"

static int read_proc_stat(unsigned long long *busy, unsigned long long *steal,
                          unsigned long long *total) {
  FILE *f = fopen("/proc/stat", "r");
  if (!f) return -1;
  unsigned long long v[10] = {0};
  int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                 &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
  fclose(f);
  if (n < 8) return -1;
  /* user nice system idle iowait irq softirq steal guest guest_nice;
   * guest time is already inside user.  Interrupt and softirq time belongs
   * to no process and is mostly our own packets (TCP, emulated links): it
   * is not counted as others' CPU. */
  *busy = v[0] + v[1] + v[2];
  *steal = v[7];
  *total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
  return 0;
}

void cs_noise_mark_now(cs_noise_mark *m, int leader) {
  struct timespec ts;
  memset(m, 0, sizeof *m);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  m->proc_cpu_s = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
  if (leader) m->have_stat = read_proc_stat(&m->busy, &m->steal, &m->total) == 0;
}

static double load1(void) {
  double l = -1;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf", &l) != 1) l = -1;
    fclose(f);
  }
  return l;
}

void cs_noise_finish(const cs_noise_mark *a, const cs_noise_mark *b, MPI_Comm machine,
                     MPI_Comm world, double wall_s, cs_noise *out) {
  int nrank;
  MPI_Comm_rank(machine, &nrank);
  double mine = b->proc_cpu_s - a->proc_cpu_s, ours = 0;
  MPI_Reduce(&mine, &ours, 1, MPI_DOUBLE, MPI_SUM, 0, machine);
  /* local[0]: others' CPU, [1]: steal, [2]: valid (1) on leaders. */
  double local[3] = {0, 0, 0}, worst[3] = {0, 0, 0};
  if (nrank == 0 && a->have_stat && b->have_stat) {
    double tick = 1.0 / (double)sysconf(_SC_CLK_TCK);
    local[0] = (double)(b->busy - a->busy) * tick - ours;
    if (local[0] < 0) local[0] = 0; /* tick sampling can undercount */
    local[1] = (double)(b->steal - a->steal) * tick;
    local[2] = 1;
  }
  MPI_Reduce(local, worst, 3, MPI_DOUBLE, MPI_MAX, 0, world);
  out->other_cpu_s = worst[0];
  out->steal_s = worst[1];
  out->valid = worst[2] > 0;
  out->wall_s = wall_s;
  out->load1 = load1();
}

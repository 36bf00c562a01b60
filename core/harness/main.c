/* cs-core: one binary, a table of benchmarks, JSON Lines out. */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cs.h"
#include "cs_gpu.h"

/* The exit statuses (enum cs_status), by the names Python reads them by
 * (core_facts.json is a copy of this part of --list --json, and of the
 * fields of a result line). */
static const struct {
  const char *name;
  int code;
} STATUSES[] = {{"ok", CS_OK},   {"usage", CS_EUSAGE}, {"invalid", CS_EINVALID},
                {"nomem", CS_ENOMEM}, {"mpi", CS_EMPI},   {"io", CS_EIO},
                {"skip", CS_ESKIP}};

static void list_benches(int json) {
  int n;
  const cs_bench *const *all = cs_bench_all(&n);
  if (json) fputs("{\"benchmarks\":[", stdout);
  for (int i = 0; i < n; i++) {
    const cs_bench *b = all[i];
    if (json) {
      if (i) fputc(',', stdout);
      cs_bench_json(stdout, b);
    } else {
      printf("%-15s %-10s %s\n", b->name, b->group, b->desc);
    }
  }
  if (json) {
    fputs("],\"options\":", stdout);
    cs_opts_json(stdout);
    fputs(",\"statuses\":{", stdout);
    for (size_t i = 0; i < sizeof STATUSES / sizeof STATUSES[0]; i++)
      printf("%s\"%s\":%d", i ? "," : "", STATUSES[i].name, STATUSES[i].code);
    fputs("},\"fields\":", stdout);
    cs_result_fields_json(stdout);
    fputs("}\n", stdout);
  }
}

/* Callable before MPI_Init (MPI-3), so no launcher is needed. */
static void print_info(void) {
  char ver[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0, major = 0, minor = 0;
  MPI_Get_library_version(ver, &len);
  MPI_Get_version(&major, &minor);
  printf("{\"mpi_library\":");
  cs_json_str(stdout, ver);
  printf(",\"mpi_standard\":\"%d.%d\",\"commscope_version\":\"%s\",\"schema\":%d,\"compiler\":",
         major, minor, CS_VERSION, CS_SCHEMA_VERSION);
  cs_json_str(stdout, CS_COMPILER);
  puts("}");
}

/* Without MPI: whether this core has CUDA, and the devices this process
 * sees or the driver's reason for none (no context is created). */
static void print_gpu_info(void) {
  int n = cs_gpu_count();
  printf("{\"cuda_built\":%s,\"cuda_runtime\":", cs_gpu_built() ? "true" : "false");
  cs_json_str(stdout, cs_gpu_runtime());
  printf(",\"devices\":%d,\"reason\":", n < 0 ? 0 : n);
  cs_json_str(stdout, n < 0 ? cs_gpu_error() : "");
  /* the libraries the nccl path and gpu_matmul load: "" where found, else why not */
  printf(",\"nccl\":");
  cs_json_str(stdout, cs_nccl_load() ? cs_gpu_error() : "");
  printf(",\"nccl_version\":%d,\"cublas\":", cs_nccl_version());
  cs_json_str(stdout, cs_cublas_find() ? cs_gpu_error() : "");
  /* Open MPI answers before MPI_Init (its answer is how it was built) */
  int compiled = 0, runtime = 0;
#if defined(OPEN_MPI) && OPEN_MPI
  cs_path_cuda_support(&compiled, &runtime);
  printf(",\"mpi_cuda_support\":{\"compile_time\":%s,\"run_time\":%s}",
         compiled ? "true" : "false", runtime ? "true" : "false");
#else
  (void)compiled;
  (void)runtime;
  printf(",\"mpi_cuda_support\":null");
#endif
  printf("}\n");
}

/* Before a launch: every application size judged at o->plan_np
 * processes as the job would judge it, and with --plan-mem the memory of
 * all of them on this machine (an emulated cluster's nodes share it). */
static int plan(const cs_opts *o, const cs_bench *const *benches, int nb, cs_err *e) {
  for (int i = 0; i < nb; i++) {
    const cs_bench *b = benches[i];
    size_t sizes[CS_MAX_SIZES];
    int n = 0;
    if (!b->size_param && o->plan_mem && !cs_sizes_expand(o, sizes, CS_MAX_SIZES, &n, e) && n > 0) {
      cs_ctx c = {0};
      c.opts = o;
      c.bench = b;
      c.np = (int)o->plan_np;
      c.size = sizes[n - 1];
      double need = cs_cold_bytes(b, &c) * c.np, have = cs_mem_available();
      if (need > 0 && have > 0 && need > 0.8 * have) {
        int ev = !strcmp(o->buffers, "evicted"); /* one stream a rank, or two pools */
        return CS_FAIL(e, CS_EUSAGE,
                       "--buffers %s: %s needs %.2f GiB on this machine (%d process(es) x %s%.0f "
                       "MiB%s), %.2f GiB available (80%% may be used): refused", o->buffers,
                       b->name, need / 1073741824.0, c.np, ev ? "" : "two pools of ",
                       need / c.np / (ev ? 1 : 2) / 1048576.0,
                       ev ? " streamed before each operation" : "", have / 1073741824.0);
      }
    }
    if (!b->size_param || cs_param_sizes(o->param, b, sizes, CS_MAX_SIZES, &n, e)) continue;
    cs_ctx c = {0};
    c.opts = o;
    c.bench = b;
    c.np = (int)o->plan_np;
    if (cs_bench_np_check(b, c.np, e)) return CS_EUSAGE;
    for (int k = 0; k < n; k++) {
      char why[CS_ERRLEN / 2] = "";
      double need = 0;
      c.size = sizes[k];
      if (b->judge && b->judge(&c, why, sizeof why)) return CS_FAIL(e, CS_EUSAGE, "%s", why);
      for (int r = 0; o->plan_mem && b->mem_bytes && r < c.np; r++) need += b->mem_bytes(&c, r);
      if (cs_mem_refuse(b, &c, need, c.np, cs_mem_available(), why, sizeof why))
        return CS_FAIL(e, CS_EUSAGE, "%s", why);
    }
  }
  return CS_OK;
}

/* Every benchmark named must exist, and sizes given for one (NAME@SIZES,
 * as --sizes takes them, over --factor) must parse: checked before MPI
 * starts.  `own` gets each benchmark's options: --sizes, or its own. */
static int resolve(const cs_opts *o, const cs_bench **out, cs_opts *own, int *n, cs_err *e) {
  char buf[sizeof o->bench];
  strcpy(buf, o->bench);
  *n = 0;
  for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    char *at = strchr(t, '@');
    if (at) *at = '\0';
    const cs_bench *b = cs_bench_find(t);
    if (!b) return CS_FAIL(e, CS_EUSAGE, "unknown benchmark '%s' (see --list)", t);
    if (*n >= CS_MAX_BENCH) return CS_FAIL(e, CS_EUSAGE, "too many benchmarks");
    own[*n] = *o;
    if (at) {
      size_t sizes[CS_MAX_SIZES];
      int k;
      if (strlen(at + 1) >= sizeof o->sizes)
        return CS_FAIL(e, CS_EUSAGE, "sizes of %s too long: %s", t, at + 1);
      strcpy(own[*n].sizes, at + 1);
      if (cs_sizes_expand(&own[*n], sizes, CS_MAX_SIZES, &k, e)) {
        char why[CS_ERRLEN];
        snprintf(why, sizeof why, "%s", e->msg);
        return CS_FAIL(e, CS_EUSAGE, "benchmark %s: %s", t, why);
      }
    }
    out[(*n)++] = b;
  }
  if (*n == 0) return CS_FAIL(e, CS_EUSAGE, "no benchmark given");
  return CS_OK;
}

/* Seed 002's channel between the ranks of one node, named uniquely for
 * this job; MPI only bootstraps it. */
static int open_channel(const cs_opts *o, MPI_Comm comm, cs_chan **out, cs_err *e) {
  int rank, np, same = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &np);
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int nnode;
  MPI_Comm_size(node, &nnode);
  MPI_Comm_free(&node);
  if (nnode != np) same = 0;
  if (!same) return CS_FAIL(e, CS_EUSAGE, "--transport %s needs every rank on one node",
                            o->transport);
  char name[64] = {0};
  if (rank == 0) snprintf(name, sizeof name, "cs-%d-%ld", (int)getpid(), (long)cs_now_us());
  MPI_Bcast(name, sizeof name, MPI_CHAR, 0, comm);
  cs_chan_params p;
  cs_chan_defaults(&p);
  p.cma = !strcmp(o->transport, "chan-cma");
  if (o->chan_ring) p.ring_bytes = (size_t)o->chan_ring;
  if (o->chan_eager) p.eager_max = (size_t)o->chan_eager;
  if (o->chan_chunk) p.chunk_bytes = (size_t)o->chan_chunk;
  if (o->chan_nchunks) p.nchunks = (size_t)o->chan_nchunks;
  int rc = cs_chan_open(name, np, rank, &p, out), worst = 0;
  int mine = rc ? 1 : 0;
  MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, comm);
  if (worst) {
    cs_chan_close(*out);
    *out = NULL;
    if (rank == 0) cs_chan_unlink_stale(name);
    return CS_FAIL(e, CS_EIO, "cannot open the channel: %s", cs_chan_strerror(rc));
  }
  return CS_OK;
}

/* The ranks that share this kernel: one machine's /proc/stat, whatever
 * MPI calls a node (an emulated cluster puts several "nodes", each in its
 * own namespaces, on one kernel).  Grouped by the kernel's boot id. */
static MPI_Comm machine_comm(MPI_Comm world) {
  char id[64] = {0};
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f) {
    if (!fgets(id, sizeof id, f)) id[0] = 0;
    fclose(f);
  }
  unsigned h = 2166136261u; /* FNV-1a */
  for (const char *p = id; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
  int rank;
  MPI_Comm_rank(world, &rank);
  MPI_Comm m;
  MPI_Comm_split(world, (int)(h & 0x7fffffff), rank, &m);
  return m;
}

/* COMMSCOPE_PIN=machine: pin each rank to its own core, counted across
 * every rank on this kernel, so that the ranks of emulated nodes do not
 * all sit on the first core the launcher of each node would pick.
 * COMMSCOPE_PIN=cpus:A,B,...: the k-th rank on this kernel to CPU number
 * k of the list (modulo its length): `commscope matrix --within-node`'s
 * pair of cores, the same whatever the launcher's own binding syntax. */
static void pin_to(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (sched_setaffinity(0, sizeof one, &one))
    fprintf(stderr, "cs-core: cannot pin to CPU %d: %s\n", cpu, strerror(errno));
}

static void pin_if_asked(MPI_Comm machine) {
  const char *how = getenv("COMMSCOPE_PIN");
  if (!how) return;
  int mrank;
  MPI_Comm_rank(machine, &mrank);
  if (!strncmp(how, "cpus:", 5)) {
    int list[CPU_SETSIZE], n = 0;
    for (const char *p = how + 5; *p && n < CPU_SETSIZE;) {
      char *end;
      long v = strtol(p, &end, 10);
      if (end == p || v < 0 || v >= CPU_SETSIZE || (*end && *end != ',')) {
        fprintf(stderr, "cs-core: COMMSCOPE_PIN=%s: not a list of CPU numbers\n", how);
        return; /* the record's cpus say the binding was not taken */
      }
      list[n++] = (int)v;
      p = *end ? end + 1 : end;
    }
    if (n) pin_to(list[mrank % n]);
    return;
  }
  if (strcmp(how, "machine")) return;
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed)) return;
  int ncpu = CPU_COUNT(&allowed);
  if (ncpu <= 0) return;
  int want = mrank % ncpu, seen = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    if (seen++ == want) {
      pin_to(cpu);
      return;
    }
  }
}

/* The CPUs this process may run on, as ranges ("0-3,6"): what the
 * launcher's binding (and COMMSCOPE_PIN) left it, for the record. */
enum { CPULEN = 256 };
static void cpu_list(char *buf, size_t len) {
  cpu_set_t allowed;
  buf[0] = 0;
  if (sched_getaffinity(0, sizeof allowed, &allowed)) {
    snprintf(buf, len, "?");
    return;
  }
  size_t at = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    int last = cpu;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &allowed)) last++;
    int n = last > cpu ? snprintf(buf + at, len - at, "%s%d-%d", at ? "," : "", cpu, last)
                       : snprintf(buf + at, len - at, "%s%d", at ? "," : "", cpu);
    if (n < 0 || (size_t)n >= len - at) { /* too long to list: say so */
      snprintf(buf + (at < len - 4 ? at : len - 4), 4, "...");
      return;
    }
    at += (size_t)n;
    cpu = last;
  }
}

/* Where the ranks run: each one's host name and allowed CPUs, gathered at
 * rank 0 (NULL on the others). */
typedef struct {
  char *names, *cpus;
} cs_where;

static cs_where gather_where(int rank, int np) {
  char name[MPI_MAX_PROCESSOR_NAME] = {0}, mine[CPULEN];
  int len;
  MPI_Get_processor_name(name, &len);
  cpu_list(mine, sizeof mine);
  cs_where w = {rank == 0 ? calloc((size_t)np, MPI_MAX_PROCESSOR_NAME) : NULL,
                rank == 0 ? calloc((size_t)np, CPULEN) : NULL};
  MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, w.names, MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
             0, MPI_COMM_WORLD);
  MPI_Gather(mine, CPULEN, MPI_CHAR, w.cpus, CPULEN, MPI_CHAR, 0, MPI_COMM_WORLD);
  return w;
}

/* The records' file, opened by rank 0; every rank learns whether it opened
 * (NULL *out on rank 0: it did not). */
static int open_output(const cs_opts *o, int rank, FILE **out) {
  int ok = 1;
  if (rank == 0) {
    *out = strcmp(o->output, "-") ? fopen(o->output, "w") : stdout;
    ok = *out != NULL;
    if (!ok) fprintf(stderr, "cs-core: cannot write %s\n", o->output);
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return ok;
}

/* The header, by rank 0: the job, where its ranks ran, the library, the
 * clock, the floor at its start, the GPU path and the settings read back. */
static void header(FILE *out, const cs_opts *o, int argc, char **argv, int np,
                   const cs_where *w, const cs_clock *clock, double floor0,
                   const char *path_json, const char *cvars_json) {
  char *hosts[np], *cpu_of[np];
  for (int i = 0; i < np; i++) {
    hosts[i] = w->names + (size_t)i * MPI_MAX_PROCESSOR_NAME;
    cpu_of[i] = w->cpus + (size_t)i * CPULEN;
  }
  char ver[MPI_MAX_LIBRARY_VERSION_STRING];
  int len, major, minor;
  MPI_Get_library_version(ver, &len);
  MPI_Get_version(&major, &minor);
  cs_write_header(out, o, argc, argv, np, hosts, cpu_of, ver, major, minor, clock, floor0,
                  path_json, cvars_json);
}

static int run_all(const cs_opts *o, const cs_bench **benches, const cs_opts *own, int nb,
                   int argc, char **argv, const char *cvars_json) {
  cs_err e = {0};
  int rank, np, rc = CS_OK;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm machine = machine_comm(MPI_COMM_WORLD);
  pin_if_asked(machine);
  cs_where where = gather_where(rank, np);
  FILE *out = NULL;
  if (!open_output(o, rank, &out)) {
    free(where.names);
    free(where.cpus);
    MPI_Comm_free(&machine);
    return CS_EIO;
  }
  double t0 = cs_now_us();
  /* Benchmarks run on their own communicator, never on MPI_COMM_WORLD. */
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  cs_clock clock;
  cs_clock_measure(&clock);
  MPI_Bcast(&clock, 2, MPI_DOUBLE, 0, comm); /* every rank batches alike */
  /* A GPU path: the device by local rank before any other CUDA call; a
   * path this machine cannot run is skipped, with the reason, by every rank. */
  cs_path_env path;
  char skip[CS_ERRLEN] = "";
  int skipped = cs_path_open(o, comm, &path, skip, sizeof skip) == CS_ESKIP;
  cs_floor floor;
  cs_floor_open(comm, &floor);
  double floor0 = cs_floor_measure(&floor);
  if (rank == 0) {
    header(out, o, argc, argv, np, &where, &clock, floor0, skipped ? NULL : path.desc,
           cvars_json);
    if (o->table) cs_table_header(stdout);
  }
  int nresults = 0, ninvalid = 0;
  cs_chan *chan = NULL;
  if (strcmp(o->transport, "mpi")) rc = open_channel(o, comm, &chan, &e);
  cs_env env = {.machine = machine, .chan = chan, .clock = &clock, .floor = &floor,
                .path = path.path ? &path : NULL};
  if (skipped) {
    rc = CS_ESKIP;
    if (rank == 0) fprintf(stderr, "cs-core: --path %s skipped: %s\n", o->path, skip);
  }
  for (int i = 0; i < nb && rc == CS_OK; i++)
    rc = cs_run_bench(benches[i], &own[i], comm, &env, out, &ninvalid, &nresults, &e);
  MPI_Barrier(comm); /* nobody leaves while a peer may still read its pool */
  double floor1 = cs_floor_measure(&floor);
  cs_floor_close(&floor);
  cs_chan_close(chan);
  cs_path_close(&path);
  MPI_Comm_free(&comm);
  if (rc && rc != CS_ESKIP && rank == 0) fprintf(stderr, "cs-core: %s\n", e.msg);
  if (rank == 0) {
    const char *status = skipped ? "skipped" : (rc ? "error" : (ninvalid ? "invalid" : "ok"));
    /* the reason goes into the records too: a rank's stderr forwarded by
     * the launcher may be lost when the job ends at once after it */
    cs_write_footer(out, status, nresults, ninvalid, (cs_now_us() - t0) * 1e-6, floor1,
                    skipped ? skip : (rc ? e.msg : NULL));
    if (out != stdout) fclose(out);
  }
  free(where.names);
  free(where.cpus);
  MPI_Comm_free(&machine);
  if (rc == CS_OK && ninvalid) rc = CS_EINVALID;
  return rc;
}

/* --expand-sizes: the sizes the options name, as JSON; no MPI (the
 * grammar's verdict alone). */
static int print_sizes(const cs_opts *o) {
  size_t sizes[CS_MAX_SIZES];
  int n;
  cs_err e = {0};
  if (cs_sizes_expand(o, sizes, CS_MAX_SIZES, &n, &e)) {
    fprintf(stderr, "cs-core: %s\n", e.msg);
    return CS_EUSAGE;
  }
  fputs("{\"sizes\":[", stdout);
  for (int i = 0; i < n; i++) printf("%s%zu", i ? "," : "", sizes[i]);
  fputs("]}\n", stdout);
  return 0;
}

/* Every check of a job before MPI starts: its benchmarks (each with its
 * own options), its sizes, the applications' parameters and their sizes,
 * the GPU path, the 1 GiB limit. */
static int check_job(const cs_opts *o, const cs_bench **benches, cs_opts *own, int *nb,
                     cs_err *e) {
  size_t sizes[CS_MAX_SIZES];
  int nsizes;
  if (resolve(o, benches, own, nb, e) || cs_sizes_expand(o, sizes, CS_MAX_SIZES, &nsizes, e) ||
      cs_params_check(o->param, benches, *nb, e) || cs_path_check(o, benches, *nb, e))
    return CS_EUSAGE;
  for (int i = 0; i < *nb; i++)
    if (benches[i]->size_param &&
        cs_param_sizes(o->param, benches[i], sizes, CS_MAX_SIZES, &nsizes, e))
      return CS_EUSAGE;
  if (sizes[nsizes - 1] > CS_MAX_SIZE)
    return CS_FAIL(e, CS_EUSAGE, "sizes above 1 GiB are not supported");
  return CS_OK;
}

int main(int argc, char **argv) {
  cs_opts o;
  cs_err e = {0};
  cs_opts_defaults(&o);
  if (cs_opts_parse(&o, argc, argv, &e)) {
    fprintf(stderr, "cs-core: %s\n", e.msg);
    return CS_EUSAGE;
  }
  if (o.help) {
    cs_opts_usage(stdout);
    return 0;
  }
  if (o.list) {
    list_benches(o.json);
    return 0;
  }
  if (o.expand_sizes) return print_sizes(&o);
  if (o.gpu_info) {
    print_gpu_info();
    return 0;
  }
  const cs_bench *benches[CS_MAX_BENCH];
  static cs_opts own[CS_MAX_BENCH]; /* each benchmark's options (its own sizes) */
  int nb;
  if (check_job(&o, benches, own, &nb, &e)) {
    fprintf(stderr, "cs-core: %s\n", e.msg);
    return CS_EUSAGE;
  }
  if (o.info) { /* after every check: `--info` with options is how they are judged */
    if (o.plan_np && plan(&o, benches, nb, &e)) {
      fprintf(stderr, "cs-core: %s\n", e.msg);
      return CS_EUSAGE;
    }
    print_info();
    return 0;
  }
  /* the settings to read back (tune, --settings, the diagnosis), read
   * before MPI_Init: cvars.c says why.  The standard allows MPI_T then. */
  int mpit;
  char *cvars_json = cs_cvars_capture(getenv("COMMSCOPE_CVARS"), &mpit);
  MPI_Init(&argc, &argv);
  int rc = run_all(&o, benches, own, nb, argc, argv, cvars_json);
  enum cs_fault fault;
  size_t at;
  if (!cs_inject_parse(o.inject, &fault, &at) && fault == CS_FAULT_HANG_EXIT) {
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (rank == np - 1)
      for (;;) pause(); /* testing: every record is written, the exit never comes */
  }
  cs_cvars_done(mpit); /* before MPI_Finalize: after it, Open MPI 4.1 crashes */
  free(cvars_json);
  MPI_Finalize();
  return rc;
}

/* commscope's profiler: a PMPI interposition library, preloaded on every
 * rank of a program commscope did not write (`commscope profile -- PROG`).
 *
 * For each MPI call the program makes, per communicator size and message
 * size (bytes from count and the datatype's size, in power-of-two buckets:
 * bucket 0 holds 0 bytes, bucket k holds [2^(k-1), 2^k)), it counts the
 * calls and their total, shortest and longest time, and writes one JSON
 * file a rank (rank-N.json in $COMMSCOPE_PROFILE_DIR) at MPI_Finalize.  A
 * rank that ends without MPI_Finalize (exit, abort, a signal) writes what it
 * had, marked "finalized": false.  wall_s runs from MPI_Init's return to
 * MPI_Finalize's call (or the end), and mpi_s is the time inside the other
 * calls in that span (mpiP's application and MPI times).
 *
 * Each call is also counted at its call site (the wrapper's return address:
 * the program's line for C and C++ callers; for Fortran the binding's, in
 * libmpichfort or libmpi_mpifh; for a call a library makes, the library's),
 * and the sites are written with the object and offset they fall in.  The
 * tables are not locked: under MPI_THREAD_MULTIPLE, calls of two threads at
 * once may lose a count or a site's attribution.
 *
 * The cost a call adds is two clock reads and two table updates: no lock, no
 * allocation, no I/O until the end (bench/profile_overhead.py measures it).  Non-blocking calls are counted as the
 * time of the call itself; the time a program waits for them is its
 * MPI_Wait/Waitall/Test calls', counted as such (mpiP's convention).
 * Persistent requests are counted where they are set up and at each start,
 * with their message.  Fortran calls are counted under both libraries: the
 * wrappers are defined under the MPI_ and the PMPI_ names (Open MPI's Fortran
 * bindings call PMPI_; the end of the file).  One-sided calls are counted
 * (the bytes they move; window creation and freeing are not); I/O calls and
 * neighbour collectives are not intercepted: a program whose calls never
 * reach these wrappers writes no calls, and commscope says so rather than
 * storing no communication. */
#ifndef CS_SECOND_PASS /* the file is read twice: the end says why */
#define _GNU_SOURCE
#include <mpi.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <sys/utsname.h>
#include <unistd.h>

#define CALLS(X) \
    X(Init) X(Init_thread) X(Finalize) \
    X(Send) X(Ssend) X(Bsend) X(Rsend) X(Recv) X(Sendrecv) X(Sendrecv_replace) \
    X(Isend) X(Issend) X(Irecv) X(Wait) X(Waitall) X(Waitany) X(Waitsome) \
    X(Test) X(Testall) X(Probe) X(Iprobe) \
    X(Barrier) X(Bcast) X(Reduce) X(Allreduce) X(Gather) X(Gatherv) X(Scatter) \
    X(Scatterv) X(Allgather) X(Allgatherv) X(Alltoall) X(Alltoallv) \
    X(Reduce_scatter) X(Reduce_scatter_block) X(Scan) X(Exscan) \
    X(Ibarrier) X(Ibcast) X(Ireduce) X(Iallreduce) X(Iallgather) X(Ialltoall) \
    X(Alltoallw) X(Igather) X(Igatherv) X(Iscatter) X(Iscatterv) X(Iallgatherv) \
    X(Ialltoallv) X(Ialltoallw) X(Ireduce_scatter) X(Ireduce_scatter_block) X(Iscan) \
    X(Iexscan) X(Testany) X(Testsome) X(Send_init) X(Ssend_init) X(Bsend_init) \
    X(Rsend_init) X(Recv_init) X(Start) X(Startall) X(Mprobe) X(Improbe) \
    X(Mrecv) X(Imrecv) X(Ibsend) X(Irsend) \
    X(Put) X(Get) X(Accumulate) X(Get_accumulate) X(Fetch_and_op) X(Compare_and_swap) \
    X(Rput) X(Rget) X(Win_fence) X(Win_lock) X(Win_unlock) X(Win_lock_all) \
    X(Win_unlock_all) X(Win_flush) X(Win_flush_all) X(Win_post) X(Win_start) \
    X(Win_complete) X(Win_wait)

#define ENUM(n) C_##n,
enum { CALLS(ENUM) NCALLS };
#define NAME(n) "MPI_" #n,
static const char *const names[NCALLS] = {CALLS(NAME)};

#define NCOMM 8    /* communicator sizes told apart; more share the last slot */
#define NBUCKET 48 /* up to 2^47 bytes */

struct cell {
    uint64_t n;
    uint64_t bytes;
    double total, min, max;
};

static struct cell table[NCALLS][NCOMM][NBUCKET];
static int comm_size_of[NCOMM];
static int ncomm;
static double t_init, t_end;
static int rank = -1, world = 0, written, thread_level = -1;
static char library[MPI_MAX_LIBRARY_VERSION_STRING];

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A call is timed in ticks of the cheapest clock there is: on x86-64 the
 * time-stamp counter where the kernel's clocksource is it (cheaper to read
 * than clock_gettime on a VM; two clock_gettime reads a call had cost
 * 90-120 ns on a one-way 8 B message),
 * turned into seconds at the end by the ticks the run took against
 * CLOCK_MONOTONIC; elsewhere CLOCK_MONOTONIC itself. */
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
/* the counter only where the kernel itself keeps time by it (it has found
 * it invariant and in step across cores): else CLOCK_MONOTONIC */
static int use_tsc = -1;

static void pick_clock(void)
{
    char name[32] = "";
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY);
    if (fd >= 0) {
        ssize_t n = read(fd, name, sizeof name - 1);
        name[n > 0 ? n : 0] = 0;
        close(fd);
    }
    use_tsc = !strncmp(name, "tsc", 3);
}

static double now(void)
{
    if (use_tsc < 0)
        pick_clock();
    return use_tsc ? (double)__rdtsc() : wall_now();
}
#define CLOCK_NAME (use_tsc > 0 ? "tsc" : "monotonic")
#else
static double now(void) { return wall_now(); }
#define CLOCK_NAME "monotonic"
#endif
static double tick_t0, tick_c0; /* CLOCK_MONOTONIC and ticks at MPI_Init */

static double seconds_per_tick(void)
{
    double dt = wall_now() - tick_t0, dc = now() - tick_c0;
    return dt > 0 && dc > 0 ? dt / dc : 1.0;
}

static int bucket(uint64_t bytes)
{
    int b = 0;
    while (bytes && b < NBUCKET - 1) {
        bytes >>= 1;
        b++;
    }
    return b;
}

static int comm_slot(MPI_Comm comm)
{
    int size = 0;
    if (comm == MPI_COMM_NULL || PMPI_Comm_size(comm, &size) != MPI_SUCCESS)
        size = 0;
    for (int i = 0; i < ncomm; i++)
        if (comm_size_of[i] == size)
            return i;
    if (ncomm < NCOMM - 1) {
        comm_size_of[ncomm] = size;
        return ncomm++;
    }
    comm_size_of[NCOMM - 1] = -1; /* every other size: written as -1, set against no np */
    return NCOMM - 1;
}

static uint64_t bytes_of(int count, MPI_Datatype type)
{
    int size = 0;
    if (count <= 0 || type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS)
        return 0;
    return (uint64_t)count * (uint64_t)(size > 0 ? size : 0);
}

static uint64_t sum_bytes(const int *counts, int n, MPI_Datatype type)
{
    uint64_t s = 0, one = bytes_of(1, type);
    for (int i = 0; counts && i < n; i++)
        s += counts[i] > 0 ? (uint64_t)counts[i] * one : 0;
    return s;
}

/* MPI_Alltoallw's message: each peer's count in its own datatype */
static uint64_t sum_bytes_w(const int *counts, int n, const MPI_Datatype *types)
{
    uint64_t s = 0;
    for (int i = 0; counts && types && i < n; i++)
        s += bytes_of(counts[i], types[i]);
    return s;
}

/* Call sites: where in the program each call was made (the wrapper's return
 * address), per call, in an open-addressed table of NSITES; a site that finds
 * no room within PROBES slots is counted as lost.  mpiP's call sites.
 *
 * With COMMSCOPE_PROFILE_DEPTH=k (2..MAXDEPTH; mpiP's -k), a site is the
 * return address and the k-1 return addresses of the callers above it, as
 * glibc's backtrace() unwinds them (from the program's frame up: the
 * profiler's own frames are skipped by finding the wrapper's return address
 * among them): a call made in a helper is told apart by who called the
 * helper.  Unwinding costs microseconds a call (3-4 us on each one-way 8 B
 * message of the core's latency benchmark), after the call's time is taken
 * (the wall time pays it, the call's time does not); depth 1 unwinds
 * nothing and compares one address. */
#define NSITES 4096
#define PROBES 64
#define MAXDEPTH 8
struct site {
    uintptr_t pc; /* the wrapper's return address */
    int frames;   /* 1, or with its callers (held in site_up) */
    int call;
    uint64_t n, bytes;
    double total;
};
static struct site sites[NSITES];
static uintptr_t site_up[NSITES][MAXDEPTH - 1]; /* each site's callers, innermost first */
static uint64_t sites_lost;
static int depth = 1;

/* Up to depth-1 return addresses of the callers above the wrapper's return
 * address `pc`, found among backtrace()'s frames; none where the unwinder
 * does not find pc (no unwind tables). */
static int callers(const void *pc, uintptr_t *up)
{
    void *buf[MAXDEPTH + 16];
    int n = backtrace(buf, MAXDEPTH + 16), i = 0, k = 0;
    while (i < n && buf[i] != pc)
        i++;
    for (i++; i < n && k < depth - 1; i++)
        up[k++] = (uintptr_t)buf[i];
    return k;
}

static void note_site(int call, const void *pc, uint64_t bytes, double t)
{
    uintptr_t a = (uintptr_t)pc, up[MAXDEPTH - 1];
    if (!a)
        return;
    int k = depth > 1 ? callers(pc, up) : 0; /* depth 1: nothing unwound, one compare */
    uintptr_t mix = (a >> 2) ^ ((uintptr_t)call * 2654435761u);
    for (int f = 0; f < k; f++)
        mix ^= (up[f] >> 2) * (2 * (uintptr_t)f + 3);
    size_t h = (size_t)(mix & (NSITES - 1));
    for (int i = 0; i < PROBES; i++, h = (h + 1) & (NSITES - 1)) {
        struct site *x = &sites[h];
        if (x->n == 0) {
            x->pc = a;
            x->call = call;
            x->frames = 1 + k;
            if (k)
                memcpy(site_up[h], up, (size_t)k * sizeof up[0]);
        }
        if (x->pc == a && x->call == call && x->frames == 1 + k &&
            (!k || !memcmp(site_up[h], up, (size_t)k * sizeof up[0]))) {
            x->n++;
            x->bytes += bytes;
            x->total += t;
            return;
        }
    }
    sites_lost++;
}

/* The mappings as /proc/self/maps gives them when the profile is written
 * (open and read only: a signal handler may call them), to turn a site's
 * address into an object and the offset in its file.  Lines past the
 * buffer are not read; a site in none of the lines read is counted as
 * unmapped, never dropped unsaid. */
static char maps[1 << 18];
static size_t maps_len;
static uint64_t sites_unmapped;

static void read_maps(void)
{
    maps_len = 0;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n;
    while (maps_len < sizeof maps - 1 &&
           (n = read(fd, maps + maps_len, sizeof maps - 1 - maps_len)) > 0)
        maps_len += (size_t)n;
    maps[maps_len] = 0;
    close(fd);
}

static uint64_t hex(const char **p)
{
    uint64_t v = 0;
    for (;; (*p)++) {
        char c = **p;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return v;
        v = v * 16 + (uint64_t)d;
    }
}

/* The object holding pc and pc's offset in its file; 0 where none does. */
static int where(uintptr_t pc, const char **obj, size_t *obj_len, uint64_t *off)
{
    const char *p = maps, *end = maps + maps_len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            return 0; /* a line the buffer cut: not read */
        const char *q = p;
        uint64_t lo = hex(&q);
        q++;
        uint64_t hi = hex(&q);
        q++; /* perms */
        int exec = q + 2 < eol && q[2] == 'x';
        q += 5;
        uint64_t file_off = hex(&q);
        if (exec && pc >= lo && pc < hi) {
            const char *path = memchr(q, '/', (size_t)(eol - q));
            if (!path)
                return 0;
            *obj = path;
            *obj_len = (size_t)(eol - path);
            *off = pc - lo + file_off;
            return 1;
        }
        p = eol + 1;
    }
    return 0;
}

static void note(int call, int slot, uint64_t bytes, double t)
{
    struct cell *c = &table[call][slot][bucket(bytes)];
    if (c->n == 0 || t < c->min)
        c->min = t;
    if (t > c->max)
        c->max = t;
    c->n++;
    c->total += t;
    c->bytes += bytes;
}

/* The output goes through write(2) from a static buffer: no stdio, no
 * allocation, so that a rank dying inside malloc still writes what it had. */
static char out_buf[1 << 16];
static size_t out_len;
static int out_fd = -1;

static void out_flush(void)
{
    size_t done = 0;
    while (out_fd >= 0 && done < out_len) {
        ssize_t n = write(out_fd, out_buf + done, out_len - done);
        if (n <= 0)
            break;
        done += (size_t)n;
    }
    out_len = 0;
}

static void out_put(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out_put(const char *fmt, ...)
{
    va_list ap;
    if (out_len > sizeof out_buf - 512)
        out_flush();
    va_start(ap, fmt);
    int n = vsnprintf(out_buf + out_len, sizeof out_buf - out_len, fmt, ap);
    va_end(ap);
    if (n > 0)
        out_len += (size_t)n < sizeof out_buf - out_len ? (size_t)n : sizeof out_buf - out_len - 1;
}

/* a path as JSON: quotes escaped, no control characters */
static void put_path(const char *obj, size_t len)
{
    for (size_t k = 0; k < len; k++) {
        unsigned char ch = (unsigned char)obj[k];
        if (ch == '"' || ch == '\\')
            out_put("\\%c", ch);
        else if (ch >= 32)
            out_put("%c", ch);
    }
}

/* s with control characters, quotes and backslashes left out, at most
 * n - 1 characters, up to its first newline. */
static void clean_copy(char *dst, size_t n, const char *s)
{
    size_t j = 0;
    for (const char *p = s; *p && *p != '\n' && j < n - 1; p++)
        if (*p >= 32 && *p != '"' && *p != '\\')
            dst[j++] = *p;
    dst[j] = 0;
}

/* The rank, its times, its library and node: the record's first fields. */
static void put_head(int finalized, int sig, double spt)
{
    double end = t_end > 0 ? t_end : now();
    double mpi = 0; /* inside MPI between MPI_Init and MPI_Finalize (mpiP's MPI time) */
    for (int k = C_Send; k < NCALLS; k++)
        for (int c = 0; c < NCOMM; c++)
            for (int b = 0; b < NBUCKET; b++)
                mpi += table[k][c][b].total;
    out_put("{\"schema\": 1, \"rank\": %d, \"size\": %d, \"pid\": %d, \"finalized\": %s, "
            "\"signal\": %d, \"thread_level\": %d, \"clock\": \"%s\", \"wall_s\": %.9f, "
            "\"mpi_s\": %.9f, \"library\": \"",
            rank, world, (int)getpid(), finalized ? "true" : "false", sig, thread_level,
            CLOCK_NAME, t_init > 0 ? spt * (end - t_init) : 0.0, spt * mpi);
    char lib[256];
    clean_copy(lib, sizeof lib, library);
    /* the node the rank ran on (a cluster's profile: which node a rank's time is from);
     * uname, not gethostname: this path may run in a signal handler */
    struct utsname u;
    char host[sizeof u.nodename] = "";
    if (uname(&u) == 0)
        clean_copy(host, sizeof host, u.nodename);
    out_put("%s\", \"host\": \"%s\"", lib, host);
}

/* Every (call, communicator size, size bucket) cell that saw a call. */
static void put_calls(double spt)
{
    int first = 1;
    out_put(", \"calls\": [");
    for (int k = 0; k < NCALLS; k++)
        for (int c = 0; c < NCOMM; c++)
            for (int b = 0; b < NBUCKET; b++) {
                const struct cell *x = &table[k][c][b];
                if (!x->n)
                    continue;
                out_put("%s\n {\"call\": \"%s\", \"comm_size\": %d, \"bucket\": %d, "
                        "\"n\": %llu, \"bytes\": %llu, \"total_s\": %.9f, \"min_s\": %.9f, "
                        "\"max_s\": %.9f}",
                        first ? "" : ",", names[k], comm_size_of[c], b,
                        (unsigned long long)x->n, (unsigned long long)x->bytes, spt * x->total,
                        spt * x->min, spt * x->max);
                first = 0;
            }
    out_put("]");
}

/* Site i's callers above it, innermost first; one in no mapping: "". */
static void put_callers(int i)
{
    const char *obj;
    size_t len;
    uint64_t off;
    out_put(", \"callers\": [");
    for (int k = 1; k < sites[i].frames; k++) {
        int got = where(site_up[i][k - 1], &obj, &len, &off);
        out_put("%s{\"object\": \"", k > 1 ? ", " : "");
        if (got)
            put_path(obj, len);
        out_put("\", \"offset\": %llu}", got ? (unsigned long long)off : 0ULL);
    }
    out_put("]");
}

/* The call sites, each as an object file and an offset in it; those in no
 * mapping counted apart. */
static void put_sites(double spt)
{
    const char *obj;
    size_t len;
    uint64_t off;
    read_maps();
    sites_unmapped = 0;
    for (int i = 0; i < NSITES; i++)
        if (sites[i].n && !where(sites[i].pc, &obj, &len, &off))
            sites_unmapped += sites[i].n;
    out_put(", \"sites_lost\": %llu, \"sites_unmapped\": %llu, \"sites\": [",
            (unsigned long long)sites_lost, (unsigned long long)sites_unmapped);
    int first = 1;
    for (int i = 0; i < NSITES; i++) {
        const struct site *x = &sites[i];
        if (!x->n || !where(x->pc, &obj, &len, &off))
            continue;
        out_put("%s\n {\"call\": \"%s\", \"object\": \"", first ? "" : ",", names[x->call]);
        put_path(obj, len);
        out_put("\", \"offset\": %llu, \"n\": %llu, \"bytes\": %llu, \"total_s\": %.9f",
                (unsigned long long)off, (unsigned long long)x->n,
                (unsigned long long)x->bytes, spt * x->total);
        if (depth > 1)
            put_callers(i);
        out_put("}");
        first = 0;
    }
    out_put("]");
}

/* This rank's profile, once: at MPI_Finalize, at exit, or from a signal. */
static void write_out(int finalized, int sig)
{
    if (written)
        return;
    written = 1;
    const char *dir = getenv("COMMSCOPE_PROFILE_DIR");
    if (!dir || !*dir)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/rank-%d.json", dir, rank >= 0 ? rank : (int)getpid());
    out_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out_fd < 0)
        return;
    double spt = seconds_per_tick();
    put_head(finalized, sig, spt);
    put_calls(spt);
    put_sites(spt);
    out_put("}\n");
    out_flush();
    close(out_fd);
    out_fd = -1;
}

static void at_exit(void) { write_out(0, 0); }

/* A dying rank writes what it had, then the signal goes to whatever handled
 * it before (the program's own handler, the MPI library's backtrace), or to
 * its default.  The program's handlers stay its own: ours is chained, never
 * a replacement. */
static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGABRT, SIGTERM, SIGINT};
#define NSIGS (int)(sizeof sigs / sizeof sigs[0])
static struct sigaction before[NSIGS];

static void on_signal(int sig)
{
    write_out(0, sig);
    for (int i = 0; i < NSIGS; i++)
        if (sigs[i] == sig) {
            sigaction(sig, &before[i], NULL); /* pending on return: delivered to it */
            break;
        }
    raise(sig);
}

static void started(void)
{
    int len = 0;
    tick_t0 = wall_now();
    tick_c0 = now();
    t_init = tick_c0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &world);
    PMPI_Get_library_version(library, &len);
    PMPI_Query_thread(&thread_level);
    const char *d = getenv("COMMSCOPE_PROFILE_DEPTH");
    if (d && *d) {
        depth = atoi(d);
        depth = depth < 1 ? 1 : depth > MAXDEPTH ? MAXDEPTH : depth;
    }
    if (depth > 1) { /* the unwinder loaded now, not inside the first timed call's wrapper */
        void *first[2];
        backtrace(first, 2);
    }
    atexit(at_exit);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < NSIGS; i++)
        sigaction(sigs[i], &sa, &before[i]);
}

/* Each wrapper calls the library's own PMPI_ function through a pointer
 * (dlsym RTLD_NEXT), never by name: the file's second reading defines the
 * PMPI_ names too, so that a caller that skips MPI_ (Open MPI's Fortran
 * bindings: mpif-h/send_f.c and the rest call PMPI_ directly, its mpi_f08
 * ones through them) is counted as a C caller is, once; a PMPI_ call from
 * anywhere else is passed on (binding_text). */
#define REAL(n) static __typeof__(&PMPI_##n) real_##n;
CALLS(REAL)
REAL(Request_free)
/* The Fortran bindings' code: a PMPI_ call is counted only from there.
 * Every other caller of PMPI_ is the library itself (Open MPI's ROMIO, a
 * plugin of its own, calls PMPI_Allreduce, PMPI_Put...), or another tool
 * stacked on PMPI (Darshan, Score-P): what they call is not the program's. */
#define NBIND 8
static uintptr_t bind_lo[NBIND], bind_hi[NBIND];
static int nbind;
static const char *const bindings[] = {"libmpi_mpifh", "libmpi_usempif08",
                                       "libmpi_usempi_ignore_tkr", "libmpichfort",
                                       "libmpichf90", "libmpifort"};

static int binding_text(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size, (void)data;
    const char *name = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    name = name ? name + 1 : info->dlpi_name;
    int known = 0;
    for (size_t k = 0; name && k < sizeof bindings / sizeof bindings[0]; k++)
        known |= !strncmp(name, bindings[k], strlen(bindings[k])) &&
                 (name[strlen(bindings[k])] == '.' || name[strlen(bindings[k])] == '-');
    for (int j = 0; known && j < info->dlpi_phnum && nbind < NBIND; j++) {
        const ElfW(Phdr) *q = &info->dlpi_phdr[j];
        if (q->p_type == PT_LOAD && (q->p_flags & PF_X)) {
            bind_lo[nbind] = info->dlpi_addr + q->p_vaddr;
            bind_hi[nbind] = bind_lo[nbind] + q->p_memsz;
            nbind++;
        }
    }
    return 0;
}

#define RESOLVE(n) \
    if (!(real_##n = (__typeof__(real_##n))dlsym(RTLD_NEXT, "PMPI_" #n))) \
        missing = "PMPI_" #n;
__attribute__((constructor)) static void resolve(void)
{
    const char *missing = NULL;
    CALLS(RESOLVE)
    RESOLVE(Request_free)
    if (missing) { /* calling our own PMPI_ would never return */
        static const char say[] = "commscope profiler: the MPI library has no ";
        ssize_t w = write(2, say, sizeof say - 1);
        w = write(2, missing, strlen(missing));
        w = write(2, "\n", 1);
        (void)w;
        _exit(127);
    }
    dl_iterate_phdr(binding_text, NULL);
}

/* a PMPI_ call from anywhere but a Fortran binding is not the program's:
 * passed on uncounted */
static inline int not_binding(const void *ra)
{
    for (int i = 0; i < nbind; i++)
        if ((uintptr_t)ra >= bind_lo[i] && (uintptr_t)ra < bind_hi[i])
            return 0;
    return 1;
}
#define PASS_INSIDE(expr) \
    do { \
        if (FROM_INSIDE(__builtin_return_address(0))) \
            return (expr); \
    } while (0)

/* the message's size and the communicator's slot are asked before the clock
 * starts: the timed span is the MPI call alone */
#define TIMED_RC(rc, call, comm, bytes, expr) \
    do { \
        if (FROM_INSIDE(__builtin_return_address(0))) { \
            rc = (expr); \
            break; \
        } \
        uint64_t by_ = (bytes); \
        int slot_ = comm_slot(comm); \
        double t0_ = now(); \
        rc = (expr); \
        double dt_ = now() - t0_; \
        note(call, slot_, by_, dt_); \
        note_site(call, __builtin_return_address(0), by_, dt_); \
    } while (0)
#define TIMED(call, comm, bytes, expr) \
    do { \
        int rc_; \
        TIMED_RC(rc_, call, comm, bytes, expr); \
        return rc_; \
    } while (0)

#define WRAP(n) MPI_##n
#define FROM_INSIDE(ra) 0
#endif /* the first reading's own part */

int WRAP(Init)(int *argc, char ***argv)
{
    PASS_INSIDE(real_Init(argc, argv));
    double t0 = now();
    int rc = real_Init(argc, argv);
    started();
    note(C_Init, comm_slot(MPI_COMM_WORLD), 0, now() - t0);
    return rc;
}

int WRAP(Init_thread)(int *argc, char ***argv, int required, int *provided)
{
    PASS_INSIDE(real_Init_thread(argc, argv, required, provided));
    double t0 = now();
    int rc = real_Init_thread(argc, argv, required, provided);
    started();
    note(C_Init_thread, comm_slot(MPI_COMM_WORLD), 0, now() - t0);
    return rc;
}

int WRAP(Finalize)(void)
{
    PASS_INSIDE(real_Finalize());
    t_end = now();
    write_out(1, 0);
    return real_Finalize();
}

/* point to point */
int WRAP(Send)(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c)
{ TIMED(C_Send, c, bytes_of(n, t), real_Send(b, n, t, d, tag, c)); }
int WRAP(Ssend)(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c)
{ TIMED(C_Ssend, c, bytes_of(n, t), real_Ssend(b, n, t, d, tag, c)); }
int WRAP(Bsend)(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c)
{ TIMED(C_Bsend, c, bytes_of(n, t), real_Bsend(b, n, t, d, tag, c)); }
int WRAP(Rsend)(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c)
{ TIMED(C_Rsend, c, bytes_of(n, t), real_Rsend(b, n, t, d, tag, c)); }
/* a receive is counted at the size that arrived (its status, read after the
 * clock stopped), not the room it posted; a status the program ignores is
 * one of ours */
int WRAP(Recv)(void *b, int n, MPI_Datatype t, int s, int tag, MPI_Comm c, MPI_Status *st)
{
    PASS_INSIDE(real_Recv(b, n, t, s, tag, c, st));
    MPI_Status mine;
    MPI_Status *use = st == MPI_STATUS_IGNORE ? &mine : st;
    int slot = comm_slot(c);
    double t0 = now();
    int rc = real_Recv(b, n, t, s, tag, c, use);
    double dt = now() - t0;
    int got = 0;
    int known = rc == MPI_SUCCESS && PMPI_Get_count(use, t, &got) == MPI_SUCCESS &&
                got != MPI_UNDEFINED;
    note(C_Recv, slot, known ? bytes_of(got, t) : bytes_of(n, t), dt);
    note_site(C_Recv, __builtin_return_address(0), known ? bytes_of(got, t) : bytes_of(n, t), dt);
    return rc;
}
int WRAP(Sendrecv)(const void *sb, int sn, MPI_Datatype st, int d, int stag, void *rb, int rn,
                 MPI_Datatype rt, int s, int rtag, MPI_Comm c, MPI_Status *status)
{ TIMED(C_Sendrecv, c, bytes_of(sn, st),
        real_Sendrecv(sb, sn, st, d, stag, rb, rn, rt, s, rtag, c, status)); }
int WRAP(Sendrecv_replace)(void *b, int n, MPI_Datatype t, int d, int stag, int s, int rtag,
                         MPI_Comm c, MPI_Status *st)
{ TIMED(C_Sendrecv_replace, c, bytes_of(n, t),
        real_Sendrecv_replace(b, n, t, d, stag, s, rtag, c, st)); }
int WRAP(Isend)(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c, MPI_Request *r)
{ TIMED(C_Isend, c, bytes_of(n, t), real_Isend(b, n, t, d, tag, c, r)); }
int WRAP(Issend)(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c, MPI_Request *r)
{ TIMED(C_Issend, c, bytes_of(n, t), real_Issend(b, n, t, d, tag, c, r)); }
int WRAP(Ibsend)(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c, MPI_Request *r)
{ TIMED(C_Ibsend, c, bytes_of(n, t), real_Ibsend(b, n, t, d, tag, c, r)); }
int WRAP(Irsend)(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c, MPI_Request *r)
{ TIMED(C_Irsend, c, bytes_of(n, t), real_Irsend(b, n, t, d, tag, c, r)); }
int WRAP(Irecv)(void *b, int n, MPI_Datatype t, int s, int tag, MPI_Comm c, MPI_Request *r)
{ TIMED(C_Irecv, c, bytes_of(n, t), real_Irecv(b, n, t, s, tag, c, r)); }
int WRAP(Wait)(MPI_Request *r, MPI_Status *st)
{ TIMED(C_Wait, MPI_COMM_NULL, 0, real_Wait(r, st)); }
int WRAP(Waitall)(int n, MPI_Request r[], MPI_Status st[])
{ TIMED(C_Waitall, MPI_COMM_NULL, 0, real_Waitall(n, r, st)); }
int WRAP(Waitany)(int n, MPI_Request r[], int *i, MPI_Status *st)
{ TIMED(C_Waitany, MPI_COMM_NULL, 0, real_Waitany(n, r, i, st)); }
int WRAP(Waitsome)(int n, MPI_Request r[], int *out, int idx[], MPI_Status st[])
{ TIMED(C_Waitsome, MPI_COMM_NULL, 0, real_Waitsome(n, r, out, idx, st)); }
int WRAP(Test)(MPI_Request *r, int *flag, MPI_Status *st)
{ TIMED(C_Test, MPI_COMM_NULL, 0, real_Test(r, flag, st)); }
int WRAP(Testall)(int n, MPI_Request r[], int *flag, MPI_Status st[])
{ TIMED(C_Testall, MPI_COMM_NULL, 0, real_Testall(n, r, flag, st)); }
int WRAP(Testany)(int n, MPI_Request r[], int *i, int *flag, MPI_Status *st)
{ TIMED(C_Testany, MPI_COMM_NULL, 0, real_Testany(n, r, i, flag, st)); }
int WRAP(Testsome)(int n, MPI_Request r[], int *out, int idx[], MPI_Status st[])
{ TIMED(C_Testsome, MPI_COMM_NULL, 0, real_Testsome(n, r, out, idx, st)); }
/* persistent requests: the message is counted where it is set up, and again
 * at each start (MPI_Start at the request's bytes; MPI_Startall at the sum of
 * its requests' and the first one's communicator), from a table of the
 * requests set up (NREQ, linear probing; a request the table has no room for
 * starts without bytes); MPI_Request_free takes it out.  Completion is a
 * Wait's or a Test's. */
#ifndef CS_SECOND_PASS
#define NREQ 1024
struct preq {
    uint64_t key; /* the handle's bits; 0: empty */
    uint64_t bytes;
    int slot;
};
static struct preq preqs[NREQ];

static uint64_t req_key(MPI_Request r)
{
    uint64_t k = 0;
    memcpy(&k, &r, sizeof r < sizeof k ? sizeof r : sizeof k);
    return k;
}

static struct preq *req_find(MPI_Request r, int add)
{
    uint64_t k = req_key(r);
    if (!k)
        return NULL;
    size_t h = (size_t)((k * 0x9E3779B97F4A7C15ULL) >> 54) % NREQ;
    for (int i = 0; i < NREQ; i++) {
        struct preq *p = &preqs[(h + (size_t)i) % NREQ];
        if (p->key == k)
            return p;
        if (!p->key)
            return add ? (p->key = k, p) : NULL;
    }
    return NULL;
}

static int remember(int rc, MPI_Request *r, MPI_Comm c, uint64_t bytes)
{
    struct preq *p = rc == MPI_SUCCESS && r ? req_find(*r, 1) : NULL;
    if (p) {
        p->bytes = bytes;
        p->slot = comm_slot(c);
    }
    return rc;
}
#endif

int WRAP(Request_free)(MPI_Request *r)
{
    PASS_INSIDE(real_Request_free(r));
    struct preq *p = r ? req_find(*r, 0) : NULL;
    if (p) /* a tombstone keeps later entries of its chain reachable */
        p->bytes = 0, p->slot = comm_slot(MPI_COMM_NULL), p->key = ~0ULL;
    return real_Request_free(r);
}
#ifndef CS_SECOND_PASS
#define SEND_INIT(name) \
    int WRAP(name)(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c, \
                   MPI_Request *r) \
    { \
        PASS_INSIDE(real_##name(b, n, t, d, tag, c, r)); \
        int rc_; \
        TIMED_RC(rc_, C_##name, c, bytes_of(n, t), real_##name(b, n, t, d, tag, c, r)); \
        return remember(rc_, r, c, bytes_of(n, t)); /* after the clock stopped */ \
    }
#endif
SEND_INIT(Send_init)
SEND_INIT(Ssend_init)
SEND_INIT(Bsend_init)
SEND_INIT(Rsend_init)
int WRAP(Recv_init)(void *b, int n, MPI_Datatype t, int s, int tag, MPI_Comm c, MPI_Request *r)
{
    PASS_INSIDE(real_Recv_init(b, n, t, s, tag, c, r));
    int rc;
    TIMED_RC(rc, C_Recv_init, c, bytes_of(n, t), real_Recv_init(b, n, t, s, tag, c, r));
    return remember(rc, r, c, bytes_of(n, t));
}
/* the starts are counted by hand: their communicator comes from the table */
#ifndef CS_SECOND_PASS
static int started_n(int call, int n, MPI_Request *r, int rc, double dt, void *site)
{
    uint64_t by = 0;
    int slot = -1;
    for (int i = 0; r && i < n; i++) {
        struct preq *p = req_find(r[i], 0);
        if (p && p->key != ~0ULL) {
            by += p->bytes;
            if (slot < 0)
                slot = p->slot;
        }
    }
    if (slot < 0)
        slot = comm_slot(MPI_COMM_NULL);
    note(call, slot, by, dt);
    note_site(call, site, by, dt);
    return rc;
}
#endif
int WRAP(Start)(MPI_Request *r)
{
    PASS_INSIDE(real_Start(r));
    double t0 = now();
    int rc = real_Start(r);
    return started_n(C_Start, 1, r, rc, now() - t0, __builtin_return_address(0));
}
int WRAP(Startall)(int n, MPI_Request r[])
{
    PASS_INSIDE(real_Startall(n, r));
    double t0 = now();
    int rc = real_Startall(n, r);
    return started_n(C_Startall, n, r, rc, now() - t0, __builtin_return_address(0));
}
/* matched probes: the probe without bytes, the receive at the size that
 * arrived (the status, as MPI_Recv's) or, non-blocking, at the room posted */
int WRAP(Mprobe)(int s, int tag, MPI_Comm c, MPI_Message *m, MPI_Status *st)
{ TIMED(C_Mprobe, c, 0, real_Mprobe(s, tag, c, m, st)); }
int WRAP(Improbe)(int s, int tag, MPI_Comm c, int *flag, MPI_Message *m, MPI_Status *st)
{ TIMED(C_Improbe, c, 0, real_Improbe(s, tag, c, flag, m, st)); }
int WRAP(Mrecv)(void *b, int n, MPI_Datatype t, MPI_Message *m, MPI_Status *st)
{
    PASS_INSIDE(real_Mrecv(b, n, t, m, st));
    MPI_Status mine;
    MPI_Status *use = st == MPI_STATUS_IGNORE ? &mine : st;
    double t0 = now();
    int rc = real_Mrecv(b, n, t, m, use);
    double dt = now() - t0;
    int got = 0;
    int known = rc == MPI_SUCCESS && PMPI_Get_count(use, t, &got) == MPI_SUCCESS &&
                got != MPI_UNDEFINED;
    uint64_t by = known ? bytes_of(got, t) : bytes_of(n, t);
    note(C_Mrecv, comm_slot(MPI_COMM_NULL), by, dt);
    note_site(C_Mrecv, __builtin_return_address(0), by, dt);
    return rc;
}
int WRAP(Imrecv)(void *b, int n, MPI_Datatype t, MPI_Message *m, MPI_Request *r)
{ TIMED(C_Imrecv, MPI_COMM_NULL, bytes_of(n, t), real_Imrecv(b, n, t, m, r)); }
int WRAP(Probe)(int s, int tag, MPI_Comm c, MPI_Status *st)
{ TIMED(C_Probe, c, 0, real_Probe(s, tag, c, st)); }
int WRAP(Iprobe)(int s, int tag, MPI_Comm c, int *flag, MPI_Status *st)
{ TIMED(C_Iprobe, c, 0, real_Iprobe(s, tag, c, flag, st)); }

/* collectives: bytes are this rank's message (a root's per-rank share) */
#ifndef CS_SECOND_PASS
static int me(MPI_Comm c)
{
    int r = 0;
    PMPI_Comm_rank(c, &r);
    return r;
}

/* the peers a rank's counts array names: the group's size, or on an
 * intercommunicator the remote group's */
static int size_of(MPI_Comm c)
{
    int n = 0, inter = 0;
    if (PMPI_Comm_test_inter(c, &inter) == MPI_SUCCESS && inter)
        PMPI_Comm_remote_size(c, &n);
    else
        PMPI_Comm_size(c, &n);
    return n;
}
#endif

int WRAP(Barrier)(MPI_Comm c) { TIMED(C_Barrier, c, 0, real_Barrier(c)); }
int WRAP(Bcast)(void *b, int n, MPI_Datatype t, int root, MPI_Comm c)
{ TIMED(C_Bcast, c, bytes_of(n, t), real_Bcast(b, n, t, root, c)); }
int WRAP(Reduce)(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c)
{ TIMED(C_Reduce, c, bytes_of(n, t), real_Reduce(sb, rb, n, t, op, root, c)); }
int WRAP(Allreduce)(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{ TIMED(C_Allreduce, c, bytes_of(n, t), real_Allreduce(sb, rb, n, t, op, c)); }
int WRAP(Gather)(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt,
               int root, MPI_Comm c)
{ TIMED(C_Gather, c, sb == MPI_IN_PLACE ? bytes_of(rn, rt) : bytes_of(sn, st),
        real_Gather(sb, sn, st, rb, rn, rt, root, c)); }
int WRAP(Gatherv)(const void *sb, int sn, MPI_Datatype st, void *rb, const int rn[],
                const int displs[], MPI_Datatype rt, int root, MPI_Comm c)
{ TIMED(C_Gatherv, c, sb == MPI_IN_PLACE ? 0 : bytes_of(sn, st),
        real_Gatherv(sb, sn, st, rb, rn, displs, rt, root, c)); }
int WRAP(Scatter)(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt,
                int root, MPI_Comm c)
{ TIMED(C_Scatter, c, rb == MPI_IN_PLACE ? bytes_of(sn, st) : bytes_of(rn, rt),
        real_Scatter(sb, sn, st, rb, rn, rt, root, c)); }
int WRAP(Scatterv)(const void *sb, const int sn[], const int displs[], MPI_Datatype st, void *rb,
                 int rn, MPI_Datatype rt, int root, MPI_Comm c)
{ TIMED(C_Scatterv, c, rb == MPI_IN_PLACE ? 0 : bytes_of(rn, rt),
        real_Scatterv(sb, sn, displs, st, rb, rn, rt, root, c)); }
int WRAP(Allgather)(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt,
                  MPI_Comm c)
{ TIMED(C_Allgather, c, sb == MPI_IN_PLACE ? bytes_of(rn, rt) : bytes_of(sn, st),
        real_Allgather(sb, sn, st, rb, rn, rt, c)); }
int WRAP(Allgatherv)(const void *sb, int sn, MPI_Datatype st, void *rb, const int rn[],
                   const int displs[], MPI_Datatype rt, MPI_Comm c)
{ TIMED(C_Allgatherv, c, sb == MPI_IN_PLACE ? bytes_of(rn[me(c)], rt) : bytes_of(sn, st),
        real_Allgatherv(sb, sn, st, rb, rn, displs, rt, c)); }
int WRAP(Alltoall)(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt,
                 MPI_Comm c)
{ TIMED(C_Alltoall, c, sb == MPI_IN_PLACE ? bytes_of(rn, rt) : bytes_of(sn, st),
        real_Alltoall(sb, sn, st, rb, rn, rt, c)); }
int WRAP(Alltoallv)(const void *sb, const int sn[], const int sd[], MPI_Datatype st, void *rb,
                  const int rn[], const int rd[], MPI_Datatype rt, MPI_Comm c)
{ TIMED(C_Alltoallv, c, sb == MPI_IN_PLACE ? sum_bytes(rn, size_of(c), rt)
                                           : sum_bytes(sn, size_of(c), st),
        real_Alltoallv(sb, sn, sd, st, rb, rn, rd, rt, c)); }
int WRAP(Alltoallw)(const void *sb, const int sn[], const int sd[], const MPI_Datatype st[],
                  void *rb, const int rn[], const int rd[], const MPI_Datatype rt[], MPI_Comm c)
{ TIMED(C_Alltoallw, c, sb == MPI_IN_PLACE ? sum_bytes_w(rn, size_of(c), rt)
                                           : sum_bytes_w(sn, size_of(c), st),
        real_Alltoallw(sb, sn, sd, st, rb, rn, rd, rt, c)); }
int WRAP(Reduce_scatter)(const void *sb, void *rb, const int rn[], MPI_Datatype t, MPI_Op op,
                       MPI_Comm c)
{ TIMED(C_Reduce_scatter, c, bytes_of(rn[me(c)], t),
        real_Reduce_scatter(sb, rb, rn, t, op, c)); }
int WRAP(Reduce_scatter_block)(const void *sb, void *rb, int rn, MPI_Datatype t, MPI_Op op,
                             MPI_Comm c)
{ TIMED(C_Reduce_scatter_block, c, bytes_of(rn, t),
        real_Reduce_scatter_block(sb, rb, rn, t, op, c)); }
int WRAP(Scan)(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{ TIMED(C_Scan, c, bytes_of(n, t), real_Scan(sb, rb, n, t, op, c)); }
int WRAP(Exscan)(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{ TIMED(C_Exscan, c, bytes_of(n, t), real_Exscan(sb, rb, n, t, op, c)); }

/* non-blocking collectives: the call itself; their completion is a Wait's */
int WRAP(Ibarrier)(MPI_Comm c, MPI_Request *r) { TIMED(C_Ibarrier, c, 0, real_Ibarrier(c, r)); }
int WRAP(Ibcast)(void *b, int n, MPI_Datatype t, int root, MPI_Comm c, MPI_Request *r)
{ TIMED(C_Ibcast, c, bytes_of(n, t), real_Ibcast(b, n, t, root, c, r)); }
int WRAP(Ireduce)(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c,
                MPI_Request *r)
{ TIMED(C_Ireduce, c, bytes_of(n, t), real_Ireduce(sb, rb, n, t, op, root, c, r)); }
int WRAP(Iallreduce)(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c,
                   MPI_Request *r)
{ TIMED(C_Iallreduce, c, bytes_of(n, t), real_Iallreduce(sb, rb, n, t, op, c, r)); }
int WRAP(Iallgather)(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt,
                   MPI_Comm c, MPI_Request *r)
{ TIMED(C_Iallgather, c, sb == MPI_IN_PLACE ? bytes_of(rn, rt) : bytes_of(sn, st),
        real_Iallgather(sb, sn, st, rb, rn, rt, c, r)); }
int WRAP(Ialltoall)(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt,
                  MPI_Comm c, MPI_Request *r)
{ TIMED(C_Ialltoall, c, sb == MPI_IN_PLACE ? bytes_of(rn, rt) : bytes_of(sn, st),
        real_Ialltoall(sb, sn, st, rb, rn, rt, c, r)); }
int WRAP(Igather)(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt,
                int root, MPI_Comm c, MPI_Request *r)
{ TIMED(C_Igather, c, sb == MPI_IN_PLACE ? bytes_of(rn, rt) : bytes_of(sn, st),
        real_Igather(sb, sn, st, rb, rn, rt, root, c, r)); }
int WRAP(Igatherv)(const void *sb, int sn, MPI_Datatype st, void *rb, const int rn[],
                 const int displs[], MPI_Datatype rt, int root, MPI_Comm c, MPI_Request *r)
{ TIMED(C_Igatherv, c, sb == MPI_IN_PLACE ? 0 : bytes_of(sn, st),
        real_Igatherv(sb, sn, st, rb, rn, displs, rt, root, c, r)); }
int WRAP(Iscatter)(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt,
                 int root, MPI_Comm c, MPI_Request *r)
{ TIMED(C_Iscatter, c, rb == MPI_IN_PLACE ? bytes_of(sn, st) : bytes_of(rn, rt),
        real_Iscatter(sb, sn, st, rb, rn, rt, root, c, r)); }
int WRAP(Iscatterv)(const void *sb, const int sn[], const int displs[], MPI_Datatype st, void *rb,
                  int rn, MPI_Datatype rt, int root, MPI_Comm c, MPI_Request *r)
{ TIMED(C_Iscatterv, c, rb == MPI_IN_PLACE ? 0 : bytes_of(rn, rt),
        real_Iscatterv(sb, sn, displs, st, rb, rn, rt, root, c, r)); }
int WRAP(Iallgatherv)(const void *sb, int sn, MPI_Datatype st, void *rb, const int rn[],
                    const int displs[], MPI_Datatype rt, MPI_Comm c, MPI_Request *r)
{ TIMED(C_Iallgatherv, c, sb == MPI_IN_PLACE ? bytes_of(rn[me(c)], rt) : bytes_of(sn, st),
        real_Iallgatherv(sb, sn, st, rb, rn, displs, rt, c, r)); }
int WRAP(Ialltoallv)(const void *sb, const int sn[], const int sd[], MPI_Datatype st, void *rb,
                   const int rn[], const int rd[], MPI_Datatype rt, MPI_Comm c, MPI_Request *r)
{ TIMED(C_Ialltoallv, c, sb == MPI_IN_PLACE ? sum_bytes(rn, size_of(c), rt)
                                            : sum_bytes(sn, size_of(c), st),
        real_Ialltoallv(sb, sn, sd, st, rb, rn, rd, rt, c, r)); }
int WRAP(Ialltoallw)(const void *sb, const int sn[], const int sd[], const MPI_Datatype st[],
                   void *rb, const int rn[], const int rd[], const MPI_Datatype rt[], MPI_Comm c,
                   MPI_Request *r)
{ TIMED(C_Ialltoallw, c, sb == MPI_IN_PLACE ? sum_bytes_w(rn, size_of(c), rt)
                                            : sum_bytes_w(sn, size_of(c), st),
        real_Ialltoallw(sb, sn, sd, st, rb, rn, rd, rt, c, r)); }
int WRAP(Ireduce_scatter)(const void *sb, void *rb, const int rn[], MPI_Datatype t, MPI_Op op,
                        MPI_Comm c, MPI_Request *r)
{ TIMED(C_Ireduce_scatter, c, bytes_of(rn[me(c)], t),
        real_Ireduce_scatter(sb, rb, rn, t, op, c, r)); }
int WRAP(Ireduce_scatter_block)(const void *sb, void *rb, int rn, MPI_Datatype t, MPI_Op op,
                              MPI_Comm c, MPI_Request *r)
{ TIMED(C_Ireduce_scatter_block, c, bytes_of(rn, t),
        real_Ireduce_scatter_block(sb, rb, rn, t, op, c, r)); }
int WRAP(Iscan)(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c,
              MPI_Request *r)
{ TIMED(C_Iscan, c, bytes_of(n, t), real_Iscan(sb, rb, n, t, op, c, r)); }
int WRAP(Iexscan)(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c,
                MPI_Request *r)
{ TIMED(C_Iexscan, c, bytes_of(n, t), real_Iexscan(sb, rb, n, t, op, c, r)); }

/* one-sided: the bytes the call moves (origin and target signatures match;
 * an atomic's one element, a get-accumulate's result); a window has no
 * communicator here (its group's size would cost a query a call): counted
 * beside the waits, as their synchronisation calls are */
int WRAP(Put)(const void *o, int n, MPI_Datatype t, int r, MPI_Aint d, int tn, MPI_Datatype tt,
              MPI_Win w)
{ TIMED(C_Put, MPI_COMM_NULL, bytes_of(n, t), real_Put(o, n, t, r, d, tn, tt, w)); }
int WRAP(Get)(void *o, int n, MPI_Datatype t, int r, MPI_Aint d, int tn, MPI_Datatype tt,
              MPI_Win w)
{ TIMED(C_Get, MPI_COMM_NULL, bytes_of(n, t), real_Get(o, n, t, r, d, tn, tt, w)); }
int WRAP(Accumulate)(const void *o, int n, MPI_Datatype t, int r, MPI_Aint d, int tn,
                     MPI_Datatype tt, MPI_Op op, MPI_Win w)
{ TIMED(C_Accumulate, MPI_COMM_NULL, bytes_of(n, t),
        real_Accumulate(o, n, t, r, d, tn, tt, op, w)); }
int WRAP(Get_accumulate)(const void *o, int n, MPI_Datatype t, void *res, int rn,
                         MPI_Datatype rt, int r, MPI_Aint d, int tn, MPI_Datatype tt, MPI_Op op,
                         MPI_Win w)
{ TIMED(C_Get_accumulate, MPI_COMM_NULL, bytes_of(rn, rt),
        real_Get_accumulate(o, n, t, res, rn, rt, r, d, tn, tt, op, w)); }
int WRAP(Fetch_and_op)(const void *o, void *res, MPI_Datatype t, int r, MPI_Aint d, MPI_Op op,
                       MPI_Win w)
{ TIMED(C_Fetch_and_op, MPI_COMM_NULL, bytes_of(1, t),
        real_Fetch_and_op(o, res, t, r, d, op, w)); }
int WRAP(Compare_and_swap)(const void *o, const void *cmp, void *res, MPI_Datatype t, int r,
                           MPI_Aint d, MPI_Win w)
{ TIMED(C_Compare_and_swap, MPI_COMM_NULL, bytes_of(1, t),
        real_Compare_and_swap(o, cmp, res, t, r, d, w)); }
int WRAP(Rput)(const void *o, int n, MPI_Datatype t, int r, MPI_Aint d, int tn, MPI_Datatype tt,
               MPI_Win w, MPI_Request *q)
{ TIMED(C_Rput, MPI_COMM_NULL, bytes_of(n, t), real_Rput(o, n, t, r, d, tn, tt, w, q)); }
int WRAP(Rget)(void *o, int n, MPI_Datatype t, int r, MPI_Aint d, int tn, MPI_Datatype tt,
               MPI_Win w, MPI_Request *q)
{ TIMED(C_Rget, MPI_COMM_NULL, bytes_of(n, t), real_Rget(o, n, t, r, d, tn, tt, w, q)); }
int WRAP(Win_fence)(int a, MPI_Win w)
{ TIMED(C_Win_fence, MPI_COMM_NULL, 0, real_Win_fence(a, w)); }
int WRAP(Win_lock)(int type, int r, int a, MPI_Win w)
{ TIMED(C_Win_lock, MPI_COMM_NULL, 0, real_Win_lock(type, r, a, w)); }
int WRAP(Win_unlock)(int r, MPI_Win w)
{ TIMED(C_Win_unlock, MPI_COMM_NULL, 0, real_Win_unlock(r, w)); }
int WRAP(Win_lock_all)(int a, MPI_Win w)
{ TIMED(C_Win_lock_all, MPI_COMM_NULL, 0, real_Win_lock_all(a, w)); }
int WRAP(Win_unlock_all)(MPI_Win w)
{ TIMED(C_Win_unlock_all, MPI_COMM_NULL, 0, real_Win_unlock_all(w)); }
int WRAP(Win_flush)(int r, MPI_Win w)
{ TIMED(C_Win_flush, MPI_COMM_NULL, 0, real_Win_flush(r, w)); }
int WRAP(Win_flush_all)(MPI_Win w)
{ TIMED(C_Win_flush_all, MPI_COMM_NULL, 0, real_Win_flush_all(w)); }
int WRAP(Win_post)(MPI_Group g, int a, MPI_Win w)
{ TIMED(C_Win_post, MPI_COMM_NULL, 0, real_Win_post(g, a, w)); }
int WRAP(Win_start)(MPI_Group g, int a, MPI_Win w)
{ TIMED(C_Win_start, MPI_COMM_NULL, 0, real_Win_start(g, a, w)); }
int WRAP(Win_complete)(MPI_Win w)
{ TIMED(C_Win_complete, MPI_COMM_NULL, 0, real_Win_complete(w)); }
int WRAP(Win_wait)(MPI_Win w)
{ TIMED(C_Win_wait, MPI_COMM_NULL, 0, real_Win_wait(w)); }

/* The second reading: the same wrappers under the PMPI_ names, for callers
 * that skip MPI_ (Open MPI's Fortran bindings), passing on what the library
 * calls itself. */
#ifndef CS_SECOND_PASS
#define CS_SECOND_PASS
#undef WRAP
#undef FROM_INSIDE
#define WRAP(n) PMPI_##n
#define FROM_INSIDE(ra) not_binding(ra)
#include "cs_profile.c" /* this file: found beside itself */
#endif

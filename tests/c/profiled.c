/* A program with a known sequence of MPI calls, for the profiler's tests
 * (tests/unit/measure/test_profile.py): its counts, sizes and buckets are stated there.
 * argv[1]: "ok" (default), "exit" (rank 1 exits 3 without MPI_Finalize),
 * "crash" (rank 1 aborts after its receives), "hang" (rank 0 waits for a
 * message nobody sends), "ownterm" (rank 1 has a SIGTERM handler of its own,
 * installed before MPI_Init, and raises SIGTERM after its receives: the
 * handler must still run), "noinit" (no MPI at all), "stack" (only MPI_Init,
 * then one helper's MPI_Allreduce reached from two lines of main, twice and
 * three times, then MPI_Finalize: call sites with their callers), "rma" (one-sided:
 * 3 puts of 16 doubles between fences, a get, and under a lock an accumulate and
 * a fetch-and-op of one double, each rank to the next; the get checked), "pmpi" (a
 * message sent and received through PMPI_Send and PMPI_Recv, as a tool stacked on
 * PMPI does, then one MPI_Barrier).  Rank 0 prints the
 * arguments after the first, one a line between brackets, as it got them. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void own_term(int sig)
{
    (void)sig;
    static const char msg[] = "own handler ran\n";
    fflush(stdout);
    if (write(1, msg, sizeof msg - 1) < 0)
        _exit(6);
    _exit(5);
}

/* one line every call of the "stack" mode is made at, from two callers */
static void __attribute__((noinline)) reduce_in_helper(double *x, double *y)
{
    MPI_Allreduce(x, y, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* helper's line */
    __asm__ volatile("" ::: "memory"); /* no tail call: the helper's frame stays */
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "ok";
    if (!strcmp(mode, "noinit")) {
        puts("no MPI here");
        return 0;
    }
    if (!strcmp(mode, "ownterm"))
        signal(SIGTERM, own_term);
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (!strcmp(mode, "stack")) {
        double a[4] = {1, 2, 3, 4}, b[4];
        for (int i = 0; i < 2; i++)
            reduce_in_helper(a, b); /* first caller */
        for (int i = 0; i < 3; i++)
            reduce_in_helper(a, b); /* second caller */
        MPI_Finalize();
        return b[0] == 2.0 * size / 2 ? 0 : 9;
    }
    if (!strcmp(mode, "pmpi")) {
        int v = 42;
        if (rank == 0)
            PMPI_Send(&v, 1, MPI_INT, 1, 3, MPI_COMM_WORLD);
        else if (rank == 1)
            PMPI_Recv(&v, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Finalize();
        return v == 42 ? 0 : 9;
    }
    if (!strcmp(mode, "rma")) {
        double win[64] = {0}, src[16], got[16], one = 1.0, old = 0.0;
        for (int i = 0; i < 16; i++)
            src[i] = rank + i;
        MPI_Win w;
        MPI_Win_create(win, sizeof win, sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        int next = (rank + 1) % size;
        MPI_Win_fence(0, w);
        for (int i = 0; i < 3; i++)
            MPI_Put(src, 16, MPI_DOUBLE, next, 16 * i, 16, MPI_DOUBLE, w);
        MPI_Win_fence(0, w);
        /* what this rank put into the next one's window, read back */
        MPI_Get(got, 16, MPI_DOUBLE, next, 0, 16, MPI_DOUBLE, w);
        MPI_Win_fence(0, w);
        MPI_Win_lock(MPI_LOCK_SHARED, next, 0, w);
        MPI_Accumulate(&one, 1, MPI_DOUBLE, next, 63, 1, MPI_DOUBLE, MPI_SUM, w);
        MPI_Fetch_and_op(&one, &old, MPI_DOUBLE, next, 62, MPI_SUM, w);
        MPI_Win_unlock(next, w);
        MPI_Win_free(&w);
        int bad = 0;
        for (int i = 0; i < 16; i++)
            bad |= got[i] != rank + i;
        MPI_Finalize();
        return bad ? 9 : 0;
    }
    for (int i = 2; rank == 0 && i < argc; i++)
        printf("arg[%s]\n", argv[i]);
    fflush(stdout);
    if (!strcmp(mode, "hang") && rank == 0) {
        double z;
        MPI_Recv(&z, 1, MPI_DOUBLE, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    double x[1024] = {0}, y[1024];
    int v[100] = {0};
    for (int i = 0; i < 10; i++) { /* 10 sends of 8 B: bucket 4 */
        MPI_Status got;
        if (rank == 0)
            MPI_Send(x, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
        else if (rank == 1 && i % 2) /* room for 1024: counted at the 8 B that arrived */
            MPI_Recv(y, 1024, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else if (rank == 1) { /* the status the program asked for is still its own */
            MPI_Recv(y, 1024, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, &got);
            int n = -1;
            MPI_Get_count(&got, MPI_DOUBLE, &n);
            if (n != 1 || got.MPI_SOURCE != 0 || got.MPI_TAG != 0) {
                fprintf(stderr, "profiled: status %d %d %d\n", n, got.MPI_SOURCE, got.MPI_TAG);
                MPI_Abort(MPI_COMM_WORLD, 7);
            }
        }
    }
    if (!strcmp(mode, "crash") && rank == 1)
        abort();
    if (!strcmp(mode, "ownterm") && rank == 1)
        raise(SIGTERM);
    for (int i = 0; i < 5; i++) /* 8 KiB: bucket 14 */
        MPI_Allreduce(x, y, 1024, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < 3; i++) /* 400 B: bucket 9 */
        MPI_Bcast(v, 100, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 2; i++) { /* a ring of 64 doubles (512 B: bucket 10) */
        MPI_Request r[2];
        MPI_Status st[2];
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        MPI_Irecv(y, 64, MPI_DOUBLE, from, 1, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(x, 64, MPI_DOUBLE, to, 1, MPI_COMM_WORLD, &r[1]);
        MPI_Waitall(2, r, st);
    }
    { /* persistent requests: a ring of 16 doubles (128 B: bucket 8), started twice */
        MPI_Request r[2];
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        MPI_Recv_init(y, 16, MPI_DOUBLE, from, 2, MPI_COMM_WORLD, &r[0]);
        MPI_Send_init(x, 16, MPI_DOUBLE, to, 2, MPI_COMM_WORLD, &r[1]);
        for (int i = 0; i < 2; i++) {
            MPI_Startall(2, r);
            MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        }
        MPI_Request_free(&r[0]);
        MPI_Request_free(&r[1]);
    }
    { /* the other collectives, non-blocking and w: 16-24 B a rank (bucket 5) */
        MPI_Request r;
        int four[4] = {rank, rank, rank, rank}, all[4 * 64];
        MPI_Igather(four, 4, MPI_INT, all, 4, MPI_INT, 0, MPI_COMM_WORLD, &r); /* 16 B */
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        int three[3 * 64], got3[3 * 64], cnt[64], dsp[64];
        for (int i = 0; i < size && i < 64; i++) {
            cnt[i] = 3;
            dsp[i] = 3 * i;
        }
        for (int i = 0; i < 3 * size && i < 3 * 64; i++)
            three[i] = rank;
        MPI_Ialltoallv(three, cnt, dsp, MPI_INT, got3, cnt, dsp, MPI_INT, MPI_COMM_WORLD,
                       &r); /* 3 ints to each of 2: 24 B */
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        double two[2] = {1.0, 2.0}, sum2[2];
        MPI_Iscan(two, sum2, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r); /* 16 B */
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        MPI_Datatype dt[64];
        int one[64], bd[64];
        for (int i = 0; i < size && i < 64; i++) {
            dt[i] = MPI_DOUBLE;
            one[i] = 1;
            bd[i] = 8 * i;
        }
        MPI_Alltoallw(x, one, bd, dt, y, one, bd, dt, MPI_COMM_WORLD); /* 2 x 8 B: 16 B */
    }
    { /* a matched probe: 5 ints (20 B: bucket 5) from rank 0 to rank 1 */
        int five[5] = {1, 2, 3, 4, 5};
        if (rank == 0)
            MPI_Send(five, 5, MPI_INT, 1, 3, MPI_COMM_WORLD);
        else if (rank == 1) {
            MPI_Message m;
            MPI_Status st;
            MPI_Mprobe(0, 3, MPI_COMM_WORLD, &m, &st);
            MPI_Mrecv(five, 8, MPI_INT, &m, MPI_STATUS_IGNORE); /* room for 8: 5 arrive */
        }
    }
    { /* ready and buffered non-blocking sends, 3 doubles (24 B: bucket 5), 0 to 1 */
        double three[3] = {1.0, 2.0, 3.0}, got3[3];
        static char pack[1024 + MPI_BSEND_OVERHEAD];
        MPI_Request r = MPI_REQUEST_NULL;
        if (rank == 1)
            MPI_Irecv(got3, 3, MPI_DOUBLE, 0, 4, MPI_COMM_WORLD, &r);
        MPI_Barrier(MPI_COMM_WORLD); /* the receive is posted: a ready send may start */
        if (rank == 0)
            MPI_Irsend(three, 3, MPI_DOUBLE, 1, 4, MPI_COMM_WORLD, &r);
        if (rank <= 1)
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        if (rank == 0) {
            void *was;
            int n;
            MPI_Buffer_attach(pack, sizeof pack);
            MPI_Ibsend(three, 3, MPI_DOUBLE, 1, 5, MPI_COMM_WORLD, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            MPI_Buffer_detach(&was, &n);
        } else if (rank == 1) {
            MPI_Recv(got3, 3, MPI_DOUBLE, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    if (!strcmp(mode, "exit") && rank == 1)
        exit(3);
    MPI_Finalize();
    if (rank == 0)
        printf("profiled: done\n");
    return 0;
}

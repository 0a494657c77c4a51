/* Persistent point-to-point, a nonblocking collective, a split communicator, MPI-IO and
 * one-sided calls with known sizes; tests/test_profile_families.py derives the exact per-rank
 * counts and bytes from the number of ranks P. argv[1]: the file MPI-IO writes and reads. */
#include <mpi.h>
#include <string.h>

/* a function of its own, so a call site two frames deep names it and its caller */
static __attribute__((noinline)) void start_all(MPI_Request *pr) {
    MPI_Startall(2, pr); /* site: start_all */
    MPI_Waitall(2, pr, MPI_STATUSES_IGNORE);
}

int main(int argc, char **argv) {
    int r, P;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    int left = (r - 1 + P) % P, right = (r + 1) % P;
    int out[64] = {0}, in[64] = {0};
    double d[8] = {0}, e[8] = {0};

    /* 1. persistent ring: 5 ints to the right into a posted buffer of 8, started 4 times
     * together, then 2 times one by one; freed */
    MPI_Request pr[2];
    MPI_Recv_init(in, 8, MPI_INT, left, 1, MPI_COMM_WORLD, &pr[0]);
    MPI_Send_init(out, 5, MPI_INT, right, 1, MPI_COMM_WORLD, &pr[1]);
    for (int k = 0; k < 4; k++) start_all(pr); /* site: main calls start_all */
    for (int k = 0; k < 2; k++) {
        MPI_Start(&pr[0]);
        MPI_Start(&pr[1]);
        MPI_Wait(&pr[1], MPI_STATUS_IGNORE);
        MPI_Wait(&pr[0], MPI_STATUS_IGNORE);
    }
    MPI_Request_free(&pr[0]);
    MPI_Request_free(&pr[1]);

    /* 2. a nonblocking collective: 3 doubles summed over all ranks */
    MPI_Request cr;
    MPI_Iallreduce(d, e, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &cr);
    MPI_Wait(&cr, MPI_STATUS_IGNORE);

    /* 3. even and odd ranks apart: 2 ints summed, and sub-rank 0 sends 6 ints to sub-rank 1 */
    MPI_Comm half;
    int hr, hp;
    MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &half); /* site: main split */
    PMPI_Comm_rank(half, &hr); /* PMPI: not counted */
    PMPI_Comm_size(half, &hp);
    MPI_Allreduce(out, in, 2, MPI_INT, MPI_SUM, half);
    if (hp > 1 && hr == 0) MPI_Send(out, 6, MPI_INT, 1, 2, half);
    if (hp > 1 && hr == 1) MPI_Recv(in, 6, MPI_INT, 0, 2, half, MPI_STATUS_IGNORE);
    MPI_Comm_free(&half);

    /* 4. MPI-IO: each rank writes 16 ints collectively and 4 on its own, syncs, reads its 16
     * back collectively and 4 of another rank's with a nonblocking read */
    MPI_File fh;
    MPI_Offset size;
    MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_write_at_all(fh, (MPI_Offset)r * 64, out, 16, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_write_at(fh, (MPI_Offset)P * 64 + r * 16, out, 4, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);
    MPI_File_read_at_all(fh, (MPI_Offset)r * 64, in, 16, MPI_INT, MPI_STATUS_IGNORE);
    MPI_Request ior;
    MPI_File_iread_at(fh, (MPI_Offset)P * 64 + right * 16, in, 4, MPI_INT, &ior);
    MPI_Wait(&ior, MPI_STATUS_IGNORE);
    MPI_File_get_size(fh, &size);
    MPI_File_close(&fh);
    if (r == 0) MPI_File_delete(argv[1], MPI_INFO_NULL);

    /* 5. one-sided: put 2 ints to the right, get 3 from the left, accumulate 1 to the right */
    MPI_Win win;
    int winbuf[8] = {0};
    MPI_Win_create(winbuf, sizeof winbuf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_fence(0, win);
    MPI_Put(out, 2, MPI_INT, right, 0, 2, MPI_INT, win);
    MPI_Get(in, 3, MPI_INT, left, 4, 3, MPI_INT, win);
    MPI_Accumulate(out, 1, MPI_INT, right, 2, 1, MPI_INT, MPI_SUM, win);
    MPI_Win_fence(0, win);
    MPI_Win_free(&win);

    MPI_Finalize();
    return 0;
}

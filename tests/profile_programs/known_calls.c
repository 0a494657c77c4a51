/* Makes a known number of each MPI call with known sizes; tests/test_profile.py derives the
 * exact per-rank counts, bytes and point-to-point matrix from the number of ranks P. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int r, P;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    int left = (r - 1 + P) % P, right = (r + 1) % P;
    double d[64] = {0};
    int ibuf[256] = {0}, ibuf2[256] = {0};
    char c[16] = {0}, c2[16] = {0};
    MPI_Status st;
    MPI_Request req[2];

    /* 1. rank 0 sends 3 x 10 doubles to every other rank (one receive uses MPI_ANY_SOURCE) */
    for (int k = 0; k < 3; k++) {
        if (r == 0)
            for (int j = 1; j < P; j++) MPI_Send(d, 10, MPI_DOUBLE, j, 1, MPI_COMM_WORLD);
        else
            MPI_Recv(d, 10, MPI_DOUBLE, k == 0 ? MPI_ANY_SOURCE : 0, 1, MPI_COMM_WORLD,
                     k == 1 ? MPI_STATUS_IGNORE : &st);
    }
    /* 2. ring: Irecv + Isend of 7 ints, Waitall, 4 times */
    for (int k = 0; k < 4; k++) {
        MPI_Irecv(ibuf, 7, MPI_INT, left, 2, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(ibuf2, 7, MPI_INT, right, 2, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    }
    /* 3. receive 5 ints into a posted buffer of 100: bytes are the actual 20 */
    for (int k = 0; k < 2; k++) {
        MPI_Irecv(ibuf, 100, MPI_INT, right, 3, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(ibuf2, 5, MPI_INT, left, 3, MPI_COMM_WORLD, &req[1]);
        MPI_Wait(&req[0], MPI_STATUS_IGNORE);
        MPI_Wait(&req[1], &st);
    }
    /* 4, 5. Sendrecv 16 chars x3, Sendrecv_replace 4 ints x2 around the ring */
    for (int k = 0; k < 3; k++)
        MPI_Sendrecv(c, 16, MPI_CHAR, right, 4, c2, 16, MPI_CHAR, left, 4, MPI_COMM_WORLD, &st);
    for (int k = 0; k < 2; k++)
        MPI_Sendrecv_replace(ibuf, 4, MPI_INT, right, 5, left, 5, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
    /* 6. rank 1 sends 3 ints to rank 0, which probes first */
    if (r == 1) MPI_Send(ibuf, 3, MPI_INT, 0, 6, MPI_COMM_WORLD);
    if (r == 0) {
        MPI_Probe(1, 6, MPI_COMM_WORLD, &st);
        MPI_Recv(ibuf, 3, MPI_INT, 1, 6, MPI_COMM_WORLD, &st);
    }
    /* 6b. MPI_PROC_NULL: counted calls that move no bytes */
    MPI_Send(ibuf, 5, MPI_INT, MPI_PROC_NULL, 8, MPI_COMM_WORLD);
    MPI_Recv(ibuf, 5, MPI_INT, MPI_PROC_NULL, 8, MPI_COMM_WORLD, &st);
    /* 7. a message to self completed by Waitany, then Test on the finished request */
    MPI_Irecv(ibuf, 1, MPI_INT, r, 7, MPI_COMM_WORLD, &req[0]);
    MPI_Isend(ibuf2, 1, MPI_INT, r, 7, MPI_COMM_WORLD, &req[1]);
    int idx, flag;
    MPI_Waitany(1, &req[0], &idx, MPI_STATUS_IGNORE);
    MPI_Wait(&req[1], MPI_STATUS_IGNORE);
    MPI_Test(&req[0], &flag, MPI_STATUS_IGNORE);

    /* 8. collectives */
    int *counts = malloc(sizeof(int) * P), *displs = malloc(sizeof(int) * P);
    int *rcounts = malloc(sizeof(int) * P), *rdispls = malloc(sizeof(int) * P);
    int tri = P * (P + 1) / 2;
    int *big = calloc(4 * (size_t)tri * P + 64, sizeof(int));
    int *big2 = calloc(4 * (size_t)tri * P + 64, sizeof(int));
    for (int j = 0, off = 0; j < P; j++) { counts[j] = j + 1; displs[j] = off; off += j + 1; }
    for (int j = 0; j < P; j++) { rcounts[j] = r + 1; rdispls[j] = j * (r + 1); }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < 3; k++) MPI_Bcast(ibuf, 10, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Reduce(d, d + 8, 4, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    for (int k = 0; k < 2; k++) MPI_Allreduce(d, d + 16, 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Gather(ibuf, 2, MPI_INT, big, 2, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Gatherv(ibuf, r + 1, MPI_INT, big, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Scatter(big, 3, MPI_INT, ibuf, 3, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Scatterv(big, counts, displs, MPI_INT, ibuf, r + 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Allgather(ibuf, 1, MPI_INT, big, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Allgatherv(ibuf, r + 1, MPI_INT, big, counts, displs, MPI_INT, MPI_COMM_WORLD);
    MPI_Alltoall(big2, 2, MPI_INT, big, 2, MPI_INT, MPI_COMM_WORLD);
    MPI_Alltoallv(big2, counts, displs, MPI_INT, big, rcounts, rdispls, MPI_INT, MPI_COMM_WORLD);
    MPI_Reduce_scatter(big2, big, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce_scatter_block(big2, big, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    /* nonblocking collectives, completed together by one Waitall */
    MPI_Request creq[8];
    MPI_Ibarrier(MPI_COMM_WORLD, &creq[0]);
    MPI_Ibcast(ibuf2, 6, MPI_INT, 0, MPI_COMM_WORLD, &creq[1]);
    MPI_Ireduce(d, d + 8, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD, &creq[2]);
    MPI_Iallreduce(d + 32, d + 40, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &creq[3]);
    MPI_Igather(c, 2, MPI_CHAR, big, 2, MPI_CHAR, 0, MPI_COMM_WORLD, &creq[4]);
    MPI_Iscatter(big2, 1, MPI_INT, ibuf2 + 100, 1, MPI_INT, 0, MPI_COMM_WORLD, &creq[5]);
    MPI_Iallgather(c2, 1, MPI_CHAR, c2 + 4, 1, MPI_CHAR, MPI_COMM_WORLD, &creq[6]);
    MPI_Ialltoall(big2 + 2 * tri * P, 1, MPI_INT, ibuf2 + 200, 1, MPI_INT, MPI_COMM_WORLD,
                  &creq[7]);
    MPI_Waitall(8, creq, MPI_STATUSES_IGNORE);

    /* 9. split into even and odd ranks; sub-rank 0 sends one int to sub-rank 1 (world r+2) */
    MPI_Comm half, dup;
    MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &half);
    int hr, hp;
    PMPI_Comm_rank(half, &hr); /* PMPI: not counted, keeps Comm_rank/size at one call each */
    PMPI_Comm_size(half, &hp);
    if (hp > 1 && hr == 0) MPI_Send(ibuf, 1, MPI_INT, 1, 9, half);
    if (hp > 1 && hr == 1) MPI_Recv(ibuf, 1, MPI_INT, 0, 9, half, MPI_STATUS_IGNORE);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Barrier(dup);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&half);
    free(counts); free(displs); free(rcounts); free(rdispls); free(big); free(big2);
    if (argc > 1 && r == P - 1) {
        sleep(1); /* let the other ranks reach MPI_Finalize first */
        if (strcmp(argv[1], "crash") == 0) abort();
        if (strcmp(argv[1], "abort") == 0) MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Finalize();
    return 0;
}

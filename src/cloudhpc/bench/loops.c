/* The timing loops of `cloudhpc bench` and of predict's curves, in C: the MPI call alone, with
 * nothing of Python or mpi4py in the timed part (bench/cloops.py builds this file with the job's
 * own mpicc and calls it through ctypes; the same loops in Python measure what mpi4py adds).
 *
 * Point-to-point loops are IMB's and OSU's: the whole loop between two MPI_Wtime calls, IMB's
 * separate send and receive buffers. The collective loop is IMB-MPI1's (IMB_bcast.c,
 * IMB_allreduce.c, ...): each call between two MPI_Wtime calls, the times summed, an MPI_Barrier
 * after every call outside the timed part when `sync` (IMB's -sync 1, its default), the root
 * moving by `root_shift` every call (IMB's -root_shift). The communicator arrives as its Fortran
 * handle (mpi4py's Comm.py2f), which MPI_Comm_f2c turns into this library's own handle whatever
 * the implementation's ABI. Every function returns seconds; -1 when a call failed (the error
 * handler is MPI_ERRORS_RETURN's for the communicator mpi4py made).
 */
#include <mpi.h>
#include <stdlib.h>

enum {
    OP_BARRIER, OP_BCAST, OP_REDUCE, OP_ALLREDUCE, OP_GATHER, OP_GATHERV, OP_SCATTER,
    OP_SCATTERV, OP_ALLGATHER, OP_ALLGATHERV, OP_ALLTOALL, OP_ALLTOALLV, OP_REDUCE_SCATTER,
    OP_PINGPONG, OP_SENDRECV
};

#define TAG 1

int chpc_abi_version(void) { return 1; }

/* One call of collective `op` on `count` elements (bytes; floats for reductions); counts and
 * displs (P elements) for the v-variants and reduce_scatter. pingpong is one round trip between
 * ranks 0 and 1, sendrecv IMB's Sendrecv (to the right neighbour, from the left). */
static int one_call(MPI_Comm comm, int op, void *s, void *r, int count, const int *counts,
                    const int *displs, int root, int rank, int size) {
    switch (op) {
    case OP_BARRIER:
        return MPI_Barrier(comm);
    case OP_BCAST:
        return MPI_Bcast(rank == root ? s : r, count, MPI_BYTE, root, comm);
    case OP_REDUCE:
        return MPI_Reduce(s, r, count, MPI_FLOAT, MPI_SUM, root, comm);
    case OP_ALLREDUCE:
        return MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, comm);
    case OP_GATHER:
        return MPI_Gather(s, count, MPI_BYTE, r, count, MPI_BYTE, root, comm);
    case OP_GATHERV:
        return MPI_Gatherv(s, count, MPI_BYTE, r, counts, displs, MPI_BYTE, root, comm);
    case OP_SCATTER:
        return MPI_Scatter(s, count, MPI_BYTE, r, count, MPI_BYTE, root, comm);
    case OP_SCATTERV:
        return MPI_Scatterv(s, counts, displs, MPI_BYTE, r, count, MPI_BYTE, root, comm);
    case OP_ALLGATHER:
        return MPI_Allgather(s, count, MPI_BYTE, r, count, MPI_BYTE, comm);
    case OP_ALLGATHERV:
        return MPI_Allgatherv(s, count, MPI_BYTE, r, counts, displs, MPI_BYTE, comm);
    case OP_ALLTOALL:
        return MPI_Alltoall(s, count, MPI_BYTE, r, count, MPI_BYTE, comm);
    case OP_ALLTOALLV:
        return MPI_Alltoallv(s, counts, displs, MPI_BYTE, r, counts, displs, MPI_BYTE, comm);
    case OP_REDUCE_SCATTER:
        return MPI_Reduce_scatter(s, r, counts, MPI_FLOAT, MPI_SUM, comm);
    case OP_PINGPONG:
        if (rank == 0) {
            int e = MPI_Send(s, count, MPI_BYTE, 1, TAG, comm);
            return e ? e : MPI_Recv(r, count, MPI_BYTE, 1, TAG, comm, MPI_STATUS_IGNORE);
        }
        if (rank == 1) {
            int e = MPI_Recv(r, count, MPI_BYTE, 0, TAG, comm, MPI_STATUS_IGNORE);
            return e ? e : MPI_Send(s, count, MPI_BYTE, 0, TAG, comm);
        }
        return MPI_SUCCESS;
    case OP_SENDRECV:
        return MPI_Sendrecv(s, count, MPI_BYTE, (rank + 1) % size, TAG, r, count, MPI_BYTE,
                            (rank + size - 1) % size, TAG, comm, MPI_STATUS_IGNORE);
    }
    return MPI_ERR_OP;
}

/* IMB's collective loop: `reps` calls, each timed on its own and summed (each time also into
 * times[i] when times is not NULL), a barrier after each when `sync`, the root starting at 0
 * and moving by root_shift. Returns the summed seconds of the calls. */
double chpc_coll(int fcomm, int op, void *s, void *r, int count, const int *counts,
                 const int *displs, int reps, int root_shift, int sync, double *times) {
    MPI_Comm comm = MPI_Comm_f2c(fcomm);
    int rank, size, root = 0;
    double total = 0.0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int i = 0; i < reps; i++) {
        double t0 = MPI_Wtime();
        int e = one_call(comm, op, s, r, count, counts, displs, root, rank, size);
        double t = MPI_Wtime() - t0;
        if (e != MPI_SUCCESS)
            return -1.0;
        total += t;
        if (times)
            times[i] = t;
        root = (root + root_shift) % size;
        if (sync && MPI_Barrier(comm) != MPI_SUCCESS)
            return -1.0;
    }
    return total;
}

/* IMB PingPong between ranks 0 and 1: the whole loop timed (half of it is the latency). */
double chpc_pingpong(int fcomm, void *s, void *r, int count, int reps) {
    MPI_Comm comm = MPI_Comm_f2c(fcomm);
    int rank, e = MPI_SUCCESS;
    MPI_Comm_rank(comm, &rank);
    double t0 = MPI_Wtime();
    if (rank == 0) {
        for (int i = 0; i < reps && !e; i++) {
            e = MPI_Send(s, count, MPI_BYTE, 1, TAG, comm);
            if (!e)
                e = MPI_Recv(r, count, MPI_BYTE, 1, TAG, comm, MPI_STATUS_IGNORE);
        }
    } else if (rank == 1) {
        for (int i = 0; i < reps && !e; i++) {
            e = MPI_Recv(r, count, MPI_BYTE, 0, TAG, comm, MPI_STATUS_IGNORE);
            if (!e)
                e = MPI_Send(s, count, MPI_BYTE, 0, TAG, comm);
        }
    }
    double t = MPI_Wtime() - t0;
    return e ? -1.0 : t;
}

/* IMB PingPing: ranks 0 and 1 send to each other at once (Isend, Recv, Wait). */
double chpc_pingping(int fcomm, void *s, void *r, int count, int reps) {
    MPI_Comm comm = MPI_Comm_f2c(fcomm);
    int rank, e = MPI_SUCCESS;
    MPI_Request req;
    MPI_Comm_rank(comm, &rank);
    int peer = 1 - rank;
    double t0 = MPI_Wtime();
    if (rank < 2) {
        for (int i = 0; i < reps && !e; i++) {
            e = MPI_Isend(s, count, MPI_BYTE, peer, TAG, comm, &req);
            if (!e)
                e = MPI_Recv(r, count, MPI_BYTE, peer, TAG, comm, MPI_STATUS_IGNORE);
            if (!e)
                e = MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
    }
    double t = MPI_Wtime() - t0;
    return e ? -1.0 : t;
}

/* osu_bw (bibw = 0) and osu_bibw (bibw = 1): windows of `window` nonblocking messages, an
 * acknowledgement after each window (bw), or windows both ways at once (bibw). */
double chpc_window(int fcomm, int bibw, void *s, void *r, int count, int reps, int window) {
    MPI_Comm comm = MPI_Comm_f2c(fcomm);
    int rank, e = MPI_SUCCESS;
    char ack = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)window);
    if (!reqs)
        return -1.0;
    int peer = 1 - rank;
    double t0 = MPI_Wtime();
    for (int i = 0; i < reps && !e && rank < 2; i++) {
        int n = 0;
        if (bibw) {
            for (int w = 0; w < window && !e; w++)
                e = MPI_Irecv(r, count, MPI_BYTE, peer, TAG, comm, &reqs[n++]);
            for (int w = 0; w < window && !e; w++)
                e = MPI_Isend(s, count, MPI_BYTE, peer, TAG, comm, &reqs[n++]);
            if (!e)
                e = MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
        } else if (rank == 0) {
            for (int w = 0; w < window && !e; w++)
                e = MPI_Isend(s, count, MPI_BYTE, 1, TAG, comm, &reqs[n++]);
            if (!e)
                e = MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
            if (!e)
                e = MPI_Recv(&ack, 1, MPI_BYTE, 1, TAG + 1, comm, MPI_STATUS_IGNORE);
        } else {
            for (int w = 0; w < window && !e; w++)
                e = MPI_Irecv(r, count, MPI_BYTE, 0, TAG, comm, &reqs[n++]);
            if (!e)
                e = MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
            if (!e)
                e = MPI_Send(&ack, 1, MPI_BYTE, 0, TAG + 1, comm);
        }
    }
    double t = MPI_Wtime() - t0;
    free(reqs);
    return e ? -1.0 : t;
}

/* What a call costs the library when it moves nothing: `reps` MPI_Send and MPI_Recv to and from
 * MPI_PROC_NULL (the floor under which mpi4py's own per-call cost is measured). */
double chpc_null_calls(int fcomm, void *buf, int reps) {
    MPI_Comm comm = MPI_Comm_f2c(fcomm);
    double t0 = MPI_Wtime();
    for (int i = 0; i < reps; i++) {
        MPI_Send(buf, 1, MPI_BYTE, MPI_PROC_NULL, TAG, comm);
        MPI_Recv(buf, 1, MPI_BYTE, MPI_PROC_NULL, TAG, comm, MPI_STATUS_IGNORE);
    }
    return MPI_Wtime() - t0;
}

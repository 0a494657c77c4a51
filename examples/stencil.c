/* A 1-D Jacobi stencil over MPI: each rank holds 10,000 points, exchanges one halo value with
 * each neighbour per step (MPI_Sendrecv) and reduces the residual every 10 steps (MPI_Allreduce).
 * Build:  .venv/bin/mpicc -O2 -o stencil examples/stencil.c
 * Run:    cloudhpc profile -n 2 -- ./stencil 200      (200 steps) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define LOCAL 10000

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int steps = argc > 1 ? atoi(argv[1]) : 100;
    double *u = calloc(LOCAL + 2, sizeof(double)), *v = calloc(LOCAL + 2, sizeof(double));
    if (rank == 0) u[0] = v[0] = 1.0; /* a fixed hot boundary on the left */
    int left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    int right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    double residual = 0.0;
    for (int s = 1; s <= steps; s++) {
        MPI_Sendrecv(&u[1], 1, MPI_DOUBLE, left, 0, &u[LOCAL + 1], 1, MPI_DOUBLE, right, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&u[LOCAL], 1, MPI_DOUBLE, right, 1, &u[0], 1, MPI_DOUBLE, left, 1,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (rank == 0) u[0] = 1.0;
        double local = 0.0;
        for (int i = 1; i <= LOCAL; i++) {
            v[i] = 0.5 * (u[i - 1] + u[i + 1]);
            local += (v[i] - u[i]) * (v[i] - u[i]);
        }
        double *t = u; u = v; v = t;
        if (s % 10 == 0) MPI_Allreduce(&local, &residual, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    if (rank == 0) printf("stencil: %d ranks, %d steps, residual %.3e\n", size, steps, residual);
    free(u);
    free(v);
    MPI_Finalize();
    return 0;
}

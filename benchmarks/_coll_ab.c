/* coll_ab.py's buffer A/B: one collective at one size timed as IMB times it (each call between
 * two MPI_Wtime, a barrier after each), over buffer kinds interleaved in blocks in one process,
 * so that the machine's drift (load, the vCPU placement) falls on every kind alike.
 * usage: _coll_ab allreduce|bcast NBYTES REPS ROUNDS
 * prints per kind: "KIND p10 MED p90" (rank 0's calls, us) and the buffers' offset in a page. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ALIGNED_ONES, MALLOC_IMBVALS, ALLOCMEM_IMBVALS, ALIGNED_IMBVALS, ALIGNED_ZEROS, SPLIT, NK };
static const char *names[NK] = {"page-aligned,ones", "malloc,imb-values", "MPI_Alloc_mem,imb-values",
                                "page-aligned,imb-values", "page-aligned,zeros",
                                "page-aligned,ones,split-comm"};
static int allreduce;

static int call(void *s, void *r, int n, int root, int rank, MPI_Comm c) {
    if (allreduce)
        return MPI_Allreduce(s, r, n / 4, MPI_FLOAT, MPI_SUM, c);
    return MPI_Bcast(rank == root ? s : r, n, MPI_BYTE, root, c);
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc != 5) {
        fprintf(stderr, "usage: _coll_ab allreduce|bcast NBYTES REPS ROUNDS\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    allreduce = strcmp(argv[1], "allreduce") == 0;
    int n = atoi(argv[2]), reps = atoi(argv[3]), rounds = atoi(argv[4]);
    void *s[NK], *r[NK];
    for (int k = 0; k < NK; k++) {
        if (k == MALLOC_IMBVALS) {
            s[k] = malloc(n), r[k] = malloc(n);
        } else if (k == ALLOCMEM_IMBVALS) {
            MPI_Alloc_mem(n, MPI_INFO_NULL, &s[k]), MPI_Alloc_mem(n, MPI_INFO_NULL, &r[k]);
        } else if (posix_memalign(&s[k], 4096, n) || posix_memalign(&r[k], 4096, n)) {
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        float *f = s[k];
        int imb = k == MALLOC_IMBVALS || k == ALLOCMEM_IMBVALS || k == ALIGNED_IMBVALS;
        for (int i = 0; i < n / 4; i++) /* IMB's BUF_VALUE(rank, i) */
            f[i] = imb ? (float)(0.1 * (rank + 1) + (float)i) : k == ALIGNED_ZEROS ? 0.f : 1.f;
        memset(r[k], 0, n);
    }
    MPI_Comm split; /* IMB's own communicator is a split of MPI_COMM_WORLD */
    MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &split);
    double *t = malloc(sizeof(double) * NK * (size_t)rounds * reps);
    for (int j = 0; j < rounds; j++)
        for (int k = 0; k < NK; k++) {
            MPI_Comm c = k == SPLIT ? split : MPI_COMM_WORLD;
            MPI_Barrier(c);
            for (int i = 0; i < 10; i++) /* IMB's MIN_WARMUP_ITERS */
                call(s[k], r[k], n, i % size, rank, c), MPI_Barrier(c);
            for (int i = 0; i < reps; i++) {
                double t0 = MPI_Wtime();
                call(s[k], r[k], n, i % size, rank, c);
                t[((size_t)k * rounds + j) * reps + i] = MPI_Wtime() - t0;
                MPI_Barrier(c);
            }
        }
    if (rank == 0)
        for (int k = 0; k < NK; k++) {
            double *p = t + (size_t)k * rounds * reps;
            int m = rounds * reps;
            qsort(p, m, sizeof(double), cmp);
            printf("AB %s %.2f %.2f %.2f page+%lu\n", names[k], p[m / 10] * 1e6, p[m / 2] * 1e6,
                   p[m * 9 / 10] * 1e6, (unsigned long)((size_t)s[k] % 4096));
        }
    MPI_Finalize();
    return 0;
}

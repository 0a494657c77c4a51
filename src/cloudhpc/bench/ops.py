"""The collective operations `bench coll` measures (kept apart from coll.py so that the command
line can list them without importing mpi4py, which would initialise MPI in the parent)."""

REDUCTIONS = {"reduce", "allreduce", "reduce_scatter"}
OPS = (
    "barrier", "bcast", "reduce", "allreduce", "gather", "gatherv", "scatter", "scatterv",
    "allgather", "allgatherv", "alltoall", "alltoallv", "reduce_scatter",
)  # fmt: skip

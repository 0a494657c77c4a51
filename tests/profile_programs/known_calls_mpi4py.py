"""Known numbers of MPI calls with known sizes through mpi4py's buffer methods (which call the
MPI-4 large-count `_c` entry points); tests/test_profile.py derives the expected profile."""

import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
r, P = comm.Get_rank(), comm.Get_size()
left, right = (r - 1) % P, (r + 1) % P

a = np.zeros(50)
for _ in range(2):  # rank 0 sends 2 x 50 doubles to every other rank
    if r == 0:
        for j in range(1, P):
            comm.Send(a, dest=j, tag=1)
    else:
        comm.Recv(a, source=0, tag=1)

x, y = np.zeros(9, np.int32), np.zeros(9, np.int32)
for _ in range(3):  # ring of 9 int32 with Irecv / Isend / Waitall
    reqs = [comm.Irecv(y, source=left, tag=2), comm.Isend(x, dest=right, tag=2)]
    MPI.Request.Waitall(reqs)

for _ in range(2):
    comm.Sendrecv(
        np.zeros(5, np.float32),
        dest=right,
        sendtag=3,
        recvbuf=np.zeros(5, np.float32),
        source=left,
        recvtag=3,
    )

u8 = np.zeros(100, np.uint8)
for _ in range(2):
    comm.Bcast(u8, root=0)
v = np.zeros(10)
for _ in range(4):
    comm.Allreduce(MPI.IN_PLACE, v)
comm.Reduce(np.zeros(3, np.int64), np.zeros(3, np.int64) if r == 0 else None, root=0)
comm.Allgather(np.zeros(2), np.zeros(2 * P))
counts = np.arange(1, P + 1)
sdispl = np.concatenate([[0], np.cumsum(counts)[:-1]])
comm.Alltoallv(
    [np.zeros(counts.sum(), np.int32), (counts, sdispl), MPI.INT],
    [np.zeros(P * (r + 1), np.int32), (np.full(P, r + 1), np.arange(P) * (r + 1)), MPI.INT],
)
gbuf = [np.zeros(counts.sum()), (counts, sdispl), MPI.DOUBLE] if r == 0 else None
comm.Gatherv(np.zeros(r + 1), gbuf, root=0)
comm.Reduce_scatter_block(np.zeros(2 * P), np.zeros(2))
comm.Barrier()

sub = comm.Split(r % 2, r)
sub.Barrier()
sub.Free()
dup = comm.Dup()
dup.Barrier()
dup.Free()
if len(sys.argv) > 1 and sys.argv[1] == "crash" and r == P - 1:
    import os
    import time

    time.sleep(1)
    os.abort()

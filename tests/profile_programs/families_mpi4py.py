"""families.c through mpi4py's buffer methods (the MPI-4 large-count `_c` entry points):
persistent requests, a nonblocking collective, a split communicator, MPI-IO and one-sided calls
with known sizes; tests/test_profile_families.py derives the expected profile. argv[1]: the file
MPI-IO writes and reads."""

import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
r, P = comm.Get_rank(), comm.Get_size()
left, right = (r - 1) % P, (r + 1) % P
out, inn = np.zeros(64, np.int32), np.zeros(64, np.int32)


def start_all(reqs):
    MPI.Prequest.Startall(reqs)  # site: start_all
    MPI.Request.Waitall(reqs)


# 1. persistent ring: 5 int32 to the right into a posted buffer of 8, started 3 times together
reqs = [comm.Recv_init(inn[:8], left, 1), comm.Send_init(out[:5], right, 1)]
for _ in range(3):
    start_all(reqs)  # site: the module calls start_all
for q in reqs:
    q.Free()

# 2. a nonblocking collective: 3 doubles summed
comm.Iallreduce(np.zeros(3), np.zeros(3)).Wait()

# 3. even and odd ranks apart: 2 int32 summed
half = comm.Split(r % 2, r)
half.Allreduce(out[:2], inn[:2])
half.Free()

# 4. MPI-IO: 16 int32 written collectively at this rank's place, read back, 4 read at once
fh = MPI.File.Open(comm, sys.argv[1], MPI.MODE_CREATE | MPI.MODE_RDWR)
fh.Write_at_all(r * 64, out[:16])
fh.Sync()
comm.Barrier()
fh.Sync()
fh.Read_at_all(r * 64, inn[:16])
fh.Iread_at(right * 64, inn[:4]).Wait()
fh.Close()

# 5. one-sided: put 2 int32 to the right, get 3 from the left
win = MPI.Win.Create(np.zeros(8, np.int32), 4, comm=comm)
win.Fence()
win.Put(out[:2], right, 0)
win.Get(inn[:3], left, 4)
win.Fence()
win.Free()

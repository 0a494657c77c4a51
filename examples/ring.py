"""An mpi4py program: a token goes around the ring of ranks 100 times, then an Allreduce.

Profile it with `cloudhpc profile -n 2 -- examples/ring.py` (a .py runs under the venv's Python).
"""

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
token = np.zeros(1, dtype=np.int64)
for _ in range(100):
    if rank == 0:
        token += 1
        comm.Send(token, dest=(rank + 1) % size)
        comm.Recv(token, source=(rank - 1) % size)
    else:
        comm.Recv(token, source=rank - 1)
        token += 1
        comm.Send(token, dest=(rank + 1) % size)
total = np.zeros(1, dtype=np.int64)
comm.Allreduce(token, total)
if rank == 0:
    print(f"ring: {size} ranks, token {token[0]}, sum over ranks {total[0]}")

"""A bare mpi4py ping-pong loop, the yardstick for `cloudhpc bench pingpong`.

Prints one JSON line: {bytes: half-round-trip microseconds} for the sizes on argv.
"""

import json
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
reps, warm = 1000, 100
out = {}
for nbytes in map(int, sys.argv[1:]):
    buf = np.zeros(nbytes, dtype=np.uint8)
    for n, _timed in ((warm, False), (reps, True)):
        comm.Barrier()
        t0 = MPI.Wtime()
        for _ in range(n):
            if rank == 0:
                comm.Send(buf, 1, 1)
                comm.Recv(buf, 1, 1)
            else:
                comm.Recv(buf, 0, 1)
                comm.Send(buf, 0, 1)
        t = MPI.Wtime() - t0
    out[nbytes] = t / reps / 2 * 1e6
if rank == 0:
    print(json.dumps(out))

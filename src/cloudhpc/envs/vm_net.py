"""vm-net: every rank reaches every other through the TCP/IP stack, even on the same host.

This is what processes in separate VMs on one node see (000 section 12.6, Fig 12.18; 001 section
5.2): no shared memory between them, only the (virtual) NIC. Each MPI implementation says how
(cloudhpc.mpi: MPICH turns off its shared-memory path and uses libfabric's TCP provider).

tests/test_envs.py proves the change: under vm-net the ranks hold established TCP connections to
each other; under native they hold none.
"""

from .base import Environment


class VmNet(Environment):
    name = "vm-net"
    description = "virtualised networking: all rank-to-rank traffic over TCP/IP, no shared memory"
    shared_memory = False

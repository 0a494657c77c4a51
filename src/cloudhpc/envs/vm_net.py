"""vm-net: every rank reaches every other through the TCP/IP stack, even on the same host.

This is what processes in separate VMs on one node see (000 section 12.6, Fig 12.18; 001 section
5.2): no shared memory between them, only the (virtual) NIC. With MPICH's ch4 device:

- MPIR_CVAR_NOLOCAL=1 turns off the shared-memory path between ranks on one node, so all traffic
  goes through the network module;
- MPIR_CVAR_CH4_NETMOD=ofi selects libfabric as that network module (the wheel also has UCX,
  whose default transports include shared memory again: posix, sysv, cma);
- FI_PROVIDER=tcp makes libfabric use its TCP provider, i.e. kernel sockets.

tests/test_envs.py proves the change: under vm-net the ranks hold established TCP connections to
each other; under native they hold none.
"""

from .base import Environment


class VmNet(Environment):
    name = "vm-net"
    description = "virtualised networking: all rank-to-rank traffic over TCP/IP, no shared memory"

    def variables(self) -> dict[str, str]:
        return {
            "MPIR_CVAR_NOLOCAL": "1",
            "MPIR_CVAR_CH4_NETMOD": "ofi",
            "FI_PROVIDER": "tcp",
        }

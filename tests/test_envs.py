"""Environments: their settings, and proof that vm-net really moves traffic over TCP."""

import json
import sys
from pathlib import Path

import pytest

from cloudhpc.envs import ENVIRONMENTS, get_environment
from cloudhpc.errors import CloudhpcError
from cloudhpc.job import Job, Layout
from cloudhpc.launch.runner import Monitor, launch_program

PROGRAM = str(Path(__file__).parent / "programs" / "tcp_peers.py")


def test_registry_has_native_and_vm_net():
    assert {"native", "vm-net"} <= set(ENVIRONMENTS)
    with pytest.raises(CloudhpcError, match="unknown environment 'nope'"):
        get_environment("nope")


def test_vm_net_variables_disable_shared_memory_and_select_tcp():
    v = get_environment("vm-net").variables()
    assert v == {"MPIR_CVAR_NOLOCAL": "1", "MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": "tcp"}
    assert get_environment("native").variables() == {"MPIR_CVAR_NOLOCAL": "0"}
    d = get_environment("vm-net").describe()
    assert d["name"] == "vm-net" and d["variables"] == v


def test_local_vm_net_ranks_talk_over_loopback():
    # libfabric would otherwise pick the first interface it finds, e.g. an emulated cluster's
    # address-less veth end, and MPI_Init fails
    from cloudhpc.launch import get_launcher

    job = Job(app="tcp_peers", nprocs=2, layout=Layout(1, 2, 1), env="vm-net", oversubscribe=True)
    plan = get_launcher("local").plan(job)
    assert plan.variables["FI_TCP_IFACE"] == "lo"
    i = plan.argv.index("FI_TCP_IFACE")
    assert plan.argv[i - 1 : i + 2] == ["-genv", "FI_TCP_IFACE", "lo"]
    native = get_launcher("local").plan(
        Job(app="tcp_peers", nprocs=2, layout=Layout(1, 2, 1), env="native", oversubscribe=True)
    )
    assert "FI_TCP_IFACE" not in native.variables


class Collect(Monitor):
    def __init__(self):
        self.lines = []

    def output(self, line):
        self.lines.append(line)


def _peer_tcp(env: str) -> int:
    job = Job(app="tcp_peers", nprocs=2, layout=Layout(1, 2, 1), env=env, oversubscribe=True)
    mon = Collect()
    outcome = launch_program(job, [sys.executable, PROGRAM], monitor=mon)
    assert outcome.returncode == 0, outcome.stderr
    report = json.loads(mon.lines[-1])
    assert report["size"] == 2
    return report["peer_tcp_connections"]


def test_transport_really_changes():
    """native: ranks share memory, no TCP between them; vm-net: they talk over TCP sockets."""
    assert _peer_tcp("native") == 0
    assert _peer_tcp("vm-net") >= 1

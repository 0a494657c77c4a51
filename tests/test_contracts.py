"""Contract tests: every registered launcher, environment and MPI implementation goes through the
same checks (as ReFrame does for its launchers), so a new one, built in or a plugin's, is held to
what the others do. The parameters are read from the registries themselves."""

from __future__ import annotations

import dataclasses
import os

import pytest

from cloudhpc.cluster.model import Cluster, ClusterHost
from cloudhpc.engines.registry import ENGINES
from cloudhpc.envs import ENVIRONMENTS, get_environment
from cloudhpc.job import Host, Job, Layout
from cloudhpc.launch import LAUNCHERS, get_launcher
from cloudhpc.launch.runner import Monitor, plan_job, raise_for_failure, run_plan
from cloudhpc.mpi import IMPLEMENTATIONS, Reach, Transport, Where, get_implementation
from cloudhpc.registry import Registry

MPIS = sorted(IMPLEMENTATIONS)
ENVS = sorted(ENVIRONMENTS)
LAUNCHER_NAMES = sorted(LAUNCHERS)
# the names each implementation writes, which no other one may write
OWN_NAMES = {
    "mpich": ("MPIR_CVAR_", "-launcher-exec"),
    "openmpi": ("OMPI_MCA_", "--prtemca", "PRTE_MCA_"),
    "intelmpi": ("I_MPI_", "-bootstrap-exec"),
}
RANK = ["/bin/true", "--rank-argv"]


def test_one_registry_shape():
    for registry in (LAUNCHERS, ENVIRONMENTS, IMPLEMENTATIONS, ENGINES):
        assert isinstance(registry, Registry) and registry.group.startswith("cloudhpc.")
    from cloudhpc.apps.registry import APPS, MAINS

    assert isinstance(APPS, Registry) and APPS.group == "cloudhpc.apps"
    assert isinstance(MAINS, Registry)


def _cluster() -> dict:
    hosts = tuple(
        ClusterHost(f"chpc-k-h{i}", i, 2, 10**9, f"/tmp/k/h{i}", f"10.224.9.{i + 2}", f"chpc9h{i}")
        for i in range(2)
    )
    c = Cluster("k", hosts, 9000, "/tmp/k", "now", status="up", number=9)
    return c.to_dict()


def _job_for(launcher: str, mpi: str, env: str = "native") -> Job:
    """A job each launcher accepts: the hosts, engine and ranks it is for."""
    job = Job(app="selftest", nprocs=2, layout=Layout(1, 2, 1), env=env, mpi=mpi,
              launcher=launcher, oversubscribe=True)  # fmt: skip
    if launcher in ("hosts", "cluster"):
        job = dataclasses.replace(job, hosts=(Host("chpc-k-h0", 2), Host("chpc-k-h1", 2)))
    if launcher == "cluster":
        job = dataclasses.replace(job, cluster=_cluster())
    if launcher == "direct":
        job = dataclasses.replace(job, nprocs=1, layout=Layout(1, 1, 1), engine="serial")
    if launcher == "ray":
        job = dataclasses.replace(job, engine="ray")
    return job


@pytest.fixture
def slurm_allocation(monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "1")
    monkeypatch.setenv("SLURM_NTASKS", "4")


@pytest.mark.parametrize("mpi", MPIS)
@pytest.mark.parametrize("launcher", LAUNCHER_NAMES)
def test_launcher_contract(launcher, mpi, slurm_allocation):
    """argv of strings ending with the rank's command; every variable a string, on the command
    line as the launcher passes variables; no other implementation's names."""
    job = _job_for(launcher, mpi)
    plan = get_launcher(launcher).plan(job, list(RANK))
    assert plan.argv and all(isinstance(a, str) for a in plan.argv)
    assert plan.argv[-2:] == RANK
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in plan.variables.items())
    assert plan.launcher == launcher and plan.nprocs == job.nprocs and plan.mpi == mpi
    assert plan.environment["name"] == job.env and plan.mpi_info["name"] == mpi
    text = " ".join(plan.argv)
    if launcher.startswith("slurm") and plan.argv[0] == "srun":
        for key in plan.variables:  # in srun's environment, named by --export
            assert key in text, key
    elif not get_launcher(launcher).singleton:  # mpiexec carries every variable
        for key, value in plan.variables.items():
            assert key in text and value in text, key
    for other, names in OWN_NAMES.items():
        if other != mpi:
            for name in names:
                assert name not in text and not any(k.startswith(name) for k in plan.variables)


@pytest.mark.parametrize("mpi", MPIS)
@pytest.mark.parametrize("env", ENVS)
def test_environment_contract(env, mpi):
    e = get_environment(f"{env}:1gbit" if ENVIRONMENTS.lookup(env).argument else env)
    impl = get_implementation(mpi)
    variables = e.variables(impl, "lo", False)
    assert variables and all(isinstance(v, str) for v in variables.values())
    d = e.describe(impl)
    assert {"name", "description", "variables"} <= set(d) and d["description"]
    assert isinstance(e.shared_memory, bool)
    native = get_environment("native").variables(impl, "lo", False)
    assert (variables == native) == e.shared_memory  # a transport that differs says so


TRANSPORTS = [
    Transport(s, i, h) for s in (True, False) for i in (None, "lo") for h in (False, True)
]


@pytest.mark.parametrize("mpi", MPIS)
def test_implementation_contract(mpi):
    impl = get_implementation(mpi)
    assert impl.name == mpi and impl.title and impl.version()
    assert impl.installed() and os.access(impl.tool("mpiexec"), os.X_OK)
    assert os.access(impl.tool("mpicc"), os.X_OK)
    for t in TRANSPORTS:
        v = impl.transport_variables(t)
        assert v and all(isinstance(k, str) and isinstance(x, str) for k, x in v.items())
    assert impl.transport_variables(Transport(True)) != impl.transport_variables(Transport(False))
    env = {"A_VARIABLE": "a value"}
    args = impl.env_args(env)
    assert "A_VARIABLE" in " ".join(args) and "a value" in " ".join(args)
    job = _job_for("local", mpi)
    argv = impl.command(job, Where(), env, list(RANK))
    assert argv[0] == impl.tool("mpiexec") and argv[-2:] == RANK and "2" in argv
    hosts = (("a", 1), ("b", 2))
    for reach in (Reach(), Reach("/hook", "10.0.0.1", "chpc0")):
        where = Where(hosts=hosts, reach=reach)
        argv = impl.command(dataclasses.replace(job, nprocs=3), where, env, list(RANK))
        assert argv[0] == impl.tool("mpiexec") and argv[-2:] == RANK
        assert "a" in " ".join(argv) and "b" in " ".join(argv)
        if reach.agent:
            assert "/hook" in argv
    argv = impl.command(job, Where(allocation=True, per_node=2), env, list(RANK))
    assert argv[0] == impl.tool("mpiexec") and argv[-2:] == RANK and "2" in argv
    assert all(isinstance(v, str) for v in impl.runtime_variables().values())
    assert impl.describe() == {"name": mpi, "version": impl.version()}


@pytest.mark.parametrize("mpi", MPIS)
@pytest.mark.parametrize("env", ["native", "vm-net"])
def test_every_implementation_runs_in_every_local_environment(mpi, env):
    """A real run: the ranks start, find each other and agree (an Allreduce), record who ran."""
    job = Job(app="selftest", params={"mode": "ok"}, nprocs=2, layout=Layout(1, 2, 1), env=env,
              mpi=mpi, oversubscribe=True)  # fmt: skip
    outcome = run_plan(plan_job(job, preflight=False), Monitor(), 120)
    raise_for_failure(outcome)
    assert outcome.result["body"]["metrics"] == {"sum": 1.0, "size": 2}
    assert outcome.result["mpi"]["library"]


@pytest.mark.parametrize("mpi", MPIS)
def test_every_implementation_runs_a_singleton(mpi, tmp_path):
    """The direct launcher (serial engine): MPI initialises as a singleton, leaving no file."""
    job = Job(app="selftest", params={"mode": "ok"}, nprocs=1, layout=Layout(1, 1, 1),
              mpi=mpi, engine="serial", launcher="direct")  # fmt: skip
    before = set(os.listdir("/tmp"))
    outcome = run_plan(plan_job(job, preflight=False), Monitor(), 120)
    raise_for_failure(outcome)
    assert outcome.result["nprocs"] == 1
    if mpi == "openmpi":  # its session directory went to the run's scratch directory
        assert not [n for n in set(os.listdir("/tmp")) - before if n.startswith("ompi.")]


def test_registries_name_their_kind_in_one_line():
    from cloudhpc.errors import CloudhpcError

    for registry, kind in ((LAUNCHERS, "launcher"), (IMPLEMENTATIONS, "MPI implementation"),
                           (ENGINES, "engine")):  # fmt: skip
        with pytest.raises(CloudhpcError, match=f"unknown {kind} 'nope'; known: "):
            registry.lookup("nope")

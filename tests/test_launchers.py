"""Launchers: the exact argv and environment of each (dry runs), layouts, slots."""

import os
import sys

import pytest
from helpers import assert_one_line_error, run_cli

from cloudhpc.errors import CloudhpcError
from cloudhpc.job import Host, Job, Layout
from cloudhpc.launch import LAUNCHERS, choose_launcher, get_launcher
from cloudhpc.launch.layout import parse_layout
from cloudhpc.launch.runner import plan_job

CORES = os.cpu_count() or 1


def _job(**kw) -> Job:
    base = dict(app="bench.pingpong", nprocs=2, layout=Layout(1, 2, 1), oversubscribe=False)
    base.update(kw)
    return Job(**base)


def _genv(argv):
    out = {}
    for i, a in enumerate(argv):
        if a == "-genv":
            out[argv[i + 1]] = argv[i + 2]
    return out


def test_registry_and_choice(monkeypatch):
    assert {"local", "hosts", "slurm", "direct"} <= set(LAUNCHERS)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    assert choose_launcher(False, "mpi") == "local"
    assert choose_launcher(True, "mpi") == "hosts"
    assert choose_launcher(False, "serial") == "direct"
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    assert choose_launcher(False, "mpi") == "slurm"
    with pytest.raises(CloudhpcError, match="unknown launcher"):
        get_launcher("pbs-not-yet")


def test_local_argv_env_and_binding():
    plan = plan_job(_job(nprocs=1, layout=Layout(1, 1, 1)), preflight=False)
    argv = plan.argv
    assert argv[0].endswith("mpiexec") and os.path.dirname(argv[0]) == os.path.dirname(
        sys.executable
    )
    assert argv[1:3] == ["-n", "1"]
    assert "-bind-to" not in argv  # no --layout: placement left to the OS
    assert _genv(argv)["MPIR_CVAR_NOLOCAL"] == "0"
    assert argv[-3:-1] == ["-m", "cloudhpc.worker"]
    job_back = Job.from_json(argv[-1])
    assert job_back.app == "bench.pingpong" and job_back.nprocs == 1
    assert plan.variables["OMP_NUM_THREADS"] == "1" and plan.variables["NUMBA_NUM_THREADS"] == "1"


def test_layout_threads_are_exported_and_bound():
    plan = plan_job(_job(nprocs=1, layout=Layout(2, 1, 1), oversubscribe=True), preflight=False)
    assert plan.variables["NUMBA_NUM_THREADS"] == "2" and plan.variables["OMP_NUM_THREADS"] == "2"
    assert _genv(plan.argv)["NUMBA_NUM_THREADS"] == "2"
    assert "-bind-to" not in plan.argv  # oversubscribed ranks are not pinned
    if CORES >= 2:
        plan = plan_job(_job(nprocs=1, layout=Layout(2, 1, 1), layout_given=True), preflight=False)
        assert plan.argv[3:5] == ["-bind-to", "core:2"]


def test_vm_net_variables_reach_every_rank_on_argv():
    plan = plan_job(_job(env="vm-net", oversubscribe=True), preflight=False)
    g = _genv(plan.argv)
    assert g["MPIR_CVAR_NOLOCAL"] == "1" and g["FI_PROVIDER"] == "tcp"
    assert g["MPIR_CVAR_CH4_NETMOD"] == "ofi"


def test_oversubscription_needs_the_flag():
    with pytest.raises(CloudhpcError, match="pass --oversubscribe"):
        plan_job(_job(nprocs=CORES + 1, layout=Layout(1, CORES + 1, 1)), preflight=False)
    plan = plan_job(
        _job(nprocs=CORES + 1, layout=Layout(1, CORES + 1, 1), oversubscribe=True),
        preflight=False,
    )
    assert plan.argv[1:3] == ["-n", str(CORES + 1)]


def test_local_refuses_several_nodes():
    with pytest.raises(CloudhpcError, match="local launcher has one"):
        plan_job(
            _job(nprocs=2, layout=Layout(1, 1, 2), layout_given=True, oversubscribe=True),
            preflight=False,
        )


def test_hosts_argv_uses_ssh_and_host_slots():
    hosts = (Host("node1", 4), Host("node2", 4))
    plan = plan_job(
        _job(launcher="hosts", hosts=hosts, nprocs=6, layout=Layout(1, 6, 1)), preflight=False
    )
    argv = plan.argv
    assert argv[1:5] == ["-launcher", "ssh", "-hosts", "node1:4,node2:4"]
    assert argv[5:7] == ["-n", "6"]
    with pytest.raises(CloudhpcError, match="need 9 slots but hosts has 8"):
        plan_job(
            _job(launcher="hosts", hosts=hosts, nprocs=9, layout=Layout(1, 9, 1)), preflight=False
        )


def test_hosts_layout_places_m_per_node():
    hosts = (Host("a", 8), Host("b", 8), Host("c", 8))
    plan = plan_job(
        _job(launcher="hosts", hosts=hosts, nprocs=4, layout=Layout(2, 2, 2), layout_given=True),
        preflight=False,
    )
    assert "a:2,b:2" in plan.argv
    assert plan.argv[plan.argv.index("-bind-to") + 1] == "core:2"


def test_slurm_argv(monkeypatch):
    monkeypatch.setenv("SLURM_NTASKS", "8")
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", "2")
    plan = plan_job(
        _job(launcher="slurm", nprocs=8, layout=Layout(2, 4, 2), env="vm-net", layout_given=True),
        preflight=False,
    )
    a = plan.argv
    assert a[:4] == ["srun", "--mpi=pmi2", "--kill-on-bad-exit=1", "--ntasks=8"]
    assert "--nodes=2" in a and "--ntasks-per-node=4" in a and "--cpus-per-task=2" in a
    assert "--cpu-bind=cores" in a
    # the variables reach the ranks through srun's environment, named on its command line (a
    # value may hold a comma, which --export=NAME=VALUE cannot carry)
    export = next(x for x in a if x.startswith("--export="))
    assert export.split(",")[:1] == ["--export=ALL"]
    assert {"FI_PROVIDER", "NUMBA_NUM_THREADS"} <= set(export.split(","))
    assert plan.variables["FI_PROVIDER"] == "tcp" and plan.variables["NUMBA_NUM_THREADS"] == "2"
    with pytest.raises(CloudhpcError, match="pass --oversubscribe"):
        plan_job(_job(launcher="slurm", nprocs=17, layout=Layout(1, 17, 1)), preflight=False)


def test_direct_is_one_process_without_mpiexec():
    plan = plan_job(
        _job(launcher="direct", engine="serial", nprocs=1, layout=Layout(1, 1, 1)), preflight=False
    )
    assert plan.argv[0] == sys.executable and "mpiexec" not in " ".join(plan.argv[:3])
    with pytest.raises(CloudhpcError, match="runs one process"):
        plan_job(_job(launcher="direct", nprocs=2), preflight=False)


def test_parse_layout():
    assert parse_layout("2x4x3") == Layout(2, 4, 3)
    assert parse_layout("2x4x3").nprocs == 12
    for bad in ("2x4", "0x1x1", "axbxc", "1x1x1x1"):
        with pytest.raises(CloudhpcError, match="not TxMxN"):
            parse_layout(bad)


def test_cli_dry_run_prints_argv_and_env_and_starts_nothing(tmp_path):
    r = run_cli(
        "bench",
        "pingpong",
        "-n",
        "2",
        "--env",
        "vm-net",
        "--dry-run",
        "--results",
        str(tmp_path / "res"),
    )
    assert r.returncode == 0, r.stderr
    assert "export FI_PROVIDER=tcp" in r.stdout
    assert "mpiexec -n 2" in r.stdout and "cloudhpc.worker" in r.stdout
    assert not (tmp_path / "res").exists()


def test_cli_layout_and_n_must_agree(tmp_path):
    r = run_cli("bench", "pingpong", "-n", "3", "--layout", "1x2x1", "--dry-run")
    assert_one_line_error(r, "-n 3 does not match --layout 1x2x1")
    r = run_cli("bench", "pingpong", "--layout", "1x2x1", "--dry-run")
    assert r.returncode == 0 and "-n 2" in r.stdout


def test_a_p2p_benchmark_over_a_hosts_file_puts_one_rank_on_each_host(tmp_path):
    """OSU/IMB users run point-to-point benchmarks one rank per node: over hosts with 2 slots
    each, ranks 0 and 1 go to two hosts (filling the first host's slots measured its shared
    memory); --layout says otherwise; collectives and apps still fill the slots in order."""
    from cloudhpc.launch.options import LaunchOptions, make_job

    hosts = tmp_path / "three.hosts"
    hosts.write_text("a:2\nb:2\nc:2\n")

    def hosts_arg(app: str, nprocs: int = 2, layout: str | None = None) -> str:
        opts = LaunchOptions(nprocs=nprocs, hosts=str(hosts), layout=layout)
        argv = plan_job(make_job(app, {}, opts), preflight=False).argv
        return argv[argv.index("-hosts") + 1]

    for p2p in ("bench.pingpong", "bench.pingping", "bench.bw", "bench.bibw"):
        assert hosts_arg(p2p) == "a:1,b:1", p2p
    assert hosts_arg("bench.pingpong", 3) == "a:1,b:1,c:1"
    assert hosts_arg("bench.pingpong", 4) == "a:2,b:2,c:2"  # more ranks than hosts: slots
    assert hosts_arg("bench.pingpong", layout="1x2x1") == "a:2"
    assert hosts_arg("bench.coll") == hosts_arg("kmeans") == "a:2,b:2,c:2"
    r = run_cli("bench", "bw", "-n", "2", "--hosts", str(hosts), "--dry-run")
    assert r.returncode == 0 and "-hosts a:1,b:1 " in r.stdout, r.stdout


def test_every_benchmark_says_where_its_ranks_ran():
    from cloudhpc.cli.ranks import where_ranks_ran

    def run(**fields) -> dict:
        return {"id": "20260101T000000-bench.x-abc123", "app": "bench.x",
                "started_at": "2026-01-01T00:00:00+00:00", **fields}  # fmt: skip

    cluster = {"name": "c", "hosts": [{"name": f"h{i}", "link_bps": 10**8} for i in range(3)]}
    p2p = run(nprocs=2, nodes=["h0", "h1"], cluster=cluster,
              metrics={"rank_hosts": ["h0", "h1"], "across_hosts": True})  # fmt: skip
    assert where_ranks_ran(p2p) == (
        "ranks 0 and 1 ran across hosts: h0 and h1, over links capped at 100mbit (12.5 MB/s)"
    )
    local = run(nprocs=2, nodes=["vm"], metrics={"rank_hosts": ["vm", "vm"]})
    assert where_ranks_ran(local) == "ranks 0 and 1 ran on the same host (vm)"
    assert where_ranks_ran(run(nprocs=1, nodes=["vm"])) == "1 rank ran on one host (vm)"
    coll = run(nprocs=4, nodes=["a", "b"], metrics={"t_avg": 1.0})
    assert where_ranks_ran(coll) == "4 ranks ran across 2 hosts: a, b"


def test_an_empty_mpi_or_launcher_name_is_one_line(tmp_path):
    for flag in ("--mpi", "--launcher"):
        r = run_cli("bench", "pingpong", "-n", "2", flag, "", "--dry-run", "--json")
        assert_one_line_error(r, f"{flag} needs")
        assert r.returncode == 2 and r.stdout == ""


def test_a_job_that_names_no_launcher_or_mpi_gets_the_defaults():
    from cloudhpc.launch import LOCAL
    from cloudhpc.launch.runner import provisioned
    from cloudhpc.mpi import DEFAULT

    job = Job(app="bench.pingpong", nprocs=2, layout=Layout(1, 2, 1))
    assert (job.launcher, job.mpi) == ("", "")
    with provisioned(job, dry_run=True) as ready:
        assert (ready.launcher, ready.mpi) == (LOCAL, DEFAULT) == ("local", "mpich")
        plan = plan_job(ready, preflight=False)
    assert plan.launcher == "local" and plan.mpi == "mpich" and "-genv" in plan.argv
    assert Job.from_json(plan.argv[-1]).launcher == "local"
    assert plan_job(job, preflight=False).argv == plan.argv  # plan_job names them too


def test_an_environment_with_hosts_of_its_own_runs_with_the_cluster_launcher():
    from cloudhpc.launch.runner import provisioned

    job = _job(env="capped:1gbit", oversubscribe=True)
    with provisioned(job, dry_run=True) as ready:
        assert ready.launcher == "cluster" and len(ready.hosts) == 2 and ready.cluster
    with pytest.raises(CloudhpcError, match="not with the slurm launcher"):
        with provisioned(_job(env="capped:1gbit", launcher="slurm"), dry_run=True):
            pass
    with pytest.raises(CloudhpcError, match="drop --hosts"):
        with provisioned(_job(env="capped:1gbit", hosts=(Host("a", 2),)), dry_run=True):
            pass

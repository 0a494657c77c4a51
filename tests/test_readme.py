"""Every command in the README's ```sh blocks, run as written, in README order.

The commands run in one bash session (so `H=$(...)` carries to the next line) in a scratch
directory that looks like the top of a clone after `make demo`: `.venv` and `examples/` are the
repository's (symlinked), everything a command writes lands in the scratch directory. A command
must exit 0; some have their output checked for values (CHECKS). A line marked `# needs: root`
runs when the tests run as root (CI does) and is skipped otherwise; any other `# needs: ...`
(ssh hosts, slurm, a ray cluster) is skipped with that reason. `make` lines are checked with
`make -n` (the suite itself runs from `make test`, on a venv `make demo` would build)."""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
VENV = Path(sys.prefix)
COMMAND_TIMEOUT = 180
NEEDS = re.compile(r"#\s*needs:\s*(?P<what>[^#]+?)\s*$")
# the README's emulated cluster has a fixed name: two suites on one machine take turns
CLUSTER_LOCK = "/tmp/cloudhpc-readme-cluster.lock"
SLURM_DIR = "/tmp/cloudhpc-slurm-readme"  # under the same lock


@dataclass(frozen=True)
class Command:
    text: str
    line: int
    needs: str | None


def readme_commands(text: str) -> list[Command]:
    """Commands of the ```sh blocks: `\\`-continued lines joined, comments kept (bash ignores
    them), blank lines skipped."""
    commands: list[Command] = []
    in_block = False
    pending: list[str] = []
    start = 0
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            in_block = line.strip() == "```sh" if not in_block else False
            continue
        if not in_block or (not line.strip() and not pending):
            continue
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending.append(line.rstrip()[:-1])
            continue
        pending.append(line)
        joined = " ".join(part.strip() for part in pending)
        pending = []
        m = NEEDS.search(joined)
        commands.append(Command(joined, start, m.group("what") if m else None))
    return commands


COMMANDS = readme_commands(README.read_text())


def _is_root() -> bool:
    return os.geteuid() == 0 and shutil.which("ip") is not None


class Shell:
    """One bash session; each command's stdout and stderr go to files in `control`, its exit
    status and the shell's working directory after it back (the tour's first line moves it)."""

    def __init__(self, cwd: Path, control: Path, env: dict[str, str]):
        self.start = self.cwd = cwd
        self.control = control
        self.proc = subprocess.Popen(
            ["bash", "--norc", "--noprofile"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.count = 0

    def run(self, command: str, timeout: float) -> tuple[int, str, str]:
        self.count += 1
        n = self.count
        script = self.control / f"cmd{n}.sh"
        script.write_text(command + "\n")
        out, err = self.control / f"out{n}", self.control / f"err{n}"
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(
            f'{{ . {script} ; }} </dev/null >{out} 2>{err}; echo "@@rc $? $PWD"\n'
        )
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.proc.stdout], [], [], max(left, 0))
            if not ready:
                self.close()
                pytest.fail(f"timed out after {timeout} s: {command}\n{err.read_text()[-3000:]}")
            line = self.proc.stdout.readline()
            if not line:
                pytest.fail(f"the shell ended during: {command}")
            if line.startswith("@@rc "):
                _, rc, cwd = line.rstrip("\n").split(" ", 2)
                self.cwd = Path(cwd)
                return int(rc), out.read_text(), err.read_text()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()


CLONE_TOP = (".venv", "examples", "campaigns")  # what the scratch "clone" holds at the start


@pytest.fixture(scope="module")
def shell(tmp_path_factory):
    scratch = tmp_path_factory.mktemp("readme")  # stands for the top of a clone
    for name in CLONE_TOP:
        (scratch / name).symlink_to(VENV if name == ".venv" else ROOT / name)
    control = tmp_path_factory.mktemp("readme-control")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CLOUDHPC_CLUSTERS")}
    env["TMPDIR"] = str(tmp_path_factory.mktemp("readme-tmp"))  # the tour's `mktemp -d`
    env["PATH"] = ":".join(p for p in env.get("PATH", "").split(":") if p != str(VENV / "bin"))
    env["CLOUDHPC_CLUSTERS"] = str(tmp_path_factory.mktemp("readme-clusters"))
    # the README's one-node Slurm at a fixed place: one left by a killed suite is found there
    env["CLOUDHPC_SLURM"] = SLURM_DIR
    env["COLUMNS"] = "160"
    lock = open(CLUSTER_LOCK, "a")  # noqa: SIM115 - held for the module
    fcntl.flock(lock, fcntl.LOCK_EX)
    sh = Shell(scratch, control, env)
    try:
        yield sh
    finally:
        if _is_root():
            sh.run("cloudhpc cluster down tour 2>/dev/null; true", 60)
            sh.run("cloudhpc slurm down 2>/dev/null; true", 60)
        sh.close()
        lock.close()


def _record(stdout: str) -> dict:
    return json.loads(stdout)


def _files_counts(d: Path, out: str, err: str) -> None:
    for i in range(6):
        words = len((d / "examples" / "texts" / f"doc{i}.txt").read_text().split())
        assert (d / "counts" / f"doc{i}.txt.stdout").read_text().split()[0] == str(words)
    assert json.loads((d / "counts" / "summary.json").read_text())


def _hep(d: Path, out: str, err: str) -> None:
    import uproot

    mass = np.concatenate(
        [
            uproot.open(str(f))["events"]["mass"].array(library="np")
            for f in sorted((d / "examples").glob("events_*.root"))
        ]  # fmt: skip
    )
    counts = np.load(d / "mass.npz")["counts"]
    assert counts.tolist() == np.histogram(mass, bins=60, range=(0, 180))[0].tolist()


def _matmul(d: Path, out: str, err: str) -> None:
    a, b = np.load(d / "examples" / "A.npy"), np.load(d / "examples" / "B.npy")
    np.testing.assert_allclose(np.load(d / "C.npy"), a @ b, rtol=1e-12, atol=1e-12)


def _swg(d: Path, out: str, err: str) -> None:
    m = np.load(d / "D.npy")
    assert m.shape == (24, 24) and np.array_equal(m, m.T) and not m.diagonal().any()
    assert len((d / "D.names.txt").read_text().split()) == 24


def _pagerank(d: Path, out: str, err: str) -> None:
    pr = np.load(d / "pr.npy")
    assert pr.shape == (200,) and abs(pr.sum() - 1) < 1e-9


def _sssp(d: Path, out: str, err: str) -> None:
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra

    e = np.loadtxt(d / "examples" / "roads.csv", delimiter=",", skiprows=1)
    g = csr_matrix((e[:, 2], (e[:, 0].astype(int), e[:, 1].astype(int))), shape=(100, 100))
    np.testing.assert_allclose(np.load(d / "dist.npy"), dijkstra(g, directed=False, indices=0))


def _assemble(d: Path, out: str, err: str) -> None:
    stats = json.loads((d / "asm" / "stats.json").read_text())
    assert stats["n50"] >= 9000  # a 10 kbp genome in one contig or nearly


def _npb_all(d: Path, out: str, err: str) -> None:
    assert (out + err).count("SUCCESSFUL") >= 5


def _npb_json(d: Path, out: str, err: str) -> None:
    rec = _record(out)
    assert rec["verified"] is True and rec["env"]["name"] == "vm-net"


def _stencil_profile(d: Path, out: str, err: str) -> None:
    assert "MPI_Sendrecv" in out and " 400 " in out  # 200 steps x 2 Sendrecv per rank


def _stencil_callsites(d: Path, out: str, err: str) -> None:
    # built with -g: its Sendrecv calls resolve to their lines in examples/stencil.c
    assert "CALL SITES" in out
    assert any("Sendrecv" in ln and "stencil.c:" in ln for ln in out.splitlines()), out


def _campaign_status(d: Path, out: str, err: str) -> None:
    assert "campaign quick" in out and "8 ok, 0 failed, 0 missing of 8" in out, out


def _slurm_up(d: Path, out: str, err: str) -> None:
    assert "one-node Slurm started" in err or "already running" in err


def _salloc_pingpong(d: Path, out: str, err: str) -> None:
    rec = json.loads(max(d.glob("cloudhpc-results/*bench.pingpong*.json")).read_text())
    assert rec["launcher"] == "slurm" and rec["launch"]["slurm"]["job_id"]


def _salloc_cg(d: Path, out: str, err: str) -> None:
    assert "SUCCESSFUL" in out + err
    rec = json.loads(max(d.glob("cloudhpc-results/*-npb-*.json")).read_text())
    assert rec["verified"] is True and rec["launch"]["argv"][:2] == ["srun", "--mpi=pmix"]


def _submit(d: Path, out: str, err: str) -> None:
    assert out.strip().isdigit() and "submitted batch job" in err


def _jobs_wait(d: Path, out: str, err: str) -> None:
    assert "COMPLETED" in out and "cloudhpc npb cg" in out
    (entry,) = [json.loads(p.read_text()) for p in d.glob("cloudhpc-results/jobs/*/outcome.json")]
    assert entry["state"] == "COMPLETED"


def _capped_bw(d: Path, out: str, err: str) -> None:
    # one rank on each of two hosts (OSU/IMB), so the 100 Mbit/s link, not shared memory
    assert "ranks 0 and 1 ran across hosts" in err and "capped at 100mbit" in err, err
    rec = json.loads(max(d.glob("cloudhpc-results/*bench.bw*.json")).read_text())
    assert 6 < rec["rows"][0]["mbytes_per_sec"] < 13.2, rec["rows"]


def _quick_report(d: Path, out: str, err: str) -> None:
    # campaigns/quick.toml's report: ping-pong charted as latency (and bandwidth), EP as Mop/s,
    # each chart with a title on both axes (tests/test_report.py looks at them in Chromium)
    html = (d / "quick.html").read_text()
    assert re.findall(r'data-metric="([^"]+)"', html) == [
        "mops", "latency_us@0", "bandwidth_MBs@4K"
    ]  # fmt: skip
    titles = {
        json.loads(f'"{t}"') for t in re.findall(r'"title":\{"text":"((?:[^"\\]|\\.)*)"\}', html)
    }
    assert {"Mop/s total", "latency (µs) at 0 B", "env"} <= titles, titles


def _version(d: Path, out: str, err: str) -> None:
    from cloudhpc import __version__

    assert __version__ in out + err


CHECKS = {
    "cloudhpc --version": _version,
    "run files": _files_counts,
    "--out mass.npz": _hep,
    "run matmul": _matmul,
    "run swg examples/seqs.fa": _swg,
    "run pagerank": _pagerank,
    "run sssp": _sssp,
    "run assemble": _assemble,
    "npb all": _npb_all,
    "report --campaign quick": _quick_report,
    "bench bw -n 2 --hosts $H": _capped_bw,
    "npb ep --class W -n 2 --env vm-net --json": _npb_json,
    "./stencil 200": _stencil_profile,
    "profile show last --callsites": _stencil_callsites,
    "campaign status campaigns/quick.toml": _campaign_status,
    "cloudhpc slurm up": _slurm_up,
    "salloc -n 2 cloudhpc bench pingpong": _salloc_pingpong,
    "salloc -n 2 cloudhpc npb cg": _salloc_cg,
    "--submit --time": _submit,
    "cloudhpc jobs --wait": _jobs_wait,
}


def _check_for(command: str):
    for key, fn in CHECKS.items():
        if key in command:
            return fn
    return None


def test_readme_has_commands():
    assert len(COMMANDS) > 30
    keys = [k for k in CHECKS if not any(k in c.text for c in COMMANDS)]
    assert not keys, f"checks for commands no longer in the README: {keys}"


@pytest.mark.parametrize("cmd", COMMANDS, ids=[f"L{c.line}" for c in COMMANDS])
def test_readme_command(shell: Shell, cmd: Command):
    if cmd.text.startswith("make "):
        target = cmd.text.split()[1]
        r = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return
    if cmd.needs:
        if cmd.needs != "root":
            pytest.skip(f"needs {cmd.needs}")
        if not _is_root():
            pytest.skip("needs root (network namespaces)")
    rc, out, err = shell.run(cmd.text, COMMAND_TIMEOUT)
    assert rc == 0, f"README line {cmd.line}: {cmd.text}\nexit {rc}\n{err[-4000:]}"
    check = _check_for(cmd.text)
    if check:
        check(shell.cwd, out, err)


def test_the_tour_leaves_nothing_in_the_clone(shell: Shell):
    """After every command above (in README order), the clone's top directory holds what it held:
    the tour wrote in its own scratch directory."""
    if shell.count == 0:
        pytest.skip("no README command ran in this session")
    assert sorted(p.name for p in shell.start.iterdir()) == sorted(CLONE_TOP)
    assert shell.cwd != shell.start and (shell.cwd / "examples").is_symlink()


def test_the_readme_is_at_most_300_lines():
    assert len(README.read_text().splitlines()) <= 300


def test_the_clone_top_directory_holds_only_the_projects_files():
    """No test's or tour's output committed at the top (two slurm-*.out were), and what sbatch
    writes there by default is ignored."""
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    top = {name.split("/")[0] for name in tracked}
    assert not {n for n in top if n.startswith("slurm-")}, top
    assert top <= {
        ".ci", ".gitignore", "CHANGES.md", "Makefile", "README.md", "benchmarks", "campaigns",
        "docs", "examples", "pyproject.toml", "src", "tests",
    }, top  # fmt: skip
    ignored = subprocess.run(["git", "check-ignore", "-q", "slurm-123.out"], cwd=ROOT)
    assert ignored.returncode == 0, "slurm-*.out is not in .gitignore"


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_readme_refers_only_to_files_in_the_repository():
    text = README.read_text()
    assert "../" not in text and "http://" not in text and "https://" not in text
    anchors = {_anchor(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}
    for target in re.findall(r"\]\(([^)]+)\)", text):
        if target.startswith("#"):
            assert target[1:] in anchors, f"no heading for the link {target}"
        else:
            assert (ROOT / target).exists(), f"the link {target} names no file"
    named = set(re.findall(r"`((?:docs|benchmarks|examples|tests)/[\w./-]+|[A-Z]+\.md)`", text))
    assert {"docs/references.md", "benchmarks/RESULTS.md", "CHANGES.md"} <= named
    for path in named:
        assert (ROOT / path).exists(), f"README names {path}, which is not in the repository"


def test_the_docs_name_only_paths_that_exist():
    """Paths the README, docs/ and benchmarks/RESULTS.md name in backticks exist (CHANGES.md is
    history and may name what has gone)."""
    docs = [README, ROOT / "benchmarks" / "RESULTS.md", *sorted((ROOT / "docs").glob("*.md"))]
    pattern = re.compile(r"`((?:src/cloudhpc|tests|benchmarks|examples|docs)/[\w./-]*[\w/])`")
    for doc in docs:
        for path in pattern.findall(doc.read_text()):
            if "NAME" in path or "*" in path:  # a placeholder
                continue
            assert (ROOT / path).exists(), f"{doc.name} names {path}, which is not here"

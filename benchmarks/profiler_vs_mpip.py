"""cloudhpc's profiler against mpiP 3.5, side by side in one run.

1. Counts and bytes. Each program runs twice with the same arguments under the same mpiexec,
   once under each profiler (PMPI tools cannot be stacked), and every call both profilers see is
   compared rank by rank: calls, and the bytes mpiP reports (its "sent bytes", I/O and RMA
   bytes; cloudhpc's bytes are converted to mpiP's convention, one rule per call, see
   MPIP_SENT). Programs: IMB-MPI1 (built by build-imb.sh against the venv's MPICH), the NPB 3.4
   reference CG and IS (build-npb.sh, Debian's MPICH: both profilers are built against it for
   them), and cloudhpc's own NPB CG and SW-G (mpi4py).
2. Overhead, interleaved rounds, medians: an 8-byte ping-pong in C (IMB-MPI1 PingPong) plain,
   under cloudhpc's profiler with call sites (the default, depth 1) and without, and under mpiP
   (which walks the stack for its call sites); the same 8-byte round trip inside one process
   (profile_overhead.py's C program), alternating blocks through the profiler (MPI_Send/Recv) and
   around it (PMPI_Send/Recv), so both halves of each ratio see the machine at the same moment:
   the figure that holds on a busy machine; NPB CG class A at P = 2, the reference binary and
   cloudhpc's own, plain against profiled (NPB's own timed section, and the whole run's wall).

Builds are cached in ~/.cache/cloudhpc/bench/. Needs what `make bench` installs (gfortran,
Debian's MPICH, g++). The machine may be shared: every table states the load average; figures
measured while other work runs are not figures of record.

    .venv/bin/python benchmarks/profiler_vs_mpip.py [--quick] [--rounds N] [--out DIR | --save]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import load_average, load_note, machine, parse_args, write_json, write_text
from npb_mops import build_reference
from profile_overhead import build_program

from cloudhpc.job import Job, Layout
from cloudhpc.launch.runner import Monitor, plan_job, run_plan
from cloudhpc.mpi.mpich import Mpich
from cloudhpc.profile import callsites
from cloudhpc.profile.build import library_path
from cloudhpc.profile.model import read_rank_dir
from cloudhpc.profile.session import profiling_env

REFERENCE = Path(os.environ.get("CLOUDHPC_REFERENCE", "/work/shared/reference"))
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "cloudhpc" / "bench"
BIN = Path(sys.executable).parent
MPIEXEC = str(BIN / "mpiexec")
DEBIAN_BIN = Path("/usr/bin")


class DebianMpich(Mpich):
    """Debian's MPICH (/usr/bin/mpicc.mpich), which the NPB reference is built against: the
    profiling library must be built against the same library its ranks load."""

    name = "debian-mpich"
    title = "MPICH (Debian)"

    def tool(self, name: str) -> str:
        path = DEBIAN_BIN / f"{name}.mpich"
        return str(path if path.exists() else DEBIAN_BIN / name)

    def version(self) -> str:
        r = subprocess.run([str(DEBIAN_BIN / "mpichversion")], capture_output=True, text=True)
        return r.stdout.split(":")[-1].strip() if r.returncode == 0 else "?"


# ---- builds ------------------------------------------------------------------------------------
def _tree_hash(*paths: Path) -> str:
    h = hashlib.sha256()
    for root in paths:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for f in files:
            h.update(str(f.relative_to(root.parent)).encode() + f.read_bytes())
    return h.hexdigest()[:12]


def built(name: str, script: str, tree: str, args: list[str], product: str) -> Path:
    """OUT of `REFERENCE/script OUT ARGS`, built once per script, sources and arguments."""
    sh = REFERENCE / script
    if not sh.is_file():
        raise SystemExit(f"profiler_vs_mpip.py: {sh} is not here (set CLOUDHPC_REFERENCE)")
    key = (
        _tree_hash(sh, REFERENCE / tree)
        + "-"
        + hashlib.sha256(" ".join(args).encode()).hexdigest()[:8]
    )
    out = CACHE / f"{name}-{key}"
    if (out / product).exists():
        return out
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=CACHE))
    print(f"building {name}: {sh} {tmp} {' '.join(args)}", flush=True)
    try:
        r = subprocess.run(["bash", str(sh), str(tmp), *args])
        if r.returncode != 0:
            raise SystemExit(f"building {name} failed (exit {r.returncode})")
        shutil.rmtree(out, ignore_errors=True)
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


# ---- running under each profiler -----------------------------------------------------------------
def genv(env: dict[str, str]) -> list[str]:
    return [a for k, v in sorted(env.items()) for a in ("-genv", k, v)]


def run(argv: list[str], nprocs: int, env: dict[str, str], cwd: Path) -> tuple[str, float]:
    cmd = [MPIEXEC, "-n", str(nprocs), *genv(env), *argv]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=3600)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return r.stdout, wall


def ours_env(lib: Path, d: Path, depth: int = 1) -> dict[str, str]:
    return {"LD_PRELOAD": str(lib), "CLOUDHPC_PROFILE_DIR": str(d),
            "CLOUDHPC_PROFILE_CALLSITE_DEPTH": str(depth)}  # fmt: skip


def mpip_env(lib: Path, d: Path) -> dict[str, str]:
    return {"LD_PRELOAD": str(lib), "MPIP": f"-e -f {d}"}  # -e: exact sums in the report


Table = dict[int, dict[str, dict[str, float]]]  # rank -> MPI_Call -> {"count", "sent", ...}


def ours_table(d: Path, nprocs: int) -> Table:
    """cloudhpc's counts and bytes per rank and call from the rank files in `d`."""
    prof = read_rank_dir(d, nprocs)
    callsites.resolve(prof)
    out: Table = {}
    for rp in prof.ranks:
        out[rp.rank] = {
            name: {"count": c.count, "sent": c.bytes_sent, "recv": c.bytes_recv,
                   "written": c.bytes_written, "read": c.bytes_read}
            for name, c in rp.calls.items()
        }  # fmt: skip
    return out


MPIP_SECTIONS = {"Callsite Time statistics": "count", "Callsite Message Sent statistics": "sent",
                 "Callsite I/O statistics": "io", "Callsite RMA statistics": "rma"}  # fmt: skip


def mpip_table(d: Path) -> Table:
    """mpiP's counts (Callsite Time statistics) and byte sums (Message Sent, I/O, RMA) per rank
    and call, from the one report in `d`."""
    (report,) = d.glob("*.mpiP")
    out: Table = {}
    section = None
    for line in report.read_text().splitlines():
        if line.startswith("@---"):
            section = next((v for k, v in MPIP_SECTIONS.items() if k in line), None)
            continue
        parts = line.split()
        if section is None or len(parts) < 5 or parts[0] == "Name" or not parts[2].isdigit():
            continue  # headings, blank lines and the "*" rows of all ranks
        name, rank = "MPI_" + parts[0], int(parts[2])
        row = out.setdefault(rank, {}).setdefault(name, {})
        value = float(parts[3]) if section == "count" else float(parts[-1])
        row[section] = row.get(section, 0) + value
    return out


# mpiP sizes a call by one count and datatype argument (make-wrappers.py): what cloudhpc's bytes
# of that call are in its convention. Calls mpiP does not size are compared by count only.
def _sent(c):
    return c["sent"]


MPIP_SENT = {
    **{
        f"MPI_{n}": _sent
        for n in (
            "Send",
            "Ssend",
            "Rsend",
            "Bsend",
            "Isend",
            "Issend",
            "Irsend",
            "Ibsend",
            "Sendrecv",
            "Sendrecv_replace",
            "Allreduce",
            "Iallreduce",
            "Reduce",
            "Ireduce",
            "Scan",
            "Iscan",
            "Allgather",
            "Iallgather",
            "Allgatherv",
            "Iallgatherv",
            "Gather",
            "Igather",
            "Gatherv",
            "Igatherv",
        )
    },  # fmt: skip
    # mpiP: the buffer's size on every rank; cloudhpc: sent by the root, received by the others
    "MPI_Bcast": lambda c: c["sent"] + c["recv"],
    "MPI_Ibcast": lambda c: c["sent"] + c["recv"],
    # mpiP: the send count, one block; cloudhpc: every block this rank sends
    "MPI_Alltoall": lambda c, p: c["sent"] / p,
    "MPI_Ialltoall": lambda c, p: c["sent"] / p,
    # mpiP: sendcount x sendtype on every rank (one block: what each rank receives)
    "MPI_Scatter": lambda c: c["recv"],
    "MPI_Iscatter": lambda c: c["recv"],
}
MPIP_IO = {f"MPI_File_{n}": (lambda c: c["read"] + c["written"])
           for n in ("read", "read_all", "read_at", "write", "write_all", "write_at")}  # fmt: skip
MPIP_RMA = {"MPI_Put": _sent, "MPI_Accumulate": _sent}


def mpip_bytes(call: str, c: dict, nprocs: int) -> tuple[str, float] | None:
    """(mpiP's section, cloudhpc's bytes in mpiP's convention) or None: mpiP does not size it."""
    for section, rules in (("sent", MPIP_SENT), ("io", MPIP_IO), ("rma", MPIP_RMA)):
        rule = rules.get(call)
        if rule is not None:
            args = (c, nprocs) if rule.__code__.co_argcount == 2 else (c,)
            return section, rule(*args)
    return None


# Polling calls: how often a program calls them depends on when messages arrive, so two runs
# differ; compared, but not counted as differences between the profilers.
POLLING = {"MPI_Iprobe", "MPI_Improbe", "MPI_Test", "MPI_Testany", "MPI_Testall", "MPI_Testsome"}


def compare(name: str, nprocs: int, ours: Table, mpip: Table) -> dict:
    """Rank by rank, every call both profilers saw: counts, and bytes where mpiP sizes it."""
    rows, only_ours, only_mpip = [], set(), set()
    for r in range(nprocs):
        a, b = ours.get(r, {}), mpip.get(r, {})
        only_ours |= set(a) - set(b)
        only_mpip |= set(b) - set(a)
        for call in sorted(set(a) & set(b)):
            row = {"program": name, "rank": r, "call": call, "count": a[call]["count"],
                   "mpip_count": int(b[call].get("count", 0))}  # fmt: skip
            sized = mpip_bytes(call, a[call], nprocs)
            if sized is not None:
                section, value = sized
                row.update(bytes=value, mpip_bytes=b[call].get(section, 0.0), section=section)
            rows.append(row)
    polling = [x for x in rows if x["call"] in POLLING]
    rows = [x for x in rows if x["call"] not in POLLING]
    counts_equal = sum(x["count"] == x["mpip_count"] for x in rows)
    sized = [x for x in rows if "bytes" in x]
    bytes_equal = sum(x["bytes"] == x["mpip_bytes"] for x in sized)
    return {
        "program": name,
        "nprocs": nprocs,
        "compared": len(rows),
        "counts_equal": counts_equal,
        "bytes_compared": len(sized),
        "bytes_equal": bytes_equal,
        "only_cloudhpc": sorted(only_ours),
        "only_mpip": sorted(only_mpip),
        "mismatches": [
            x
            for x in rows
            if x["count"] != x["mpip_count"] or ("bytes" in x and x["bytes"] != x["mpip_bytes"])
        ],  # fmt: skip
        "rows": rows,
        "polling": polling,
    }


def profile_c(name: str, argv: list[str], nprocs: int, ours_lib: Path, mpip_lib: Path,
              cwd: Path) -> dict:  # fmt: skip
    """One C program under each profiler; the comparison."""
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        run(argv, nprocs, ours_env(ours_lib, Path(a)), cwd)
        run(argv, nprocs, mpip_env(mpip_lib, Path(b)), cwd)
        return compare(name, nprocs, ours_table(Path(a), nprocs), mpip_table(Path(b)))


def cloudhpc_cli(*args: str, env: dict[str, str] | None = None) -> tuple[dict | None, str, float]:
    """`cloudhpc ARGS --json`: (its record or None if it failed, stderr, wall seconds). Under
    `profile` --json goes before --app, whose parameters end the line."""
    json_at = 1 if args[0] == "profile" else len(args)
    cmd = [sys.executable, "-m", "cloudhpc", *args[:json_at], "--json", *args[json_at:]]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    wall = time.perf_counter() - t0
    return (json.loads(r.stdout) if r.returncode == 0 else None), r.stderr, wall


def profile_app(name: str, run_args: list[str], app: str, params: list[str], nprocs: int,
                mpip_lib: Path) -> dict:  # fmt: skip
    """cloudhpc's own app (mpi4py) profiled by `cloudhpc profile --app` and run with mpiP
    preloaded (mpiP's report is written at MPI_Finalize even if the run fails after it)."""
    with tempfile.TemporaryDirectory() as res, tempfile.TemporaryDirectory() as b:
        rec, err, _ = cloudhpc_cli("profile", "-n", str(nprocs), "--results", res, "--app", app,
                                   *params)  # fmt: skip
        if rec is None:
            raise SystemExit(f"cloudhpc profile --app {app} failed:\n{err[-2000:]}")
        d = Path(res) / f"{rec['id']}.files" / "ranks"
        ours = ours_table(d, nprocs)
        rec2, err2, _ = cloudhpc_cli(
            *run_args,
            "-n",
            str(nprocs),
            "--results",
            res,
            env={"LD_PRELOAD": str(mpip_lib), "MPIP": f"-e -f {b}"},
        )
        if not list(Path(b).glob("*.mpiP")):
            raise SystemExit(f"mpiP wrote no report for {name}:\n{err2[-2000:]}")
        out = compare(name, nprocs, ours, mpip_table(Path(b)))
        out["mpip_run"] = "ok" if rec2 is not None else _failure(err2)
        return out


def _failure(stderr: str) -> str:
    m = re.search(r"EXIT STRING: (.*)|exit code (\d+)", stderr)
    return f"failed after writing its report ({m.group(0) if m else 'see stderr'})"


# ---- overhead ------------------------------------------------------------------------------
def imb_pingpong(imb: Path, env: dict[str, str], iters: int, cwd: Path) -> float:
    """IMB-MPI1 PingPong's t[usec] at 8 bytes (half a round trip)."""
    out, _ = run([str(imb), "PingPong", "-msglog", "3:3", "-iter", str(iters), "-iter_policy",
                  "off", "-time", "1000"], 2, env, cwd)  # fmt: skip
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "8" and parts[1].isdigit():
            return float(parts[2])
    raise SystemExit(f"no 8-byte row in IMB's output:\n{out[-1500:]}")


def ab_blocks(exe: Path, iters: int, env: dict[str, str], cwd: Path) -> list[tuple[float, float]]:
    """profile_overhead.py's "ab" mode: (around, through) the profiler, usec per half round trip,
    per block (mpiP's own lines on stdout are left out)."""
    out, _ = run([str(exe), "ab", str(iters), "8"], 2, env, cwd)
    pairs = [ln.split() for ln in out.splitlines()]
    return [
        (float(a), float(b)) for a, b in (x for x in pairs if len(x) == 2 and FLOAT.match(x[0]))
    ]


FLOAT = re.compile(r"^\d+\.\d+$")


def npb_time(out: str) -> float:
    m = re.search(r"Time in seconds\s*=\s*([\d.]+)", out)
    if not m or "SUCCESSFUL" not in out:
        raise SystemExit(f"the NPB reference did not verify:\n{out[-1500:]}")
    return float(m.group(1))


def interleaved(variants: dict, rounds: int) -> dict[str, list]:
    """Each variant once per round, the order rotating each round: {name: [result, ...]}."""
    names, out = list(variants), {n: [] for n in variants}
    for k in range(rounds):
        for n in names[k % len(names) :] + names[: k % len(names)]:
            out[n].append(variants[n]())
    return out


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def paired(xs: list[float], base: list[float]) -> float:
    """The median of the rounds' ratios: each against the base measured in the same round."""
    return med([x / b for x, b in zip(xs, base, strict=True)])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="fewer rounds and iterations, NPB class S for the counts")  # fmt: skip
    ap.add_argument("--rounds", type=int, default=None, help="overhead rounds (default 7; 3 quick)")
    ap.add_argument("--skip-apps", action="store_true", help="leave out cloudhpc's own apps")
    args = parse_args(ap)
    rounds = args.rounds or (3 if args.quick else 7)
    iters = 5000 if args.quick else 40000
    for tool in ("mpicc.mpich", "mpif90", "gfortran", "g++"):
        if shutil.which(tool) is None:
            print(f"profiler_vs_mpip.py: needs {tool}: run `make bench` first", file=sys.stderr)
            raise SystemExit(2)
    deb = DebianMpich()
    work = Path(tempfile.mkdtemp(prefix="cloudhpc-vs-mpip-"))
    try:
        mpip_venv = built("mpip-venv", "build-mpip.sh", "mpip", [str(BIN)], "lib/libmpiP.so")
        mpip_deb = built(
            "mpip-debian", "build-mpip.sh", "mpip", [str(DEBIAN_BIN)], "lib/libmpiP.so"
        )
        imb = built("imb", "build-imb.sh", "imb", [str(BIN), "IMB-MPI1"], "bin/IMB-MPI1")
        imb = imb / "bin" / "IMB-MPI1"
        mpip_venv, mpip_deb = mpip_venv / "lib/libmpiP.so", mpip_deb / "lib/libmpiP.so"
        ours_venv, ours_deb = library_path(), library_path(deb)
        count_cls = "S" if args.quick else "A"
        npb_counts = build_reference(count_cls, ["cg", "is"])
        npb_a = build_reference("A", ["cg"]) if count_cls != "A" else npb_counts
        print(f"load average {load_average():.2f}; counts and bytes", flush=True)

        # ---- 1. counts and bytes
        imb_argv = [str(imb), "-msglog", "0:12" if args.quick else "0:16", "-iter", "50",
                    "-iter_policy", "off", "-time", "1000", "-npmin", "2"]  # fmt: skip
        comparisons = [
            profile_c("IMB-MPI1 (all MPI-1 benchmarks)", imb_argv, 2, ours_venv, mpip_venv, work),
            profile_c(f"NPB 3.4 CG class {count_cls} (Fortran)",
                      [str(npb_counts / f"cg.{count_cls}.x")], 2, ours_deb, mpip_deb, work),
            profile_c(f"NPB 3.4 IS class {count_cls} (C)",
                      [str(npb_counts / f"is.{count_cls}.x")], 2, ours_deb, mpip_deb, work),
        ]  # fmt: skip
        if not args.skip_apps:
            cls = "S" if args.quick else "A"
            comparisons.append(profile_app(
                f"cloudhpc npb cg class {cls} (mpi4py)", ["npb", "cg", "--class", cls], "npb",
                ["kernel=cg", f"class={cls}"], 2, mpip_venv))  # fmt: skip
            out = work / "swg.npy"
            comparisons.append(profile_app(
                "cloudhpc run swg --generate 300 (mpi4py, MPI-IO)",
                ["run", "swg", "--generate", "300", "--out", str(out)], "swg",
                ["generate=300", f"out={out}"], 2, mpip_venv))  # fmt: skip

        # ---- 2. overhead
        print(f"load average {load_average():.2f}; overhead, {rounds} rounds", flush=True)
        sites = work / "sites"
        sites.mkdir()
        pp = interleaved({
            "plain": lambda: imb_pingpong(imb, {}, iters, work),
            "cloudhpc": lambda: imb_pingpong(imb, ours_env(ours_venv, sites), iters, work),
            "cloudhpc, no call sites": lambda: imb_pingpong(imb, ours_env(ours_venv, sites, 0),
                                                            iters, work),
            "mpiP": lambda: imb_pingpong(imb, mpip_env(mpip_venv, sites), iters, work),
        }, rounds)  # fmt: skip
        ab_exe = build_program(work)
        ab = {}
        for k, env in (("cloudhpc", ours_env(ours_venv, sites)),
                       ("cloudhpc, no call sites", ours_env(ours_venv, sites, 0)),
                       ("mpiP", mpip_env(mpip_venv, sites))):  # fmt: skip
            blocks = [b for _ in range(rounds) for b in ab_blocks(ab_exe, iters, env, work)]
            ab[k] = {"bypass_usec": med([x for x, _ in blocks]),
                     "wrapped_usec": med([y for _, y in blocks]),
                     "ratio": med([y / x for x, y in blocks]), "blocks": len(blocks)}  # fmt: skip
        cg = str(npb_a / "cg.A.x")

        def ref(env):
            out, wall = run([cg], 2, env, work)
            return npb_time(out), wall

        ref_cg = interleaved({
            "plain": lambda: ref({}),
            "cloudhpc": lambda: ref(ours_env(ours_deb, sites)),
            "mpiP": lambda: ref(mpip_env(mpip_deb, sites)),
        }, rounds)  # fmt: skip
        own_cg = {}
        if not args.skip_apps:

            def own(profiled: bool):
                """NPB's timed section and the job's in-job total (MPI_Init to finalize), the
                same job through the same launcher, with the profiler preloaded or not."""
                job = Job(app="npb", params={"kernel": "cg", "class": "A", "corrupt": False},
                          nprocs=2, layout=Layout(1, 2, 1))  # fmt: skip
                with tempfile.TemporaryDirectory() as ranks:
                    env = profiling_env(Path(ranks), False, None, 1, True) if profiled else {}
                    outcome = run_plan(plan_job(job, None, env), Monitor(), None)
                if outcome.returncode != 0 or outcome.result is None:
                    raise SystemExit(f"npb cg failed: {outcome.stderr.strip()[-1500:]}")
                res = outcome.result
                return float(res["body"]["metrics"]["time_s"]), float(res["timings"]["total_s"])

            own_cg = interleaved({"plain": lambda: own(False), "cloudhpc": lambda: own(True)},
                                 rounds)  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(args, comparisons, pp, ab, ref_cg, own_cg, rounds, iters)


def report(args, comparisons, pp, ab, ref_cg, own_cg, rounds, iters) -> None:
    lines = [
        "# cloudhpc's profiler against mpiP 3.5",
        "",
        f"Machine: {machine()}.",
        load_note(),
        "",
        f"Command: `.venv/bin/python benchmarks/profiler_vs_mpip.py"
        f"{' --quick' if args.quick else ''}{_rounds(args)}`",
        "",
        "## Counts and bytes per rank and call, against mpiP on the same program",
        "",
        "Every call both profilers report, rank by rank: calls, and bytes where mpiP sizes "
        "the call (its sent, I/O and RMA bytes; cloudhpc's bytes in mpiP's convention).",
        "",
        "| program | P | calls x ranks compared | counts equal | bytes compared | bytes "
        "equal | only cloudhpc sees | only mpiP sees |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in comparisons:
        lines.append(
            f"| {c['program']} | {c['nprocs']} | {c['compared']} | {c['counts_equal']} | "
            f"{c['bytes_compared']} | {c['bytes_equal']} | {_names(c['only_cloudhpc'])} | "
            f"{_names(c['only_mpip'])} |"
        )
    notes = [c for c in comparisons if c.get("mpip_run", "ok") != "ok"]
    for c in notes:
        lines.append(f"\nmpiP on {c['program']}: {c['mpip_run']}.")
    bad = [m for c in comparisons for m in c["mismatches"]]
    if bad:
        lines += ["", "Differences:", "", "| program | rank | call | count | mpiP | bytes | mpiP "
                  "bytes |", "|---|---|---|---|---|---|---|"]  # fmt: skip
        for m in bad[:60]:
            lines.append(
                f"| {m['program']} | {m['rank']} | {m['call']} | {m['count']} | "
                f"{m['mpip_count']} | {m.get('bytes', '')} | {m.get('mpip_bytes', '')} |"
            )
    lines += [
        "",
        f"## Overhead ({rounds} interleaved rounds: medians, and x plain as the median of each "
        "round's ratio to the plain run of the same round)",
        "",
        f"IMB-MPI1 PingPong, 8 bytes, {iters} iterations, 2 ranks (t[usec], half a round trip):",
        "",
        "| variant | usec | x plain | rounds |",
        "|---|---|---|---|",
    ]
    for k, v in pp.items():
        ratio = paired(v, pp["plain"])
        rounds_text = ", ".join(f"{x:.2f}" for x in v)
        lines.append(f"| {k} | {med(v):.3f} | {ratio:.3f} | {rounds_text} |")
    lines += [
        "",
        "The same 8-byte round trip in one process, blocks through the profiler and around it "
        "(PMPI_) alternating (half a round trip):",
        "",
        "| profiler | around it, usec | through it, usec | ratio (median of block pairs) "
        "| block pairs |",
        "|---|---|---|---|---|",
    ]
    for k, v in ab.items():
        lines.append(f"| {k} | {v['bypass_usec']:.3f} | {v['wrapped_usec']:.3f} | "
                     f"{v['ratio']:.3f} | {v['blocks']} |")  # fmt: skip
    lines += ["", "NPB CG class A, P = 2 (NPB's timed section; the whole run: the reference's "
              "mpiexec wall, cloudhpc's in-job total from MPI_Init to finalize):", "",
              "| program | variant | time s | x plain | fastest x plain | total s | x plain |",
              "|---|---|---|---|---|---|---|"]  # fmt: skip
    for prog, res in (("NPB 3.4 reference (Fortran)", ref_cg), ("cloudhpc npb cg", own_cg)):
        if not res:
            continue
        t0, w0 = [x[0] for x in res["plain"]], [x[1] for x in res["plain"]]
        for k, v in res.items():
            t, w = [x[0] for x in v], [x[1] for x in v]
            fastest = min(t) / min(t0)  # load only adds time: the fastest rounds, compared
            lines.append(f"| {prog} | {k} | {med(t):.3f} | {paired(t, t0):.3f} | {fastest:.3f} | "
                         f"{med(w):.2f} | {paired(w, w0):.3f} |")  # fmt: skip
    write_text("profiler_vs_mpip.md", "\n".join(lines) + "\n")
    write_json("profiler_vs_mpip", {
        "args": vars(args), "comparisons": comparisons, "pingpong_usec": pp,
        "pingpong_in_process": ab,
        "npb_reference_cg": ref_cg, "cloudhpc_cg": own_cg, "machine": machine(),
    })  # fmt: skip
    print("\n".join(lines))


def _rounds(args) -> str:
    return f" --rounds {args.rounds}" if args.rounds else ""


def _names(names: list[str]) -> str:
    short = [n.removeprefix("MPI_") for n in names]
    return (
        ", ".join(short[:12]) + (f" and {len(short) - 12} more" if len(short) > 12 else "") or "-"
    )


if __name__ == "__main__":
    main()

"""The seeds' own systems side by side with cloudhpc: Hadoop MapReduce 3.4.1 and Giraph 1.3.0.

Seed 000 compares Hadoop, CGL-MapReduce, DryadLINQ and MPI on k-means (Figs 12.7 and 12.12:
time against the number of 2-D points) and the HEP histogram; seed 002 runs graph work on
Giraph. Here the same jobs run on the real systems (benchmarks/peers/hadoop, a Maven project
that `make bench` builds) and on cloudhpc, on the same inputs, in interleaved rounds:

- k-means, K = 16, 2-D points from cloudhpc's generator (seed 1) over growing N, the same
  k-means++ initial centers for everyone, a fixed number of iterations (no early stop), 2-way
  parallel everywhere:
  Hadoop local mode (LocalJobRunner, 2 map slots) and pseudo-distributed (MiniDFS + MiniYARN in
  one JVM, one NodeManager with room for the ApplicationMaster and 2 task containers): one
  MapReduce job per iteration, the points re-read from the file system by every job (2 map
  tasks, one per input file), the centers passed in the job's configuration;
  PySpark MLlib (`KMeans.train`, local[2], `initialModel`);
  cloudhpc's map-reduce with spill run the Hadoop way (_kmeans_mr_spill.py: one `map_reduce`
  call per iteration, points re-read, every map output spilled to disk);
  cloudhpc's iterative map-reduce (`run kmeans --model mapreduce`, points cached), its MPI/SPMD
  model (`--model spmd`), and the iterative model on Ray (`--engine ray`).
- The HEP histogram (mass, 100 bins over [0, 200] GeV) of synthetic events (hep's generator):
  Hadoop (map: fill, combine and reduce: add) vs `run hep` on the same events.
- Map-only file processing (CAP3-style, `gzip -n -c FILE` per file): Hadoop (NLineInputFormat,
  0 reduces) vs `run files`.
- PageRank on R-MAT graphs (cloudhpc's generator, directed, damping 0.85, a fixed number of
  iterations, dangling rank spread uniformly): Giraph (local mode, one worker with 2 compute
  threads: Giraph refuses a second worker on the LocalJobRunner) vs `run pagerank` (bsp, 2 ranks).

Inputs: cloudhpc reads the .npy files; Hadoop reads the same numbers as text (one point or event
per line, each value printed with 17 significant digits, which parses back to the same double);
Spark's driver reads the .npy; Giraph reads an adjacency list (one line per vertex, parallel edges
repeated) of the edges `run pagerank --generate` makes. Answers: every system's k-means centers
are compared with a serial NumPy Lloyd from the same initial centers (max |c - c_ref| / max
|c_ref| <= 1e-9), the histograms' counts must equal numpy.histogram's exactly, the map-only
outputs must be byte-equal (and decompress to their input), and the PageRank values must equal
scipy.sparse power iteration's and cloudhpc's within 1e-9 relative.

Timed (the runtimes' start-up outside, reported apart): Hadoop: the jobs, from the first job's
submission to the last job's output read back (HDFS upload and cluster start apart); Spark:
reading the points and training (session start apart); cloudhpc: the run record's `total_s`
(reading the input, numba loading its kernels, the work, writing the result; Ray's start apart);
the spill script: its iterations; PageRank: seconds per iteration (Giraph: supersteps 1..I by the
master's clock; cloudhpc: the record's `per_iteration_s`). Medians over --rounds. Before the
rounds every cloudhpc step runs once untimed at the smallest size (the first run after an install
compiles numba's kernels into their on-disk caches, which later runs load).

    make bench      # once: builds the Maven project (Hadoop, Giraph jars from Maven Central)
    .venv/bin/python benchmarks/seed_peers.py [--quick] [--check] [--rounds 2]

`--check` also runs cloudhpc's own --check in the first round, exits 1 if any answer differs,
and prints, last, one JSON line with the headline times and `equal` per workload.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from common import (
    ROOT,
    load_average,
    machine,
    parse_args,
    require_module,
    require_program,
    run_record,
    save_figure,
    total_s,
    update_results_md,
    write_json,
    write_text,
)

from cloudhpc.apps.arrays import block_range
from cloudhpc.apps.graphs.generate import generate_edges
from cloudhpc.apps.hep.readers import BRANCHES, synthetic_events, write_events
from cloudhpc.apps.kmeans.data import generate_points
from cloudhpc.apps.kmeans.reference import kmeanspp_reference, lloyd_reference
from cloudhpc.apps.pagerank.reference import pagerank_scipy, transition

K, D, SEED, SLOTS, DAMPING = 16, 2, 1, 2, 0.85
RTOL = 1e-9
HIST_BRANCH, HIST_BINS, HIST_RANGE = "mass", 100, (0.0, 200.0)
FILES_CMD = ["gzip", "-n", "-c", "{input}"]
PEERS = ROOT / "benchmarks" / "peers" / "hadoop"
BENCH = Path(__file__).resolve().parent
# Hadoop 3.4's web apps (Guice's cglib, in the JobHistoryServer and the ApplicationMaster) reach
# into java.lang by reflection, which Java 17 refuses unless it is opened to them
HADOOP_JAVA_FLAGS = ["--add-opens=java.base/java.lang=ALL-UNNAMED"]

FULL = {
    "sizes": [100_000, 1_000_000, 4_000_000],
    # 3, not 5: one MiniYARN job costs about 25 s on 2 busy cores, whatever its input; 2 rounds
    # of 3 sizes x 3 iterations keep the full mode near 15 minutes
    "iterations": 3,
    "events": 2_000_000,
    "event_files": 8,
    "graphs": [(100_000, 1_000_000), (1_000_000, 10_000_000)],
    "pr_iterations": 20,
    "rounds": 2,
}
QUICK = {
    "sizes": [10_000, 50_000],
    "iterations": 2,
    "events": 100_000,
    "event_files": 4,
    "graphs": [(10_000, 80_000)],
    "pr_iterations": 5,
    "rounds": 1,
}
KMEANS_SYSTEMS = {
    "hadoop-local": "Hadoop 3.4.1 local mode (2 map slots)",
    "hadoop-mini": "Hadoop 3.4.1 MiniDFS + MiniYARN (2 task slots)",
    "spark": "PySpark MLlib, local[2]",
    "cloudhpc-spill": "cloudhpc map-reduce with spill, one job per iteration (2 ranks)",
    "cloudhpc-iterative": "cloudhpc iterative map-reduce (2 ranks)",
    "cloudhpc-spmd": "cloudhpc MPI/SPMD (2 ranks)",
    "ray": "cloudhpc iterative map-reduce on Ray (2 workers)",
}
SKIPPABLE = ("hadoop-local", "hadoop-mini", "giraph", "spark", "ray", "spill")


# ---------------------------------------------------------------------------------------------
# Java peers


def java_home() -> Path:
    """The JDK that runs the peers: $JAVA_HOME, else the `java` on PATH; it must be 17..23."""
    env = os.environ.get("JAVA_HOME")
    java = Path(env) / "bin" / "java" if env else None
    if java is None or not java.exists():
        java = Path(require_program("java", "Java 17 (Hadoop 3.4.1 and Giraph 1.3.0)"))
    home = Path(os.path.realpath(java)).parents[1]
    out = subprocess.run([str(home / "bin" / "java"), "-version"], capture_output=True, text=True)
    m = re.search(r'version "(\d+)', out.stderr)
    major = int(m.group(1)) if m else 0
    if not 11 <= major <= 23:
        raise SystemExit(
            f"seed_peers.py: {home} is Java {major or '?'}: Hadoop 3.4.1 and Giraph 1.3.0 run on "
            "Java 11-23 (on Java 24 and later javax.security.auth.Subject.getSubject throws "
            "UnsupportedOperationException in Hadoop's UserGroupInformation); set JAVA_HOME to a "
            "Java 17"
        )
    return home


def peer_classpath(module: str, instead: str) -> str:
    """The module's jar and its runtime classpath (written by `make bench`'s Maven build)."""
    target = PEERS / module / "target"
    jar = target / f"seed-peers-{module}-1.0.jar"
    cp = target / "classpath.txt"
    if not jar.exists() or not cp.exists():
        print(
            f"seed_peers.py: needs the {module} peer built by Maven ({jar.relative_to(ROOT)}): "
            f"run `make bench` first, or leave it out with {instead}",
            file=sys.stderr,
        )
        raise SystemExit(2)
    return f"{jar}:{cp.read_text().strip()}"


def run_java(home: Path, cp: str, main: str, args: list[str], log: Path, flags=()) -> list[dict]:
    """One JVM (in its own process group, ended with everything in it on any exit); its JSON
    lines. Its log (stderr) goes to `log`; a failure shows the log's last lines."""
    cmd = [str(home / "bin" / "java"), *flags, "-cp", cp, main, *args]
    env = {**os.environ, "JAVA_HOME": str(home)}
    with open(log, "ab") as err:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=err, env=env, start_new_session=True
        )
        try:
            out, _ = proc.communicate()
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    if proc.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-25:])
        raise SystemExit(f"{main} failed (exit {proc.returncode}):\n{tail}")
    return [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]


# ---------------------------------------------------------------------------------------------
# inputs


def write_text_rows(path: Path, rows: np.ndarray) -> None:
    """One row per line, 17 significant digits (parses back to the same double)."""
    np.savetxt(path, rows, fmt="%.17g")


class Inputs:
    """Every input of the run (in a temporary directory) and the references."""

    def __init__(self, tmp: Path, cfg: dict) -> None:
        self.tmp, self.cfg = tmp, cfg
        self.kmeans: dict[int, dict] = {}
        for n in cfg["sizes"]:
            print(f"inputs: k-means, {n} points", flush=True)
            points = generate_points(SEED, n, D, 0, n)
            c0 = kmeanspp_reference(points, K, SEED)
            npy, c0_npy = tmp / f"points-{n}.npy", tmp / f"centers0-{n}.npy"
            np.save(npy, points)
            np.save(c0_npy, c0)
            text = tmp / f"points-{n}"
            text.mkdir()
            for i in range(SLOTS):  # one file per map task
                lo, hi = block_range(n, SLOTS, i)
                write_text_rows(text / f"part-{i}.txt", points[lo:hi])
            c0_txt = tmp / f"centers0-{n}.txt"
            write_text_rows(c0_txt, c0)
            ref, _ = lloyd_reference(points, c0, cfg["iterations"], 0.0)
            self.kmeans[n] = {"npy": npy, "c0": c0_npy, "text": text, "c0_txt": c0_txt, "ref": ref}
            del points

        print(f"inputs: {cfg['events']} HEP events in {cfg['event_files']} files", flush=True)
        self.events_npy, self.events_txt, masses = [], [], []
        (tmp / "events").mkdir()
        for i in range(cfg["event_files"]):
            count = (i + 1) * cfg["events"] // cfg["event_files"] - i * cfg["events"] // cfg[
                "event_files"
            ]
            ev = synthetic_events(count, SEED, i)
            npy = tmp / "events" / f"events{i:04d}.npy"
            write_events(str(npy), "npy", ev, "events")
            txt = tmp / "events" / f"events{i:04d}.txt"
            write_text_rows(txt, np.stack([ev[b] for b in BRANCHES], axis=1))
            self.events_npy.append(npy)
            self.events_txt.append(txt)
            masses.append(ev[HIST_BRANCH])
        self.events_dir = tmp / "events-text"
        self.events_dir.mkdir()
        for txt in self.events_txt:  # Hadoop's input directory: the text files only
            os.link(txt, self.events_dir / txt.name)
        self.edges = np.linspace(*HIST_RANGE, HIST_BINS + 1)
        self.edges_txt = tmp / "edges.txt"
        write_text_rows(self.edges_txt, self.edges[None, :])
        self.hist_ref = np.histogram(np.concatenate(masses), HIST_BINS, HIST_RANGE)[0]
        self.file_list = tmp / "files.list"
        self.file_list.write_text("".join(f"{p}\n" for p in self.events_txt))

        self.graphs: dict[tuple[int, int], dict] = {}
        for v, m in cfg["graphs"]:
            print(f"inputs: R-MAT graph, {v} vertices, {m} edges", flush=True)
            src, dst, _ = generate_edges("rmat", v, m, SEED, 0, m, False)
            adj = tmp / f"graph-{v}-{m}.adj"
            write_adjacency(adj, src, dst, v)
            at, degree = transition(src, dst, v, True)
            ref, _ = pagerank_scipy(at, degree, v, DAMPING, cfg["pr_iterations"], 0.0)
            self.graphs[(v, m)] = {"adj": adj, "ref": ref}


def write_adjacency(path: Path, src: np.ndarray, dst: np.ndarray, n: int) -> None:
    """Giraph's input: "id dst dst ..." for every vertex 0..n-1 (parallel edges repeated)."""
    order = np.argsort(src, kind="stable")
    s, d = src[order], dst[order]
    bounds = np.searchsorted(s, np.arange(n + 1))
    with open(path, "w") as f:
        for lo in range(0, n, 65536):
            hi = min(n, lo + 65536)
            lines = []
            for v in range(lo, hi):
                nb = d[bounds[v] : bounds[v + 1]]
                lines.append(f"{v} {' '.join(map(str, nb.tolist()))}".rstrip() + "\n")
            f.write("".join(lines))


def read_hex_rows(path: Path) -> np.ndarray:
    return np.array([[float.fromhex(x) for x in line.split()] for line in open(path)])


def rel_diff(a: np.ndarray, ref: np.ndarray) -> float:
    return float(np.abs(np.asarray(a) - ref).max() / np.abs(ref).max())


# ---------------------------------------------------------------------------------------------
# one round of each system


class Bench:
    def __init__(self, args, cfg: dict, inputs: Inputs, tmp: Path) -> None:
        self.args, self.cfg, self.inp, self.tmp = args, cfg, inputs, tmp
        self.skip = set(args.skip)
        self.times: dict[tuple, list[float]] = {}  # (workload, system, size) -> seconds
        self.diffs: dict[tuple, float] = {}  # (workload, system, size) -> max rel diff
        self.equal: dict[tuple, bool] = {}
        self.extra: dict[str, list] = {}  # start-up times and other side figures
        self.commands: dict[str, str] = {}
        self.log = tmp / "java.log"
        self.warming = False  # warm_up(): runs whose times are thrown away
        if not ({"hadoop-local", "hadoop-mini", "giraph"} <= self.skip):
            self.home = java_home()
        if not ({"hadoop-local", "hadoop-mini"} <= self.skip):
            self.mr_cp = peer_classpath("mapreduce", "--skip hadoop-local hadoop-mini")
        if "giraph" not in self.skip:
            self.giraph_cp = peer_classpath("giraph", "--skip giraph")

    def add(self, workload: str, system: str, size, seconds: float, diff=None, equal=None):
        if self.warming:
            return
        key = (workload, system, size)
        self.times.setdefault(key, []).append(seconds)
        if diff is not None:
            self.diffs[key] = max(diff, self.diffs.get(key, 0.0))
        if equal is not None:
            self.equal[key] = self.equal.get(key, True) and bool(equal)
        note = "" if equal is None else ("  equal" if equal else "  DIFFERENT")
        shown = f"{diff:.1e}" if diff is not None else ""
        print(f"  {workload:9s} {system:19s} {size!s:>18s} {seconds:9.3f} s {shown}{note}")

    # --- Hadoop: every workload of a round in one JVM (one cluster start per round) ----------
    def hadoop(self, mode: str, r: int) -> None:
        jobs, names = [], {}
        for n, kin in self.inp.kmeans.items():
            out = self.tmp / f"hadoop-{mode}-kmeans-{n}-{r}.txt"
            jobs.append(
                ["kmeans", f"name=kmeans-{n}", f"points={kin['text']}",
                 f"centers={kin['c0_txt']}", f"iterations={self.cfg['iterations']}", f"out={out}"]
            )  # fmt: skip
            names[f"kmeans-{n}"] = (n, out)
        hist_out = self.tmp / f"hadoop-{mode}-hist-{r}.txt"
        jobs.append(
            ["hist", "name=hist", f"input={self.inp.events_dir}",
             f"columns={BRANCHES.index(HIST_BRANCH)}", f"edges={self.inp.edges_txt}",
             f"out={hist_out}"]
        )  # fmt: skip
        files_out = self.tmp / f"hadoop-{mode}-files-{r}"
        files_out.mkdir()
        jobs.append(
            ["files", "name=files", f"list={self.inp.file_list}", f"out={files_out}",
             *(f"arg={w}" for w in FILES_CMD)]
        )  # fmt: skip
        jobs_file = self.tmp / f"hadoop-{mode}-jobs-{r}.txt"
        jobs_file.write_text("".join("\t".join(j) + "\n" for j in jobs))
        work = self.tmp / f"hadoop-{mode}-work-{r}"
        args = ["--mode", mode.removeprefix("hadoop-"), "--work", str(work), str(jobs_file)]
        main = "org.cloudhpc.peers.mapreduce.Runner"
        self.commands[mode] = f"java {' '.join(HADOOP_JAVA_FLAGS)} -cp ... {main} " + shlex.join(
            args
        )
        lines = run_java(self.home, self.mr_cp, main, args, self.log, HADOOP_JAVA_FLAGS)
        by_name = {line["name"]: line for line in lines}
        self.extra.setdefault(f"{mode} start_s", []).append(by_name["start"]["start_s"])
        for name, (n, out) in names.items():
            line = by_name[name]
            diff = rel_diff(read_hex_rows(out), self.inp.kmeans[n]["ref"])
            self.add("kmeans", mode, n, line["seconds"], diff, diff <= RTOL)
            self.extra.setdefault(f"{mode} upload_s {n}", []).append(line["upload_s"])
        counts = np.loadtxt(hist_out, dtype=np.int64)
        same = bool(np.array_equal(counts, self.inp.hist_ref))
        self.add("hist", mode, self.cfg["events"], by_name["hist"]["seconds"], equal=same)
        self.add("files", mode, len(self.inp.events_txt), by_name["files"]["seconds"],
                 equal=self.files_equal(files_out))  # fmt: skip
        self.hadoop_files_out = files_out

    def files_equal(self, out_dir: Path, other: Path | None = None) -> bool:
        """Every input's output decompresses to the input (and equals `other`'s, if given)."""
        for txt in self.inp.events_txt:
            data = (out_dir / f"{txt.name}.stdout").read_bytes()
            if gzip.decompress(data) != txt.read_bytes():
                return False
            if other is not None and (other / f"{txt.name}.stdout").read_bytes() != data:
                return False
        return True

    # --- k-means on cloudhpc, Spark, the spill script -----------------------------------------
    def sizes(self) -> list[tuple[int, dict]]:
        """The k-means inputs of this step: the smallest only while warming up."""
        items = list(self.inp.kmeans.items())
        return items[:1] if self.warming else items

    def cloudhpc_kmeans(self, system: str, r: int) -> None:
        model = "spmd" if system == "cloudhpc-spmd" else "mapreduce"
        engine = "ray" if system == "ray" else "mpi"
        for n, kin in self.sizes():
            out = self.tmp / f"{system}-{n}-{r}.npy"
            check = ["--check"] if self.args.check and r == 0 else []
            rec = run_record(
                "kmeans", "--model", model, "--points", str(kin["npy"]), "--centers-in",
                str(kin["c0"]), "--iterations", str(self.cfg["iterations"]), "--tol", "0",
                "--centers-out", str(out), *check, nprocs=SLOTS, engine=engine,
            )  # fmt: skip
            self.commands[system] = rec["_cmd"]
            diff = rel_diff(np.load(out), kin["ref"])
            ok = diff <= RTOL and (not check or rec.get("verified") is True)
            self.add("kmeans", system, n, total_s(rec), diff, ok)
            if system == "ray" and not self.warming:
                start = rec["timings"]["phases"].get("ray_start")
                if start is not None:
                    self.extra.setdefault("ray start_s", []).append(start)

    def spill(self, r: int) -> None:
        script = BENCH / "_kmeans_mr_spill.py"
        mpiexec = Path(sys.executable).parent / "mpiexec"
        for n, kin in self.sizes():
            out = self.tmp / f"spill-{n}-{r}.npy"
            args = [str(kin["npy"]), str(kin["c0"]), str(self.cfg["iterations"]), str(SLOTS)]
            cmd = [str(mpiexec), "-n", str(SLOTS), sys.executable, str(script), *args, str(out)]
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode != 0:
                raise SystemExit(f"{shlex.join(cmd)} failed:\n{res.stderr[-3000:]}")
            line = json.loads(res.stdout.strip().splitlines()[-1])
            self.commands["cloudhpc-spill"] = "mpiexec -n 2 python benchmarks/_kmeans_mr_spill.py"
            diff = rel_diff(np.load(out), kin["ref"])
            self.add("kmeans", "cloudhpc-spill", n, line["seconds"], diff, diff <= RTOL)

    def spark(self, r: int) -> None:
        script = BENCH / "_kmeans_spark.py"
        for n, kin in self.inp.kmeans.items():
            out = self.tmp / f"spark-{n}-{r}.npy"
            args = [str(kin["npy"]), str(kin["c0"]), str(self.cfg["iterations"]), str(SLOTS)]
            cmd = [sys.executable, str(script), *args, str(out)]
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode != 0:
                raise SystemExit(f"{shlex.join(cmd)} failed:\n{res.stderr[-3000:]}")
            parts = json.loads(res.stdout.strip().splitlines()[-1])
            self.commands["spark"] = "python benchmarks/_kmeans_spark.py"
            self.extra.setdefault("spark start_s", []).append(parts["start_s"])
            diff = rel_diff(np.load(out), kin["ref"])
            self.add("kmeans", "spark", n, parts["load_s"] + parts["train_s"], diff, diff <= RTOL)

    # --- histogram and map-only on cloudhpc ------------------------------------------------------
    def cloudhpc_data(self, r: int) -> None:
        out = self.tmp / f"cloudhpc-hist-{r}.npz"
        check = ["--check"] if self.args.check and r == 0 else []
        lo, hi = HIST_RANGE
        rec = run_record(
            "hep", *map(str, self.inp.events_npy), "--branch", HIST_BRANCH, "--bins",
            str(HIST_BINS), "--range", str(lo), str(hi), "--out", str(out), *check, nprocs=SLOTS,
        )  # fmt: skip
        self.commands["cloudhpc hep"] = rec["_cmd"]
        with np.load(out) as z:
            same = bool(np.array_equal(z["counts"], self.inp.hist_ref))
        same = same and (not check or rec.get("verified") is True)
        self.add("hist", "cloudhpc", self.cfg["events"], total_s(rec), equal=same)

        files_out = self.tmp / f"cloudhpc-files-{r}"
        rec = run_record(
            "files", *map(str, self.inp.events_txt), "--cmd", shlex.join(FILES_CMD), "--out",
            str(files_out), nprocs=SLOTS,
        )  # fmt: skip
        self.commands["cloudhpc files"] = rec["_cmd"]
        other = getattr(self, "hadoop_files_out", None)
        self.add("files", "cloudhpc", len(self.inp.events_txt), total_s(rec),
                 equal=self.files_equal(files_out, other))  # fmt: skip

    # --- PageRank -------------------------------------------------------------------------------
    def giraph(self, r: int) -> None:
        for (v, m), g in self.inp.graphs.items():
            out = self.tmp / f"giraph-{v}-{m}-{r}.txt"
            work = self.tmp / f"giraph-work-{v}-{m}-{r}"
            args = ["--graph", str(g["adj"]), "--iterations", str(self.cfg["pr_iterations"]),
                    "--damping", str(DAMPING), "--threads", str(SLOTS), "--work", str(work),
                    "--out", str(out)]  # fmt: skip
            main = "org.cloudhpc.peers.giraph.Runner"
            self.commands["giraph"] = f"java -cp ... {main} " + shlex.join(args)
            (line,) = run_java(self.home, self.giraph_cp, main, args, self.log)
            values = np.zeros(v)
            for row in open(out):
                i, x = row.split("\t")
                values[int(i)] = float.fromhex(x)
            iters = self.cfg["pr_iterations"]
            per_it = statistics.mean(line["superstep_s"][1 : iters + 1])
            diff = rel_diff(values, g["ref"])
            self.giraph_values = values
            self.add("pagerank", "giraph", f"{v}/{m}", per_it, diff, diff <= RTOL)
            self.extra.setdefault(f"giraph job_s {v}/{m}", []).append(line["seconds"])

    def cloudhpc_pagerank(self, r: int) -> None:
        for (v, m), g in list(self.inp.graphs.items())[: 1 if self.warming else None]:
            out = self.tmp / f"cloudhpc-pr-{v}-{m}-{r}.npy"
            check = ["--check"] if self.args.check and r == 0 else []
            rec = run_record(
                "pagerank", "--generate", "rmat", "--vertices", str(v), "--edge-count", str(m),
                "--seed", str(SEED), "--directed", "--iterations", str(self.cfg["pr_iterations"]),
                "--tol", "0", "--damping", str(DAMPING), "--out", str(out), *check, nprocs=SLOTS,
            )  # fmt: skip
            self.commands["cloudhpc pagerank"] = rec["_cmd"]
            values = np.load(out)
            diff = rel_diff(values, g["ref"])
            ok = diff <= RTOL and (not check or rec.get("verified") is True)
            self.add("pagerank", "cloudhpc", f"{v}/{m}", rec["metrics"]["per_iteration_s"],
                     diff, ok)  # fmt: skip
            if not self.warming:
                self.extra.setdefault(f"cloudhpc pagerank total_s {v}/{m}", []).append(total_s(rec))

    def steps(self) -> list[tuple[str, object]]:
        s = []
        if "hadoop-local" not in self.skip:
            s.append(("hadoop-local", lambda r: self.hadoop("hadoop-local", r)))
        if "hadoop-mini" not in self.skip:
            s.append(("hadoop-mini", lambda r: self.hadoop("hadoop-mini", r)))
        if "spark" not in self.skip:
            s.append(("spark", self.spark))
        if "spill" not in self.skip:
            s.append(("cloudhpc-spill", self.spill))
        for system in ("cloudhpc-iterative", "cloudhpc-spmd", "ray"):
            if system not in self.skip:
                s.append((system, lambda r, system=system: self.cloudhpc_kmeans(system, r)))
        s.append(("cloudhpc hep + files", self.cloudhpc_data))
        if "giraph" not in self.skip:
            s.append(("giraph", self.giraph))
        s.append(("cloudhpc pagerank", self.cloudhpc_pagerank))
        return s

    def warm_up(self) -> None:
        """One untimed run of every cloudhpc step at the smallest size before the rounds: the
        first run after an install compiles numba's kernels into their on-disk caches (about
        1 s, 9 s on Ray's workers), which every later run loads; the JVM peers have no such
        cache, and their start-up is reported apart."""
        self.warming = True
        try:
            for name, step in self.steps():
                if name.startswith(("cloudhpc", "ray")):
                    print(f"warm-up: {name}", flush=True)
                    step(-1)
        finally:
            self.warming = False

    def run(self) -> None:
        self.warm_up()
        steps = self.steps()
        for r in range(self.cfg["rounds"]):
            shift = r % len(steps)  # interleaved: each round starts with another system
            for name, step in steps[shift:] + steps[:shift]:
                print(f"round {r + 1}/{self.cfg['rounds']}: {name}", flush=True)
                step(r)

    def median(self, workload, system, size) -> float | None:
        t = self.times.get((workload, system, size))
        return statistics.median(t) if t else None


# ---------------------------------------------------------------------------------------------
# output


def num(x: float) -> str:
    """3 significant digits, without an exponent from 1000 up."""
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:.0f}"


def report(bench: Bench, cfg: dict, where: str) -> dict:
    sizes = cfg["sizes"]
    systems = [s for s in KMEANS_SYSTEMS if any((("kmeans", s, n) in bench.times) for n in sizes)]
    base = "cloudhpc-iterative"
    lines = [
        "# The seeds' own systems: Hadoop MapReduce 3.4.1 and Giraph 1.3.0 beside cloudhpc",
        "",
        f"Machine: {where}.",
        f"Load average (1 min): {bench.load_start:.2f} at the start, {bench.load_end:.2f} at "
        "the end (a shared machine: not figures of record).",
        f"Median of {cfg['rounds']} interleaved round(s). k-means: K = {K}, 2-D, "
        f"{cfg['iterations']} iterations, same initial centers; 'diff' is max |c - c_ref| / max "
        f"|c_ref| against a serial NumPy Lloyd; 'equal' means diff <= {RTOL:g} (k-means, "
        "PageRank) or identical counts / bytes (histogram, files).",
        "",
        "## k-means: seconds against the number of points (seed 000 Figs 12.7, 12.12)",
        "",
        "| system | " + " | ".join(f"N = {n:,}" for n in sizes) + " | s per iteration at "
        f"N = {sizes[-1]:,} | x {base} | diff | equal |",
        "|---|" + "---|" * (len(sizes) + 4),
    ]
    for s in systems:
        med = [bench.median("kmeans", s, n) for n in sizes]
        last = med[-1]
        ref = bench.median("kmeans", base, sizes[-1])
        ratio = f"{last / ref:.1f}" if last and ref else "-"
        diff = max(bench.diffs.get(("kmeans", s, n), 0.0) for n in sizes)
        eq = all(bench.equal.get(("kmeans", s, n), False) for n in sizes)
        cells = [num(m) if m is not None else "-" for m in med]
        per_it = num(last / cfg["iterations"]) if last else "-"
        lines.append(
            f"| {KMEANS_SYSTEMS[s]} | " + " | ".join(cells) + f" | {per_it} | {ratio} | "
            f"{diff:.1e} | {'yes' if eq else 'NO'} |"
        )
    lines += ["", "## HEP histogram and map-only file processing", ""]
    lines += ["| workload | system | size | seconds | equal |", "|---|---|---|---|---|"]
    for workload, size, what in (
        ("hist", cfg["events"], f"{cfg['events']:,} events, {cfg['event_files']} files"),
        ("files", len(bench.inp.events_txt), f"{len(bench.inp.events_txt)} files, gzip each"),
    ):
        for s in ("hadoop-local", "hadoop-mini", "cloudhpc"):
            m = bench.median(workload, s, size)
            if m is not None:
                eq = bench.equal.get((workload, s, size), False)
                lines.append(f"| {workload} | {s} | {what} | {num(m)} | {'yes' if eq else 'NO'} |")
    lines += ["", f"## PageRank, {cfg['pr_iterations']} iterations, ms per iteration", "",
              "| graph (vertices/edges) | Giraph 1.3.0 (1 worker, 2 threads) | cloudhpc bsp "
              "(2 ranks) | Giraph / cloudhpc | diff Giraph | diff cloudhpc | equal |",
              "|---|---|---|---|---|---|---|"]  # fmt: skip
    for v, m in cfg["graphs"]:
        size = f"{v}/{m}"
        g, c = bench.median("pagerank", "giraph", size), bench.median("pagerank", "cloudhpc", size)
        eq = all(bench.equal.get(("pagerank", s, size), False) for s in ("giraph", "cloudhpc")
                 if ("pagerank", s, size) in bench.times)  # fmt: skip
        lines.append(
            f"| {v:,} / {m:,} | {num(g * 1e3)} | {num(c * 1e3)} | {g / c:.1f} | "
            f"{bench.diffs.get(('pagerank', 'giraph', size), 0):.1e} | "
            f"{bench.diffs.get(('pagerank', 'cloudhpc', size), 0):.1e} | {'yes' if eq else 'NO'} |"
            if g is not None and c is not None
            else f"| {v:,} / {m:,} | - | {num((c or 0) * 1e3)} | - | - | - | - |"
        )
    lines += ["", "## Start-up and other side figures (medians, seconds)", ""]
    for key, vals in sorted(bench.extra.items()):
        lines.append(f"- {key}: {num(statistics.median(vals))}")
    lines += ["", "## Commands", ""]
    for key, cmd in sorted(bench.commands.items()):
        lines.append(f"- {key}: `{cmd}`")
    write_text("seed_peers.md", "\n".join(lines) + "\n")
    # RESULTS.md (with --save only): the tables, the side figures and the picture, not the
    # commands (they name this run's temporary files)
    body = "\n".join(lines[2 : lines.index("## Commands")]).replace("\n## ", "\n### ")
    run = "seed_peers.py " + shlex.join(bench.argv)
    update_results_md(
        "seed_peers",
        "The seeds' own systems: Hadoop MapReduce and Giraph (issue 28)",
        f"`{run.strip()}` (after `make bench`; commands of each system in "
        f"`results/seed_peers.md`).\n\n{body.strip()}\n\n"
        "![k-means time against N; PageRank per iteration](results/seed_peers.png)",
    )
    return {
        "machine": where,
        "config": cfg,
        "times": [
            {"workload": w, "system": s, "size": str(n), "seconds": t}
            for (w, s, n), t in bench.times.items()
        ],  # fmt: skip
        "diffs": [
            {"workload": w, "system": s, "size": str(n), "diff": d}
            for (w, s, n), d in bench.diffs.items()
        ],  # fmt: skip
        "equal": [
            {"workload": w, "system": s, "size": str(n), "equal": e}
            for (w, s, n), e in bench.equal.items()
        ],  # fmt: skip
        "extra": bench.extra,
        "commands": bench.commands,
    }


def figure(bench: Bench, cfg: dict, where: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 5.8), gridspec_kw={"width_ratios": [3, 2]})
    markers = dict(zip(KMEANS_SYSTEMS, "osD^vx*", strict=True))
    for s, label in KMEANS_SYSTEMS.items():
        pts = [(n, bench.median("kmeans", s, n)) for n in cfg["sizes"]]
        pts = [(n, t) for n, t in pts if t is not None]
        if pts:
            ax.plot(*zip(*pts, strict=True), marker=markers[s], label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of 2-D points")
    ax.set_ylabel(f"seconds ({cfg['iterations']} iterations, K = {K})")
    ax.set_title("k-means: time against the number of points")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    labels, giraph, cloud = [], [], []
    for v, m in cfg["graphs"]:
        size = f"{v}/{m}"
        labels.append(f"{v:,} v\n{m:,} e")
        giraph.append((bench.median("pagerank", "giraph", size) or 0) * 1e3)
        cloud.append((bench.median("pagerank", "cloudhpc", size) or 0) * 1e3)
    x = np.arange(len(labels))
    bx.bar(x - 0.2, giraph, 0.4, label="Giraph 1.3.0 (1 worker, 2 threads)")
    bx.bar(x + 0.2, cloud, 0.4, label="cloudhpc bsp (2 ranks)")
    bx.set_xticks(x, labels)
    bx.set_yscale("log")
    bx.set_ylabel("ms per iteration")
    bx.set_title(f"PageRank (R-MAT), {cfg['pr_iterations']} iterations")
    bx.set_ylim(top=max(giraph + cloud + [1.0]) * 10)  # room for the legend above the bars
    bx.legend(fontsize=7, loc="upper left")
    fig.suptitle(f"{where}; load {bench.load_start:.1f}-{bench.load_end:.1f}", fontsize=7)
    fig.tight_layout()
    save_figure(fig, "seed_peers.png")


def headline(bench: Bench, cfg: dict) -> dict:
    n = cfg["sizes"][-1]
    g = f"{cfg['graphs'][-1][0]}/{cfg['graphs'][-1][1]}"

    def med(w, s, size):
        t = bench.median(w, s, size)
        return None if t is None else round(t, 4)

    def eq(w, size, systems):
        return all(bench.equal.get((w, s, size), False) for s in systems
                   if (w, s, size) in bench.times)  # fmt: skip

    hadoop = "hadoop-mini" if ("kmeans", "hadoop-mini", n) in bench.times else "hadoop-local"
    km_all = [s for s in KMEANS_SYSTEMS]
    return {
        "kmeans": {
            "n": n,
            "hadoop_s": med("kmeans", hadoop, n),
            "hadoop_mode": hadoop.removeprefix("hadoop-"),
            "hadoop_local_s": med("kmeans", "hadoop-local", n),
            "cloudhpc_s": med("kmeans", "cloudhpc-iterative", n),
            "max_rel_diff": max(
                (d for (w, _, _), d in bench.diffs.items() if w == "kmeans"), default=None
            ),  # fmt: skip
            "equal": all(eq("kmeans", size, km_all) for size in cfg["sizes"]),
        },
        "hist": {
            "events": cfg["events"],
            "hadoop_s": med("hist", hadoop, cfg["events"]),
            "hadoop_local_s": med("hist", "hadoop-local", cfg["events"]),
            "cloudhpc_s": med("hist", "cloudhpc", cfg["events"]),
            "equal": eq("hist", cfg["events"], ["hadoop-local", "hadoop-mini", "cloudhpc"]),
        },
        "files": {
            "files": len(bench.inp.events_txt),
            "hadoop_s": med("files", hadoop, len(bench.inp.events_txt)),
            "cloudhpc_s": med("files", "cloudhpc", len(bench.inp.events_txt)),
            "equal": eq(
                "files", len(bench.inp.events_txt), ["hadoop-local", "hadoop-mini", "cloudhpc"]
            ),
        },
        "pagerank": {
            "graph": g,
            "giraph_s": med("pagerank", "giraph", g),
            "cloudhpc_s": med("pagerank", "cloudhpc", g),
            "per": "iteration",
            "max_rel_diff": max(
                (d for (w, _, _), d in bench.diffs.items() if w == "pagerank"), default=None
            ),  # fmt: skip
            "equal": all(
                eq("pagerank", f"{v}/{m}", ["giraph", "cloudhpc"]) for v, m in cfg["graphs"]
            ),  # fmt: skip
        },
    }


def replot(run_dir: Path) -> None:
    """The tables and the picture again from a run's seed_peers.json (with --save: into
    benchmarks/results/ and RESULTS.md); the JSON itself is left as it is."""
    path = run_dir / "seed_peers.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise SystemExit(f"seed_peers.py: --replot: cannot read {path}: {e}") from None
    cfg = {**data["config"], "graphs": [tuple(g) for g in data["config"]["graphs"]]}

    def key(row: dict) -> tuple:
        size = row["size"]
        return row["workload"], row["system"], int(size) if size.isdigit() else size

    bench = object.__new__(Bench)  # a Bench of the saved figures, for report() and figure()
    bench.times = {key(r): r["seconds"] for r in data["times"]}
    bench.diffs = {key(r): r["diff"] for r in data["diffs"]}
    bench.equal = {key(r): r["equal"] for r in data["equal"]}
    bench.extra, bench.commands = data["extra"], data["commands"]
    bench.load_start, bench.load_end = data["load_average"]["start"], data["load_average"]["end"]
    bench.argv = data.get("argv", ["--save"])
    bench.inp = argparse.Namespace(events_txt=[None] * data["headline"]["files"]["files"])
    report(bench, cfg, data["machine"])
    figure(bench, cfg, data["machine"])


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.splitlines()[2:]),
    )  # fmt: skip
    ap.add_argument("--quick", action="store_true",
                    help="small sizes, 1 round (a few minutes): "
                    + ", ".join(f"{k}={v}" for k, v in QUICK.items()))  # fmt: skip
    ap.add_argument("--check", action="store_true",
                    help="cloudhpc's own --check in round 1; exit 1 if any answer differs; print "
                    "one JSON line last")  # fmt: skip
    ap.add_argument("--rounds", type=int, help="interleaved rounds (default 2, quick 1)")
    ap.add_argument("--sizes", type=int, nargs="+", metavar="N", help="k-means point counts")
    ap.add_argument("--iterations", type=int, help="k-means iterations (default 3, quick 2)")
    ap.add_argument("--skip", nargs="*", default=[], choices=SKIPPABLE, help="leave peers out")
    ap.add_argument("--replot", type=Path, metavar="RUN_DIR",
                    help="no run: redraw from RUN_DIR/seed_peers.json")  # fmt: skip
    args = parse_args(ap)
    if args.replot is not None:
        replot(args.replot)
        return
    cfg = dict(QUICK if args.quick else FULL)
    for key in ("rounds", "sizes", "iterations"):
        if getattr(args, key) is not None:
            cfg[key] = getattr(args, key)
    if cfg["rounds"] < 1 or cfg["iterations"] < 1 or min(cfg["sizes"]) < K:
        ap.error(f"--rounds and --iterations must be >= 1 and every --sizes N >= {K}")
    if "spark" not in args.skip:
        require_module("pyspark", "PySpark", "--skip spark")
    if "ray" not in args.skip:
        require_module("ray", "Ray (the ray extra)", "--skip ray")
    load_start = load_average()
    where = machine()
    print(where, flush=True)
    with tempfile.TemporaryDirectory(prefix="seed-peers-") as tmp_name:
        tmp = Path(tmp_name)
        inputs = Inputs(tmp, cfg)
        bench = Bench(args, cfg, inputs, tmp)
        bench.load_start, bench.argv = load_start, sys.argv[1:]
        t0 = time.perf_counter()
        bench.run()
        print(f"all rounds: {time.perf_counter() - t0:.0f} s", flush=True)
        bench.load_end = load_average()
        data = report(bench, cfg, where)
        figure(bench, cfg, where)
        result = headline(bench, cfg)
        data["headline"] = result
        data["argv"] = bench.argv
        write_json("seed_peers", data)
    equal = all(v["equal"] for v in result.values())
    if args.check:
        print(json.dumps(result))
        if not equal:
            raise SystemExit(1)


if __name__ == "__main__":
    main()

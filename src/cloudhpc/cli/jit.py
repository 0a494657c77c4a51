"""`cloudhpc jit build`: compile every app's and NPB kernel's numba code into numba's on-disk
cache ahead of the first run (`make demo` runs it), so that no run waits for a compiler.

numba compiles a kernel to machine code on its first call (LLVM: seconds per kernel, a minute or
two for all of cloudhpc's on 2 cores) and, with cache=True, keeps the result on disk for every
later process: the ranks of a run load it in milliseconds (cloudhpc.jit). A kernel is compiled
for the argument types it is called with, so the only faithful way to fill the cache is to call
the kernels as runs do: each app names small runs that reach all of its kernels
(`warm_up_runs(tmp)` in its cli module: argument lists for `cloudhpc run APP`), and each NPB
kernel runs at class S. They run here one after the other on -n P ranks (2: the paths that only
more than one rank takes compile too), with their records thrown away.

The cache lives where numba puts it: beside each kernel's source in `__pycache__` when that is
writable (a clone, a venv), else numba's user-wide cache directory; NUMBA_CACHE_DIR moves it (the
launchers pass it to every rank as an absolute path). Ranks on one machine, and machines sharing
the file system, share it.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import CloudhpcError
from ..jsontext import print_json
from .parser import add_subparser
from .ui import err, print_table, progress_bar


@dataclass(frozen=True)
class WarmUp:
    """One warm-up run: `cloudhpc run APP WORDS` or `cloudhpc npb WORDS` (app "npb")."""

    title: str
    app: str
    words: tuple[str, ...]


def add_parser(subparsers, argv: Sequence[str] = ()) -> None:
    p = add_subparser(
        subparsers,
        "jit",
        "compile the numba kernels of every app and NPB kernel ahead of the first run",
        __doc__.split("\n\n", 1)[1].split("\n\nThe cache lives")[0].replace("\n", " "),
    )
    sub = p.add_subparsers(dest="jit_command", metavar="ACTION", required=True)
    b = add_subparser(
        sub,
        "build",
        "compile every kernel into numba's on-disk cache (make demo runs this)",
        "Runs each app's small warm-up runs and each NPB kernel at class S, so that numba "
        "compiles every kernel for the argument types runs use and caches the machine code: "
        "later runs load it in milliseconds. Takes 1-3 minutes on 2 cores the first time (numba "
        "compiles each kernel with LLVM), seconds when everything is cached already.",
    )
    b.add_argument(
        "--apps",
        metavar="NAME[,NAME]",
        help="only these (run apps, or npb); default: every app with kernels and every NPB kernel",
    )
    b.add_argument(
        "-n",
        "--np",
        type=int,
        default=2,
        metavar="P",
        help="ranks of each warm-up run (paths only more than one rank takes compile too)",
    )
    b.add_argument(
        "--threads",
        type=int,
        default=1,
        metavar="T",
        help="threads per rank: T > 1 also compiles the threaded (prange) twins that runs with "
        "--layout Tx... use",
    )
    b.add_argument("--json", action="store_true", help="print one JSON object per warm-up run")
    b.set_defaults(handler=handle_build)


def warm_ups(tmp: str, only: set[str] | None = None) -> list[WarmUp]:
    """Every app's warm-up runs (writing their small inputs into tmp), then NPB's."""
    from ..apps.registry import load_app, run_apps
    from ..npb import KERNELS

    items = []
    for name in run_apps():
        if only is not None and name not in only:
            continue
        module = load_app(name)
        hook = getattr(module, "warm_up_runs", None)
        if hook is None:  # an app without numba kernels
            continue
        for words in hook(tmp):
            title = f"run {name} {' '.join(_short(w) for w in words)}"
            items.append(WarmUp(title, name, tuple(words)))
    if only is None or "npb" in only:
        for kernel in KERNELS:
            items.append(WarmUp(f"npb {kernel} --class S", "npb", (kernel, "--class", "S")))
    return items


def _short(word: str) -> str:
    return os.path.basename(word) if os.sep in word else word


def _job(item: WarmUp, nprocs: int, threads: int, results: str):
    from ..apps.registry import job_spec
    from ..job import Job, Layout
    from ..launch import LOCAL

    spec = job_spec(item.app)
    params = spec.job_params(spec.values_from_words(list(item.words)))
    if spec.validate is not None:
        spec.validate(params, nprocs)
    if item.app != "npb":
        params["engine"] = "mpi"
    return Job(
        app=item.app,
        params=params,
        nprocs=nprocs,
        layout=Layout(threads, nprocs, 1),
        launcher=LOCAL,
        oversubscribe=True,
        results_dir=results,
        command_line=f"cloudhpc jit build: {item.title}",
    )


def handle_build(args: argparse.Namespace) -> int:
    from ..launch.runner import Monitor, plan_job, raise_for_failure, run_plan

    class _Quiet(Monitor):
        """A warm-up run's own output and notes ("compiling N kernels") are not for the user:
        the line per run says what it compiled."""

        def say(self, text: str) -> None:
            pass

        def note(self, text: str) -> None:
            pass

        def output(self, line: str) -> None:
            pass

    if args.np < 1 or args.threads < 1:
        raise CloudhpcError("-n and --threads must be at least 1")
    only = {a.strip() for a in args.apps.split(",") if a.strip()} if args.apps else None
    if only is not None:
        from ..apps.registry import run_apps

        unknown = sorted(only - {*run_apps(), "npb"})
        if unknown:
            raise CloudhpcError(
                f"--apps: no app {unknown[0]!r}; known: {', '.join(run_apps())}, npb"
            )
    if os.environ.get("NUMBA_CACHE_DIR"):  # the runs here and later ones must agree on it
        os.environ["NUMBA_CACHE_DIR"] = os.path.abspath(os.environ["NUMBA_CACHE_DIR"])
    with tempfile.TemporaryDirectory(prefix="cloudhpc-jit-") as tmp:
        items = warm_ups(tmp, only)
        if not items:
            raise CloudhpcError("nothing to compile: none of --apps has numba kernels")
        jobs = [_job(item, args.np, args.threads, os.path.join(tmp, "results")) for item in items]
        err.print(
            f"Compiling the numba kernels of {len({i.app for i in items})} apps into numba's "
            f"cache ({cache_location()}), {len(items)} small runs on {args.np} ranks. numba "
            "compiles each kernel to machine code with LLVM (seconds per kernel, 1-3 minutes in "
            "all the first time); every later run loads them from the cache in milliseconds.",
            highlight=False,
            markup=False,
        )
        rows = []
        progress = _Bar(len(items))
        try:
            for item, job in zip(items, jobs, strict=True):
                progress.start(item.title)
                t0 = time.perf_counter()
                outcome = run_plan(plan_job(job, preflight=False), _Quiet(), None)
                wall = time.perf_counter() - t0
                row = {"run": item.title, "compiled": None, "compile_s": None, "wall_s": wall}
                try:
                    raise_for_failure(outcome)
                except CloudhpcError as e:
                    row["error"] = str(e)
                else:
                    jit = outcome.result.get("jit") or {}
                    row.update(compiled=jit.get("compiled"), compile_s=jit.get("compile_s"))
                rows.append(row)
                progress.done(_line(row))
        finally:
            progress.close()
    failed = [r for r in rows if "error" in r]
    compiled = sum(r["compiled"] or 0 for r in rows)
    if args.json:
        for row in rows:
            print_json(row, indent=None)
    else:
        print_table(
            "numba kernels compiled per warm-up run (callees counted; 0: all were cached already)",
            [{k: r.get(k) for k in ("run", "compiled", "compile_s", "wall_s")} for r in rows],
        )
    err.print(
        f"{compiled} kernel compilations in {sum(r['wall_s'] for r in rows):.0f} s; "
        + (f"{len(failed)} warm-up runs FAILED" if failed else "every kernel is in the cache"),
        highlight=False,
        markup=False,
    )
    return 1 if failed else 0


def _line(row: dict) -> str:
    if "error" in row:
        return f"{row['run']}: FAILED: {row['error']}"
    n = row["compiled"]
    what = "cached already" if n == 0 else f"{n} compiled in {row['compile_s']:.1f} s"
    return f"{row['run']}: {what} ({row['wall_s']:.1f} s)"


def cache_location() -> str:
    """Where numba's cache of cloudhpc's kernels is (asked of numba for one kernel)."""
    try:
        from ..apps.wave.solver import _update

        path = _update._cache._cache_path
    except Exception:  # numba internals differ: say what decides it
        return os.environ.get("NUMBA_CACHE_DIR") or "numba's default"
    if os.environ.get("NUMBA_CACHE_DIR"):
        return f"NUMBA_CACHE_DIR={os.environ['NUMBA_CACHE_DIR']}"
    if os.path.basename(path) == "__pycache__":
        return "__pycache__ beside each kernel's source under " + os.path.dirname(
            os.path.dirname(os.path.dirname(path))
        )
    return path


class _Bar:
    """A progress bar over the warm-up runs on a terminal; one line per run either way."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.count = 0
        self._progress = progress_bar("compiling", "label")
        if self._progress is not None:
            self._task = self._progress.add_task("jit", total=total, label="")
            self._progress.start()

    def start(self, title: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, label=title)

    def done(self, line: str) -> None:
        self.count += 1
        text = f"[{self.count}/{self.total}] {line}"
        if self._progress is not None:
            self._progress.console.print(text, highlight=False, markup=False)
            self._progress.update(self._task, completed=self.count)
        else:
            err.print(text, highlight=False, markup=False)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()

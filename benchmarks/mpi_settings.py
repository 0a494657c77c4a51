"""Which of cloudhpc's launch settings changes which figure (issue 37, docs/mpi.md): IMB-MPI1
(built with each implementation's own mpicc, as middlewares.py builds it) on 2 ranks, started by
cloudhpc's own mpiexec line for the environment, then by that line less one setting at a time,
then less all of them (the implementation's plain `mpiexec -n 2`, keeping only what finds its
libraries), interleaved over --rounds; the best of the rounds.

Figures: PingPong t (us) at 8 B and 1 MiB, Bcast and Allreduce t_avg (us) at 8 B and 1 MiB.
A setting is a variable cloudhpc passes (`-genv K V`, `-x K=V`) or an option it adds
(`--bind-to none`); what only finds the libraries (LD_LIBRARY_PATH, FI_PROVIDER_PATH,
I_MPI_ROOT, OPAL_PREFIX, MPI4PY_LIBMPI) and Open MPI's --allow-run-as-root stay.

    .venv/bin/python benchmarks/mpi_settings.py [--mpi mpich,openmpi,intelmpi] [--envs native]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
from pathlib import Path

from common import load_note, machine, parse_args, write_json, write_markdown
from middlewares import _Lines, imb_binary, parse_imb

SIZES = [8, 1 << 20]
BENCHMARKS = ["PingPong", "Bcast", "Allreduce"]
# what the ranks need to find their libraries: never a setting under test
NEEDED = {"LD_LIBRARY_PATH", "FI_PROVIDER_PATH", "I_MPI_ROOT", "OPAL_PREFIX", "MPI4PY_LIBMPI",
          "NUMBA_NUM_THREADS", "OMP_NUM_THREADS"}  # fmt: skip


def settings(argv: list[str]) -> list[tuple[str, list[int]]]:
    """The settings on an mpiexec line: (name, the argv positions it takes)."""
    out = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "-genv" and i + 2 < len(argv) and argv[i + 1] not in NEEDED:
            out.append((f"{argv[i + 1]}={argv[i + 2]}", [i, i + 1, i + 2]))
            i += 3
            continue
        if a == "-x" and i + 1 < len(argv) and argv[i + 1].split("=")[0] not in NEEDED:
            out.append((argv[i + 1], [i, i + 1]))
            i += 2
            continue
        if a == "--bind-to" and i + 1 < len(argv):
            out.append((f"--bind-to {argv[i + 1]}", [i, i + 1]))
            i += 2
            continue
        if a == "-print-all-exitcodes":
            i += 1
            continue
        i += 1
    return out


def without(argv: list[str], positions: list[int]) -> list[str]:
    drop = set(positions)
    return [a for i, a in enumerate(argv) if i not in drop]


def run(plan, argv: list[str]) -> dict[str, dict[int, float]]:
    from cloudhpc.launch.runner import run_plan

    keep = _Lines()
    outcome = run_plan(dataclasses.replace(plan, argv=argv), keep.monitor, 600)
    if outcome.returncode != 0:
        raise SystemExit(f"IMB failed: {' '.join(argv)}\n{outcome.stderr}")
    return parse_imb(keep.lines)


def plan_for(impl_name: str, env: str, imb_argv: list[str]):
    from cloudhpc.job import Job, Layout
    from cloudhpc.launch.runner import plan_job

    job = Job(app="imb", nprocs=2, layout=Layout(1, 2, 1), env=env, mpi=impl_name,
              launcher="local")  # fmt: skip
    return plan_job(job, imb_argv)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpi", default="mpich,openmpi,intelmpi", help="implementations")
    ap.add_argument("--envs", default="native", help="environments (native, vm-net)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (best is kept)")
    args = parse_args(ap)
    from cloudhpc.mpi import get_implementation

    impls = [m for m in args.mpi.split(",") if m]
    envs = [e for e in args.envs.split(",") if e]
    started = machine()
    print(started, flush=True)
    best: dict[tuple[str, str, str], dict[str, dict[int, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="mpi-settings-") as tmp:
        lengths = Path(tmp) / "lengths"
        lengths.write_text("".join(f"{s}\n" for s in SIZES))
        cases = []
        for impl in impls:
            binary = imb_binary(get_implementation(impl))
            imb = [str(binary), *BENCHMARKS, "-msglen", str(lengths), "-zero_size", "off"]
            for env in envs:
                plan = plan_for(impl, env, imb)
                found = settings(plan.argv)
                variants = [("cloudhpc's line", plan.argv)]
                variants += [(f"less {name}", without(plan.argv, pos)) for name, pos in found]
                if len(found) > 1:
                    every = [p for _, pos in found for p in pos]
                    variants.append(("less every setting", without(plan.argv, every)))
                cases.append((impl, env, plan, variants))
        for r in range(args.rounds):
            for impl, env, plan, variants in cases:
                for label, argv in variants:
                    print(f"round {r + 1}/{args.rounds}: {impl} {env}: {label}", flush=True)
                    got = run(plan, argv)
                    slot = best.setdefault((impl, env, label), {})
                    for bench, by_size in got.items():
                        for size, t in by_size.items():
                            old = slot.setdefault(bench, {}).get(size)
                            slot[bench][size] = t if old is None else min(old, t)
    header = ["implementation", "env", "line"]
    header += [f"{b} {'8 B' if s == 8 else '1 MiB'} (us)" for b in BENCHMARKS for s in SIZES]
    rows = []
    for (impl, env, label), figs in best.items():
        rows.append([impl, env, label, *(round(figs.get(b, {}).get(s, float("nan")), 2)
                                         for b in BENCHMARKS for s in SIZES)])  # fmt: skip
    notes = [
        f"Machine: {started}. Best of {args.rounds} interleaved rounds. IMB-MPI1 (default "
        "repetitions, -msglen 8 and 1 MiB) started by cloudhpc's mpiexec line for the "
        "environment, the same line less one setting, and less all of them.",
        f"Command: `.venv/bin/python benchmarks/mpi_settings.py --mpi {args.mpi} --envs "
        f"{args.envs} --rounds {args.rounds}`.",
    ]
    write_markdown("mpi_settings", "Launch settings: the figure each changes (IMB-MPI1, P = 2)",
                   header, rows, notes)  # fmt: skip
    write_json("mpi_settings", {"machine": started, "load": load_note(), "rounds": args.rounds,
                                "best": {" | ".join(k): v for k, v in best.items()}})  # fmt: skip
    print(load_note())
    for row in rows:
        print("  ".join(str(x) for x in row))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    main()

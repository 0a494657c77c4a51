"""`files`: CAP3-style map-only (section 12.4.1): an external program run once per input file.

`cloudhpc run files --cmd 'PROG {input} ARGS' --out DIR INPUTS...`. The command is split with
shlex into argv and run without a shell, so no file name can inject a command; `{input}` in any
argument is replaced by the input's path ({name}: its file name; {out}: DIR, for programs that
write files of their own, as CAP3 does). For each input, DIR/<name>.stdout and DIR/<name>.stderr
(of the last attempt), and DIR/summary.json with every item's exit code, attempts and seconds.
Every file appears atomically (written to a temporary name in DIR, then os.replace). Items are
handed out dynamically, a failed item is retried up to --retries times, and the command exits
non-zero if any item still failed (the summary records all of them).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from ..context import RunContext
from ..engines import engine_for
from ..errors import CloudhpcError
from ..models.map_only import ItemError, map_only

HELP = "map-only: run a program once per input file (CAP3-style)"
DESCRIPTION = (
    "Map-only execution unit (CAP3, section 12.4.1): run PROG once per input file, items handed "
    "out dynamically, failed items retried. Writes DIR/<input>.stdout, .stderr and "
    "DIR/summary.json atomically; exits non-zero if an item failed after its retries."
)
PLACEHOLDER = "{input}"
SUMMARY = "summary.json"


# --- command line ----------------------------------------------------------------------------
def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="input files, one item each")
    p.add_argument(
        "--cmd",
        required=True,
        metavar="'PROG {input} ARGS'",
        help="program and arguments (no shell); {input} is replaced by each input's path, "
        "{name} by its file name and {out} by the output directory (for programs that write "
        "files of their own)",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    p.add_argument(
        "--retries", type=int, default=0, metavar="N", help="retry a failed item up to N times"
    )
    p.add_argument(
        "--schedule",
        choices=("dynamic", "static"),
        default="dynamic",
        help="dynamic: rank 0 hands out items on request (items differ in cost); static: "
        "contiguous blocks of the input list (for comparison)",
    )
    p.add_argument(
        "--item-timeout",
        type=float,
        default=None,
        metavar="SEC",
        help="count an attempt as failed after SEC seconds",
    )


def params_from_args(args: argparse.Namespace) -> dict[str, Any]:
    params = {
        "cmd": args.cmd,
        "inputs": [os.path.abspath(p) for p in args.inputs],
        "out": os.path.abspath(args.out),
        "retries": args.retries,
        "item_timeout": args.item_timeout,
        "schedule": args.schedule,
    }
    validate(params)
    return params


def exit_code(record: dict) -> int:
    failed = (record.get("metrics") or {}).get("items_failed", 0)
    return 1 if failed or record.get("verified") is False else 0


# --- validation ------------------------------------------------------------------------------
def command_template(cmd: str) -> list[str]:
    try:
        argv = shlex.split(cmd)
    except ValueError as e:
        raise CloudhpcError(f"--cmd cannot be split into arguments: {e}") from None
    if not argv:
        raise CloudhpcError("--cmd is empty")
    if not any(PLACEHOLDER in a for a in argv):
        raise CloudhpcError(f"--cmd must contain {PLACEHOLDER} where each input's path goes")
    if PLACEHOLDER in argv[0]:
        raise CloudhpcError(f"--cmd must start with a program, not {PLACEHOLDER}")
    if shutil.which(argv[0]) is None:
        raise CloudhpcError(f"program not found: {argv[0]}")
    return argv


def validate(params: dict[str, Any]) -> list[str]:
    """The argv template; raises CloudhpcError naming the first problem with the parameters."""
    argv = command_template(params["cmd"])
    inputs = params["inputs"]
    if not inputs:
        raise CloudhpcError("no input files")
    names: dict[str, str] = {}
    for path in inputs:
        if not os.path.isfile(path):
            raise CloudhpcError(f"input file not found: {path}")
        if not os.access(path, os.R_OK):
            raise CloudhpcError(f"input file not readable: {path}")
        name = os.path.basename(path)
        if name in names:
            raise CloudhpcError(f"two inputs share the name {name!r}: {names[name]} and {path}")
        names[name] = path
    if params.get("schedule", "dynamic") not in ("dynamic", "static"):
        raise CloudhpcError(f"unknown schedule {params['schedule']!r}; use dynamic or static")
    if params.get("retries", 0) < 0:
        raise CloudhpcError("--retries must be >= 0")
    out = params["out"]
    if os.path.exists(out) and not os.path.isdir(out):
        raise CloudhpcError(f"--out exists and is not a directory: {out}")
    return argv


# --- the job ---------------------------------------------------------------------------------
def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _temp_in(directory: Path, name: str):
    return tempfile.NamedTemporaryFile(
        dir=directory, prefix=f".{name}.", suffix=".tmp", delete=False
    )


_FIELD = re.compile(r"\{input\}|\{name\}|\{out\}")


def _expand(arg: str, fields: dict[str, str]) -> str:
    # one pass: a path that itself contains "{out}" is not expanded again
    return _FIELD.sub(lambda m: fields[m.group(0)], arg)


def run_one(argv_template: list[str], out_dir: Path, timeout: float | None, path: str) -> dict:
    """Run the program on one input; its stdout/stderr land atomically in out_dir."""
    name = os.path.basename(path)
    fields = {PLACEHOLDER: path, "{name}": name, "{out}": str(out_dir)}
    argv = [_expand(a, fields) for a in argv_template]
    with _temp_in(out_dir, name + ".stdout") as fo, _temp_in(out_dir, name + ".stderr") as fe:
        try:
            proc = subprocess.run(
                argv, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe, timeout=timeout, check=False
            )
            code: int | None = proc.returncode
            problem = f"exit code {code}" if code != 0 else None
        except subprocess.TimeoutExpired:
            code, problem = None, f"timed out after {timeout} s"
        except OSError as e:  # vanished or not executable on this node
            code, problem = None, f"cannot start {argv[0]}: {e.strerror or e}"
    os.replace(fo.name, out_dir / f"{name}.stdout")
    os.replace(fe.name, out_dir / f"{name}.stderr")
    if problem is not None:
        raise ItemError(problem, exit_code=code)
    return {"exit_code": code}


def main(ctx: RunContext) -> dict:
    p = ctx.params
    with ctx.phase("load"):
        argv = validate(p)
        out_dir = Path(p["out"])
        if ctx.is_root:
            out_dir.mkdir(parents=True, exist_ok=True)
        engine = engine_for(ctx)
        engine.barrier()  # the directory exists before anyone writes into it
    inputs: list[str] = p["inputs"]

    def item(path: str) -> dict:
        return run_one(argv, out_dir, p.get("item_timeout"), path)

    outcomes = map_only(
        engine,
        item,
        inputs,
        retries=int(p.get("retries", 0)),
        schedule=p.get("schedule", "dynamic"),
        timer=ctx,
        progress=lambda done, total: ctx.progress(done, total, "items"),
    )
    if outcomes is None:
        return {}

    with ctx.phase("write"):
        items = []
        for o in outcomes:
            name = os.path.basename(inputs[o.index])
            items.append(
                {
                    "input": inputs[o.index],
                    "stdout": str(out_dir / f"{name}.stdout"),
                    "stderr": str(out_dir / f"{name}.stderr"),
                    "ok": o.ok,
                    "exit_code": o.value["exit_code"] if o.ok else o.detail.get("exit_code"),
                    "error": o.error,
                    "attempts": o.attempts,
                    "seconds": round(o.seconds, 6),
                    "rank": o.worker,
                }
            )
        failed = [it for it in items if not it["ok"]]
        summary = {
            "command": argv,
            "items": items,
            "succeeded": len(items) - len(failed),
            "failed": len(failed),
            "retries": int(p.get("retries", 0)),
        }
        summary_path = out_dir / SUMMARY
        _write_atomic(summary_path, (json.dumps(summary, indent=1) + "\n").encode())

    verified = None
    if p.get("check"):
        with ctx.phase("check"):
            verified = check_outputs(inputs, out_dir)

    busy = [0.0] * ctx.size
    for it in items:
        busy[it["rank"]] += it["seconds"]
    mean_busy = sum(busy) / len(busy)
    lines = [f"{len(items)} items: {summary['succeeded']} succeeded, {len(failed)} failed"]
    lines += [f"  FAILED {it['input']}: {it['error']} ({it['attempts']} attempts)" for it in failed]
    lines.append(f"outputs in {out_dir}")
    return {
        "metrics": {
            "items": len(items),
            "items_failed": len(failed),
            "attempts": sum(it["attempts"] for it in items),
            "item_seconds_sum": sum(it["seconds"] for it in items),
            # busiest rank's item time over the mean: 1.0 is perfect balance
            "load_imbalance": max(busy) / mean_busy if mean_busy > 0 else 1.0,
        },
        "verified": verified,
        "outputs": [str(summary_path), str(out_dir)],  # per-item files are listed in the summary
        "report": "\n".join(lines),
    }


def check_outputs(inputs: list[str], out_dir: Path) -> bool:
    """Independent of the run: re-read summary.json from disk and match it to the inputs and the
    files in DIR (every input once, both outputs present, ok exactly when the exit code is 0)."""
    try:
        summary = json.loads((out_dir / SUMMARY).read_text())
    except (OSError, ValueError):
        return False
    items = summary.get("items", [])
    if sorted(it["input"] for it in items) != sorted(inputs):
        return False
    for it in items:
        name = os.path.basename(it["input"])
        for kind in ("stdout", "stderr"):
            if not (out_dir / f"{name}.{kind}").is_file():
                return False
        if it["ok"] != (it["exit_code"] == 0) or it["attempts"] < 1:
            return False
    if summary["failed"] != sum(not it["ok"] for it in items):
        return False
    leftovers = [f for f in os.listdir(out_dir) if f.endswith(".tmp")]
    return not leftovers

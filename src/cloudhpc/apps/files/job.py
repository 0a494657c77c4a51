"""The files job (app "files"; its options are in cli.py): map_only over the inputs."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ...context import RunContext
from ...engines import engine_for
from ...models.map_only import map_only
from ...paths import make_output_dir
from ..arrays import write_atomic
from .cli import validate
from .runner import run_one

SUMMARY = "summary.json"


def main(ctx: RunContext) -> dict:
    p = ctx.params
    with ctx.phase("load"):
        argv = validate(p)
        out_dir = Path(p["out"])
        if ctx.is_root:
            make_output_dir(out_dir, "--out")
            # an earlier run's summary would describe outputs this run is about to replace
            (out_dir / SUMMARY).unlink(missing_ok=True)
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
        write_atomic(
            summary_path, lambda f: f.write((json.dumps(summary, indent=1) + "\n").encode())
        )

    verified = None
    if p.get("check"):
        with ctx.checking("the outputs re-read from disk"):
            verified = check_outputs(inputs, out_dir)

    busy = [0.0] * ctx.job.nprocs  # per worker: the ranks, or a driver engine's workers
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
        "failed_items": [
            {k: it[k] for k in ("input", "error", "exit_code", "attempts")} for it in failed
        ],
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

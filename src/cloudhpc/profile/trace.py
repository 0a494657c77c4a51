"""Chrome trace-event JSON from the per-rank event buffers (`--trace`); Perfetto and
chrome://tracing open it. Each MPI call is one complete ("X") event on its rank's track."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..atomic import write_json
from .model import Profile

# Must match struct trace_event in pmpi_prof.c.
EVENT_DTYPE = np.dtype(
    [("t0", "<f8"), ("t1", "<f8"), ("func", "<i4"), ("peer", "<i4"), ("bytes", "<u8")]
)


def read_events(rank_dir: str | os.PathLike, rank: int) -> np.ndarray:
    path = Path(rank_dir) / f"rank-{rank:05d}.trace"
    if not path.exists():
        return np.zeros(0, dtype=EVENT_DTYPE)
    return np.fromfile(path, dtype=EVENT_DTYPE)


def chrome_trace(profile: Profile, rank_dir: str | os.PathLike, out: str | os.PathLike) -> int:
    """Write the trace; returns the number of call events. Times are microseconds since the
    earliest MPI_Init: each rank's monotonic clock is placed by its wall-clock time at
    MPI_Init, so ranks on different hosts line up as well as their clocks agree."""
    events: list[dict] = []
    t_origin = min((rp.t_init_wall for rp in profile.ranks), default=0.0)
    n_calls = 0
    for rp in profile.ranks:
        pid = rp.rank
        events.append(
            {"name": "process_name", "ph": "M", "pid": pid, "args": {"name": f"rank {rp.rank}"}}
        )
        events.append(
            {"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": pid}}
        )
        ev = read_events(rank_dir, rp.rank)
        names = rp.trace_names
        ts = ((ev["t0"] - rp.t_init) + (rp.t_init_wall - t_origin)) * 1e6
        dur = (ev["t1"] - ev["t0"]) * 1e6
        for i in range(len(ev)):
            f = int(ev["func"][i])
            args: dict = {}
            if ev["bytes"][i]:
                args["bytes"] = int(ev["bytes"][i])
            if ev["peer"][i] >= 0:
                args["peer"] = int(ev["peer"][i])
            events.append(
                {
                    "name": names[f] if 0 <= f < len(names) else f"MPI_{f}",
                    "cat": "MPI",
                    "ph": "X",
                    "ts": round(float(ts[i]), 3),
                    "dur": round(float(dur[i]), 3),
                    "pid": pid,
                    "tid": 0,
                    "args": args,
                }
            )
        n_calls += len(ev)
    write_json(out, {"traceEvents": events, "displayTimeUnit": "ns"}, indent=None)
    return n_calls

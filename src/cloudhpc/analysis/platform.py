"""A platform: a target's curves and compute probe, measured once (`cloudhpc platform measure`,
curves/platform.py) and read by `predict --platform FILE` (and advice) from anywhere, with no
curve measured again.

The file (JSON, `FORMAT` version `VERSION`):

    {"format": "cloudhpc.platform", "version": 1, "name": "...",
     "measured_at": "2026-...Z", "measured_from": "host running cloudhpc",
     "target": {"env": "native", "hosts": [["h0", 2], ...], "cluster": {...} | null,
                "machine": "hostname" | null},        # machine: ranks on that one machine
     "mpi": {"name": "mpich", "version": "..."},
     "nodes": 2, "cores_per_node": 2, "link_bps": 1000000000 | null,
     "compute_probe_s": 0.0312,                        # bench/curves.py compute_probe
     "curves": {"2": {"record": "<bench.curves id>", "rows": [...], "stopped_at": {...}}}}

`rows` are a `bench.curves` record's rows (op, bytes, t_median_usec, sd_usec, repetitions, ...).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import CloudhpcError
from .curves import Curves

FORMAT = "cloudhpc.platform"
VERSION = 1


@dataclass
class Platform:
    name: str
    curves: dict[int, Curves]  # by P
    compute_probe_s: float | None = None
    target: dict[str, Any] = field(default_factory=dict)
    mpi: dict[str, Any] = field(default_factory=dict)
    nodes: int | None = None
    cores_per_node: int | None = None
    link_bps: float | None = None
    measured_at: str = ""
    measured_from: str = ""
    path: str | None = None  # the file it was read from (None: measured for this prediction)
    records: dict[int, str] = field(default_factory=dict)

    @property
    def machine(self) -> str | None:
        return self.target.get("machine")

    @property
    def nprocs(self) -> list[int]:
        return sorted(self.curves)

    def curves_for(self, nprocs: int) -> tuple[Curves, int]:
        """The curves measured at `nprocs`, else at the largest P below it (collectives are then
        extrapolated: analysis/collectives.py); one line when every measured P is above it."""
        if nprocs in self.curves:
            return self.curves[nprocs], nprocs
        below = [p for p in self.curves if p <= nprocs]
        if not below:
            raise CloudhpcError(
                f"platform {self.name} has curves at P = {', '.join(map(str, self.nprocs))}, "
                f"none at or below P = {nprocs}: measure it there (cloudhpc platform measure "
                f"{self.name} ... -n {nprocs})"
            )
        p = max(below)
        return self.curves[p], p

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "name": self.name,
            "measured_at": self.measured_at,
            "measured_from": self.measured_from,
            "target": self.target,
            "mpi": self.mpi,
            "nodes": self.nodes,
            "cores_per_node": self.cores_per_node,
            "link_bps": self.link_bps,
            "compute_probe_s": self.compute_probe_s,
            "curves": {
                str(p): {"record": self.records.get(p), "rows": _rows(c), "stopped_at": _stops(c)}
                for p, c in sorted(self.curves.items())
            },
        }

    @classmethod
    def from_json(cls, d: Any, where: str) -> Platform:
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise CloudhpcError(f"{where} is not a cloudhpc platform file")
        if d.get("version") != VERSION:
            raise CloudhpcError(
                f"{where} is a platform file of version {d.get('version')}; this cloudhpc reads "
                f"version {VERSION}: measure it again (cloudhpc platform measure)"
            )
        try:
            curves, records = {}, {}
            for p, c in d["curves"].items():
                n = int(p)
                if n < 1 or not c["rows"]:
                    raise ValueError(f"no curves at P = {p}")
                probe = d.get("compute_probe_s")
                curves[n] = Curves.from_rows(
                    c["rows"],
                    c.get("stopped_at") or {},
                    float(probe) if probe is not None else None,
                    c.get("record"),
                    label=f"platform {d['name']} at P = {n}",
                )
                records[n] = c.get("record")
            if not curves:
                raise ValueError("no curves")
            probe = d.get("compute_probe_s")
            return cls(
                name=str(d["name"]),
                curves=curves,
                compute_probe_s=float(probe) if probe is not None else None,
                target=dict(d.get("target") or {}),
                mpi=dict(d.get("mpi") or {}),
                nodes=d.get("nodes"),
                cores_per_node=d.get("cores_per_node"),
                link_bps=d.get("link_bps"),
                measured_at=str(d.get("measured_at", "")),
                measured_from=str(d.get("measured_from", "")),
                path=where,
                records=records,
            )
        except CloudhpcError as e:
            raise CloudhpcError(f"{where} is damaged: {e}") from None
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise CloudhpcError(f"{where} is damaged: {type(e).__name__}: {e}") from None


def _rows(c: Curves) -> list[dict[str, Any]]:
    return [
        {"op": op, "bytes": p.nbytes, "t_usec": p.t_s * 1e6, "t_median_usec": p.t_s * 1e6,
         "sd_usec": p.sd_s * 1e6,
         "repetitions": p.reps}
        for op, curve in sorted(c.curves.items()) for p in curve.points
    ]  # fmt: skip


def _stops(c: Curves) -> dict[str, int]:
    return {op: cv.stopped_at for op, cv in c.curves.items() if cv.stopped_at is not None}


def load_platform(path: str | os.PathLike) -> Platform:
    """A platform file; one line for one that is missing, damaged or of another version."""
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise CloudhpcError(f"no platform file {path}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise CloudhpcError(f"cannot read platform file {path}: {e}") from None
    try:
        d = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise CloudhpcError(f"{path} is damaged: not JSON ({e})") from None
    return Platform.from_json(d, str(path))


def platforms_dir(results_dir: str | os.PathLike) -> Path:
    """Where `platform measure` keeps platforms by default: RESULTS/platforms/NAME.json."""
    return Path(results_dir) / "platforms"


def find_platform(name_or_path: str, results_dir: str | os.PathLike) -> Path:
    """A platform by file path, or by name in the results directory's platforms/."""
    p = Path(name_or_path)
    if p.suffix == ".json" or os.sep in name_or_path or p.is_file():
        return p
    return platforms_dir(results_dir) / f"{name_or_path}.json"

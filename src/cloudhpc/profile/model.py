"""The profile of one run: per rank, per MPI function and per call site counts, times and bytes.

Two on-disk forms: the per-rank files the C library writes (`rank-NNNNN.json`, format
"cloudhpc-pmpi-rank", call sites as raw addresses) and the merged, documented `profile.json`
(docs/profile-schema.md), whose call sites are resolved (callsites.py) and numbered across ranks.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import CloudhpcError

SCHEMA = "cloudhpc.profile"
SCHEMA_VERSION = 2
READS_SCHEMA_VERSIONS = (1, 2)  # version 1: no MPI-IO bytes, no call sites
RANK_FORMAT = "cloudhpc-pmpi-rank"
RANK_FORMAT_VERSION = 2
RANK_FILE = re.compile(r"^rank-(\d{5,})\.json$")
SCHEMA_FILE = Path(__file__).with_name("profile.schema.json")  # the same rules, for other tools
MAX_SECONDS = 1e9


def _bad(where: str, field_name: str, problem: str) -> CloudhpcError:
    return CloudhpcError(f"{where} is damaged: field {field_name!r} {problem}")


def _check_stats(d: Any, name: str, where: str) -> None:
    if not isinstance(d, dict):
        raise _bad(where, name, "is not an object")
    for key in ("count", "bytes_sent", "bytes_recv", "bytes_written", "bytes_read", "bytes_out"):
        v = d.get(key, 0)
        if key == "count" and key not in d:
            raise _bad(where, f"{name}.count", "is missing")
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise _bad(where, f"{name}.{key}", f"is {v!r}, not a count")
    for key in ("time_s", "min_s", "max_s"):
        v = d.get(key, 0.0)
        if key == "time_s" and key not in d:
            raise _bad(where, f"{name}.time_s", "is missing")
        if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= MAX_SECONDS:
            raise _bad(where, f"{name}.{key}", f"is {v!r}, not a number of seconds")
    hist = d.get("size_hist", {})
    if not isinstance(hist, dict):
        raise _bad(where, f"{name}.size_hist", "is not an object")


def check_profile(d: Any, where: str = "profile") -> None:
    """Refuse, naming the field, a profile.json that breaks its schema (profile.schema.json):
    a rank that is not an object, `calls: null`, a negative or NaN time, ... (issue 31)."""
    if not isinstance(d, dict):
        raise CloudhpcError(f"{where} is not a cloudhpc profile")
    nprocs = d.get("nprocs")
    if isinstance(nprocs, bool) or not isinstance(nprocs, int) or not 1 <= nprocs <= 1 << 24:
        raise _bad(where, "nprocs", f"is {nprocs!r}, not a number of ranks")
    ranks = d.get("ranks")
    if not isinstance(ranks, list):
        raise _bad(where, "ranks", "is not a list")
    for i, r in enumerate(ranks):
        at = f"ranks[{i}]"
        if not isinstance(r, dict):
            raise _bad(where, at, "is not an object")
        rank = r.get("rank")
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < nprocs:
            raise _bad(where, f"{at}.rank", f"is {rank!r}, not a rank of {nprocs}")
        if any(isinstance(o, dict) and o.get("rank") == rank for o in ranks[:i]):
            raise _bad(where, f"{at}.rank", f"is {rank}, a rank listed twice")
        for key in ("total_s", "mpi_s", "cpu_s"):
            v = r.get(key)
            if v is None and key == "cpu_s":
                continue
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= MAX_SECONDS:
                raise _bad(where, f"{at}.{key}", f"is {v!r}, not a number of seconds")
        calls = r.get("calls")
        if not isinstance(calls, dict):
            raise _bad(where, f"{at}.calls", "is not an object")
        for name, stats in calls.items():
            _check_stats(stats, f"{at}.calls.{name}", where)
        sites = r.get("callsites", {})
        if isinstance(sites, dict):
            for name, stats in sites.items():
                _check_stats(stats, f"{at}.callsites.{name}", where)
        elif not isinstance(sites, list):
            raise _bad(where, f"{at}.callsites", "is neither an object nor a list")
        for key in ("p2p", "trace"):
            if not isinstance(r.get(key, {}), dict):
                raise _bad(where, f"{at}.{key}", "is not an object")
    sites = d.get("callsites", [])
    if not isinstance(sites, list) or not all(isinstance(s, dict) for s in sites):
        raise _bad(where, "callsites", "is not a list of objects")
    if not isinstance(d.get("meta", {}), dict):
        raise _bad(where, "meta", "is not an object")


@dataclass
class CallStats:
    count: int
    time_s: float
    min_s: float
    max_s: float
    bytes_sent: int
    bytes_recv: int
    size_hist: dict[int, int] = field(default_factory=dict)  # bin lower bound (bytes) -> calls
    bytes_written: int = 0  # MPI-IO
    bytes_read: int = 0
    # all-to-alls: the bytes sent to the other ranks, the rank's block to itself left out
    # (bytes_sent counts every block, as mpiP does); None: not recorded (an older profile, or
    # not every call said)
    bytes_out: int | None = None

    @property
    def mean_s(self) -> float:
        return self.time_s / self.count if self.count else 0.0

    def to_json(self, hist: bool = True) -> dict[str, Any]:
        d: dict[str, Any] = {
            "count": self.count,
            "time_s": self.time_s,
            "min_s": self.min_s,
            "max_s": self.max_s,
            "bytes_sent": self.bytes_sent,
            "bytes_recv": self.bytes_recv,
            "bytes_written": self.bytes_written,
            "bytes_read": self.bytes_read,
        }
        if self.bytes_out is not None:
            d["bytes_out"] = self.bytes_out
        if hist:
            d["size_hist"] = {str(k): v for k, v in sorted(self.size_hist.items())}
        return d

    def add(self, other: CallStats) -> None:
        """Merge another's calls into these (min and max over both)."""
        if other.count:
            self.min_s = min(self.min_s, other.min_s) if self.count else other.min_s
            self.max_s = max(self.max_s, other.max_s)
        if other.count:  # known only while every merged call said
            known = self.bytes_out is not None or not self.count
            out = other.bytes_out
            self.bytes_out = None if not known or out is None else (self.bytes_out or 0) + out
        self.count += other.count
        self.time_s += other.time_s
        self.bytes_sent += other.bytes_sent
        self.bytes_recv += other.bytes_recv
        self.bytes_written += other.bytes_written
        self.bytes_read += other.bytes_read
        for k, v in other.size_hist.items():
            self.size_hist[k] = self.size_hist.get(k, 0) + v

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> CallStats:
        return cls(
            count=int(d["count"]),
            time_s=float(d["time_s"]),
            min_s=float(d.get("min_s", 0.0)),
            max_s=float(d.get("max_s", 0.0)),
            bytes_sent=int(d.get("bytes_sent", 0)),
            bytes_recv=int(d.get("bytes_recv", 0)),
            size_hist={int(k): int(v) for k, v in d.get("size_hist", {}).items()},
            bytes_written=int(d.get("bytes_written", 0)),
            bytes_read=int(d.get("bytes_read", 0)),
            bytes_out=int(d["bytes_out"]) if d.get("bytes_out") is not None else None,
        )


@dataclass
class Frame:
    """One frame of a call site: where the MPI call was made (file:line, function), or for a
    frame without debug information its module and offset there."""

    file: str | None = None
    line: int = 0
    function: str | None = None
    module: str | None = None  # C, C++, Fortran: the executable or library
    offset: str | None = None  # hex, the return address in `module` (as addr2line reads it)
    python: bool = False

    def where(self) -> str:
        if self.file and self.line:
            return f"{self.file}:{self.line}"
        if self.module:
            return f"{os.path.basename(self.module)}+{self.offset}"
        return self.offset or "?"

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"file": self.file, "line": self.line, "function": self.function}
        if self.python:
            d["language"] = "python"
        else:
            d.update(module=self.module, offset=self.offset)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Frame:
        return cls(
            file=d.get("file"),
            line=int(d.get("line") or 0),
            function=d.get("function"),
            module=d.get("module"),
            offset=d.get("offset"),
            python=d.get("language") == "python",
        )


@dataclass
class CallSite:
    """An MPI call made from one place (mpiP's call site): the call and its frames, innermost
    first (as many as --callsite-depth asked for)."""

    id: int
    call: str
    frames: list[Frame]

    def where(self) -> str:
        return self.frames[0].where() if self.frames else "?"

    def function(self) -> str:
        return (self.frames[0].function or "?") if self.frames else "?"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "call": self.call, "frames": [f.to_json() for f in self.frames]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> CallSite:
        return cls(int(d["id"]), str(d["call"]), [Frame.from_json(f) for f in d["frames"]])


@dataclass
class RankProfile:
    rank: int
    total_s: float  # MPI_Init entry to MPI_Finalize exit
    mpi_s: float  # sum of the time inside intercepted MPI calls
    calls: dict[str, CallStats]
    sent_msgs: list[int]  # point-to-point, indexed by destination MPI_COMM_WORLD rank
    sent_bytes: list[int]
    recv_msgs: list[int]  # indexed by source MPI_COMM_WORLD rank
    recv_bytes: list[int]
    host: str = ""
    pid: int = 0
    complete: bool = True  # False: written before MPI_Finalize finished (or at MPI_Abort)
    aborted: bool = False
    t_init: float = 0.0  # CLOCK_MONOTONIC seconds at MPI_Init (the trace's clock)
    t_init_wall: float = 0.0  # CLOCK_REALTIME at the same moment (aligns ranks across hosts)
    clock: str = ""  # the library's timer: "tsc" (calibrated) or "monotonic"
    trace_events: int = 0
    trace_dropped: int = 0
    trace_names: list[str] = field(default_factory=list)
    callsites: dict[int, CallStats] = field(default_factory=dict)  # by CallSite.id
    callsites_dropped: int = 0  # calls whose site did not fit the library's table
    # as the library wrote them, until callsites.resolve() numbers them across ranks
    raw_sites: list[dict[str, Any]] = field(default_factory=list)
    raw_modules: list[dict[str, Any]] = field(default_factory=list)
    callsite_depth: int = 0
    cpu_s: float | None = None  # the process's CPU time over total_s (None: an older profile)

    def to_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "host": self.host,
            "pid": self.pid,
            "complete": self.complete,
            "aborted": self.aborted,
            "total_s": self.total_s,
            "mpi_s": self.mpi_s,
            **({"cpu_s": self.cpu_s} if self.cpu_s is not None else {}),
            "calls": {k: v.to_json() for k, v in self.calls.items()},
            "p2p": {
                "sent_msgs": self.sent_msgs,
                "sent_bytes": self.sent_bytes,
                "recv_msgs": self.recv_msgs,
                "recv_bytes": self.recv_bytes,
            },
            "t_init": self.t_init,
            "t_init_wall": self.t_init_wall,
            "clock": self.clock,
            "trace": {"events": self.trace_events, "dropped": self.trace_dropped},
            "callsites": {str(k): v.to_json(hist=False) for k, v in sorted(self.callsites.items())},
            "callsites_dropped": self.callsites_dropped,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RankProfile:
        p2p = d.get("p2p", {})
        trace = d.get("trace", {})
        return cls(
            rank=int(d["rank"]),
            total_s=float(d["total_s"]),
            mpi_s=float(d["mpi_s"]),
            cpu_s=float(d["cpu_s"]) if d.get("cpu_s") is not None else None,
            calls={k: CallStats.from_json(v) for k, v in d.get("calls", {}).items()},
            sent_msgs=list(p2p.get("sent_msgs", [])),
            sent_bytes=list(p2p.get("sent_bytes", [])),
            recv_msgs=list(p2p.get("recv_msgs", [])),
            recv_bytes=list(p2p.get("recv_bytes", [])),
            host=d.get("host", ""),
            pid=int(d.get("pid", 0)),
            complete=bool(d.get("complete", True)),
            aborted=bool(d.get("aborted", False)),
            t_init=float(d.get("t_init", 0.0)),
            t_init_wall=float(d.get("t_init_wall", 0.0)),
            clock=str(d.get("clock", "")),
            trace_events=int(trace.get("events", 0)),
            trace_dropped=int(trace.get("dropped", 0)),
            trace_names=list(trace.get("names", [])),
            **_sites_from_json(d),
        )


def _sites_from_json(d: dict[str, Any]) -> dict[str, Any]:
    """A rank's call sites: raw (a list, in a rank file) or numbered (in profile.json)."""
    sites = d.get("callsites", {})
    out: dict[str, Any] = {
        "callsites_dropped": int(d.get("callsites_dropped", 0)),
        "callsite_depth": int(d.get("callsite_depth", 0)),
    }
    if isinstance(sites, list):
        out["raw_sites"] = sites
        out["raw_modules"] = list(d.get("modules", []))
    else:
        out["callsites"] = {int(k): CallStats.from_json(v) for k, v in sites.items()}
    return out


@dataclass
class Profile:
    nprocs: int
    ranks: list[RankProfile]  # sorted by rank; only the ranks that wrote a profile
    meta: dict[str, Any] = field(default_factory=dict)
    callsites: list[CallSite] = field(default_factory=list)  # by id
    callsite_depth: int = 0  # frames per site; 0: call sites were not recorded

    def site(self, site_id: int) -> CallSite:
        for s in self.callsites:
            if s.id == site_id:
                return s
        raise CloudhpcError(f"no call site {site_id} in this profile")

    @property
    def missing_ranks(self) -> list[int]:
        have = {r.rank for r in self.ranks}
        return [r for r in range(self.nprocs) if r not in have]

    def rank(self, r: int) -> RankProfile:
        for rp in self.ranks:
            if rp.rank == r:
                return rp
        if 0 <= r < self.nprocs:
            raise CloudhpcError(f"rank {r} wrote no profile (missing ranks: {self.missing_ranks})")
        raise CloudhpcError(f"--rank {r} is out of range: the run had {self.nprocs} ranks")

    def function_names(self) -> list[str]:
        return sorted({name for r in self.ranks for name in r.calls})

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "nprocs": self.nprocs,
            "missing_ranks": self.missing_ranks,
            "meta": self.meta,
            "callsite_depth": self.callsite_depth,
            "callsites": [s.to_json() for s in self.callsites],
            "ranks": [r.to_json() for r in self.ranks],
        }

    @classmethod
    def from_json(cls, d: dict[str, Any], where: str = "profile") -> Profile:
        if d.get("schema") != SCHEMA:
            raise CloudhpcError(f"{where} is not a cloudhpc profile (schema {d.get('schema')!r})")
        version = d.get("schema_version")
        if version not in READS_SCHEMA_VERSIONS:
            known = " and ".join(map(str, READS_SCHEMA_VERSIONS))
            raise CloudhpcError(
                f"{where} has profile schema version {version}; this cloudhpc reads versions "
                f"{known}"
            )
        check_profile(d, where)
        try:
            ranks = sorted((RankProfile.from_json(r) for r in d["ranks"]), key=lambda r: r.rank)
            return cls(
                nprocs=int(d["nprocs"]),
                ranks=ranks,
                meta=dict(d.get("meta", {})),
                callsites=[CallSite.from_json(s) for s in d.get("callsites", [])],
                callsite_depth=int(d.get("callsite_depth", 0)),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise CloudhpcError(f"{where} is malformed: {type(e).__name__}: {e}") from None


def _what(e: Exception) -> str:
    """A damaged field of a rank file as the user would name it (a list where an object
    belongs: 'list' has no attribute 'get')."""
    if isinstance(e, KeyError):
        return f"no {e.args[0]!r} field"
    if isinstance(e, AttributeError):
        return f"a {type(getattr(e, 'obj', None)).__name__} where an object belongs"
    return str(e)


def read_rank_dir(directory: str | os.PathLike, nprocs: int) -> Profile:
    """Merge the rank files the library wrote; ranks with no file are reported as missing."""
    ranks = []
    for entry in sorted(Path(directory).iterdir()):
        if not RANK_FILE.match(entry.name):
            continue
        try:
            d = json.loads(entry.read_text())
        except (OSError, ValueError, RecursionError) as e:
            raise CloudhpcError(f"cannot read rank profile {entry}: {e}") from None
        if d.get("format") != RANK_FORMAT or d.get("format_version") != RANK_FORMAT_VERSION:
            raise CloudhpcError(
                f"{entry} has rank format {d.get('format')!r} version {d.get('format_version')}; "
                f"this cloudhpc reads {RANK_FORMAT!r} version {RANK_FORMAT_VERSION}"
            )
        try:
            ranks.append(RankProfile.from_json(d))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise CloudhpcError(f"{entry} is malformed: {_what(e)}") from None
        nprocs = max(nprocs, int(d.get("size", 0)))
    ranks.sort(key=lambda r: r.rank)
    return Profile(nprocs=nprocs, ranks=ranks)


def load_profile(path: str | os.PathLike) -> Profile:
    """A profile.json, a record's files directory, or a result record (its files beside it)."""
    p = Path(path)
    if p.is_dir():
        p = p / "profile.json"
    elif p.suffix == ".json" and not p.name.endswith("profile.json"):
        sibling = p.with_name(p.stem + ".files") / "profile.json"
        if sibling.exists():
            p = sibling
    try:
        d = json.loads(p.read_text())
    except FileNotFoundError:
        raise CloudhpcError(f"no profile at {path}") from None
    except (OSError, ValueError, RecursionError) as e:
        raise CloudhpcError(f"cannot read profile {p}: {e}") from None
    if not isinstance(d, dict):
        raise CloudhpcError(f"{p} is not a cloudhpc profile")
    return Profile.from_json(d, where=str(p))

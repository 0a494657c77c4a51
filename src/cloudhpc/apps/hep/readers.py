"""Event readers for the hep app: ROOT trees (uproot), Parquet columns (pyarrow), structured .npy.

`scan` opens each input once to check it (tree, branches, flat numeric columns) and counts its
events; `read` returns one chunk's branches as float64 arrays. Values are binned as float64
whatever their stored type, so the reference histogram sees exactly the same numbers.
Heavy imports happen inside the functions (the CLI imports this module to build its parser).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ...atomic import atomic_path
from ...errors import CloudhpcError
from ...paths import check_input_file

FORMATS = {".root": "root", ".parquet": "parquet", ".pq": "parquet", ".npy": "npy"}


@dataclass(frozen=True)
class Source:
    path: str
    kind: str  # root | parquet | npy
    entries: int
    groups: tuple[int, ...] = ()  # parquet: rows per row group


def kind_of(path: str) -> str:
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise CloudhpcError(
            f"{path}: unknown input format {ext or '(no extension)'!r}; "
            "hep reads .root, .parquet and structured .npy files"
        )
    return FORMATS[ext]


def _unreadable(path: str, exc: BaseException) -> CloudhpcError:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return CloudhpcError(f"cannot read {path}: {text}")


def check_file(path: str) -> None:
    check_input_file(path)
    if os.path.getsize(path) == 0:
        raise CloudhpcError(f"input file is empty: {path}")


def _root_tree(path: str, tree: str):
    import uproot

    try:
        f = uproot.open(path)
    except Exception as e:
        raise _unreadable(path, e) from None
    try:
        t = f[tree]
    except Exception:
        trees = sorted(
            {k.split(";")[0] for k, c in f.classnames().items() if c in ("TTree", "ROOT::RNTuple")}
        )
        raise CloudhpcError(
            f"{path}: no tree {tree!r} (trees: {', '.join(trees) or 'none'})"
        ) from None
    if not hasattr(t, "num_entries"):
        raise CloudhpcError(f"{path}: {tree!r} is a {type(t).__name__}, not a TTree")
    return t


def scan(path: str, tree: str, branches: list[str]) -> Source:
    """Check one input and count its events; a one-line CloudhpcError for anything wrong."""
    kind = kind_of(path)
    check_file(path)
    if kind == "root":
        t = _root_tree(path, tree)
        known = set(t.keys())
        for b in branches:
            if b not in known:
                raise CloudhpcError(
                    f"{path}: tree {tree!r} has no branch {b!r} "
                    f"(branches: {', '.join(sorted(known))})"
                )
            interp = getattr(t[b], "interpretation", None)  # TTree branches (RNTuple: at read)
            if interp is not None and getattr(interp, "to_dtype", np.dtype("O")).kind not in "biuf":
                raise CloudhpcError(f"{path}: branch {b!r} is not one number per event")
        return Source(path, kind, int(t.num_entries))
    if kind == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            pf = pq.ParquetFile(path)
        except Exception as e:
            raise _unreadable(path, e) from None
        schema = pf.schema_arrow
        for b in branches:
            if b not in schema.names:
                raise CloudhpcError(f"{path}: no column {b!r} (columns: {', '.join(schema.names)})")
            typ = schema.field(b).type
            if not (pa.types.is_integer(typ) or pa.types.is_floating(typ)):
                raise CloudhpcError(f"{path}: column {b!r} is {typ}, not one number per event")
        md = pf.metadata
        groups = tuple(md.row_group(i).num_rows for i in range(md.num_row_groups))
        return Source(path, kind, int(md.num_rows), groups)
    try:
        a = np.load(path, mmap_mode="r", allow_pickle=False)
    except Exception as e:
        raise _unreadable(path, e) from None
    if a.dtype.names is None or a.ndim != 1:
        raise CloudhpcError(
            f"{path}: hep reads a 1-D structured .npy (one field per branch), "
            f"not a {a.dtype} array of shape {a.shape}"
        )
    for b in branches:
        if b not in a.dtype.names:
            raise CloudhpcError(f"{path}: no field {b!r} (fields: {', '.join(a.dtype.names)})")
        if a.dtype[b].kind not in "biuf" or a.dtype[b].shape:
            raise CloudhpcError(f"{path}: field {b!r} is {a.dtype[b]}, not one number per event")
    return Source(path, kind, int(a.shape[0]))


def chunks(src: Source, chunk_events: int) -> Iterator[tuple[int, int]]:
    """(start, stop) event ranges of about chunk_events; Parquet chunks follow row groups."""
    if src.kind == "parquet":
        start = 0
        for rows in src.groups:
            if rows:
                yield start, start + rows
            start += rows
        return
    for start in range(0, src.entries, chunk_events):
        yield start, min(src.entries, start + chunk_events)


_OPEN: dict[tuple[str, str], object] = {}  # this process's open trees, reused across chunks


def close_all() -> None:
    for t in _OPEN.values():
        t.file.close()
    _OPEN.clear()


def read(src: Source, tree: str, branches: list[str], start: int, stop: int) -> list[np.ndarray]:
    """Events [start, stop) of one input: one float64 array per branch."""
    try:
        if src.kind == "root":
            t = _OPEN.get((src.path, tree))
            if t is None:
                t = _OPEN[(src.path, tree)] = _root_tree(src.path, tree)
            arrays = t.arrays(branches, entry_start=start, entry_stop=stop, library="np")
            return [_flat(src.path, b, arrays[b]) for b in branches]
        if src.kind == "parquet":
            import pyarrow.parquet as pq

            pf = pq.ParquetFile(src.path)
            group = int(np.searchsorted(np.cumsum(src.groups), start, side="right"))
            table = pf.read_row_group(group, columns=branches)
            return [table.column(b).to_numpy().astype(np.float64) for b in branches]
        a = np.load(src.path, mmap_mode="r", allow_pickle=False)
        return [np.asarray(a[b][start:stop], dtype=np.float64) for b in branches]
    except CloudhpcError:
        raise
    except Exception as e:
        raise _unreadable(src.path, e) from None


def _flat(path: str, branch: str, values) -> np.ndarray:
    a = np.asarray(values)
    if a.dtype.kind not in "biuf" or a.ndim != 1:
        raise CloudhpcError(f"{path}: branch {branch!r} is not one number per event")
    return a.astype(np.float64)


def read_all(path: str, tree: str, branches: list[str]) -> list[np.ndarray]:
    """Every event of one input in one go, without the chunking of `read` (the reference)."""
    kind = kind_of(path)
    if kind == "root":
        import uproot

        with uproot.open(path) as f:
            arrays = f[tree].arrays(branches, library="np")
        return [np.asarray(arrays[b], dtype=np.float64) for b in branches]
    if kind == "parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(path, columns=branches)
        return [table.column(b).to_numpy().astype(np.float64) for b in branches]
    a = np.load(path, allow_pickle=False)
    return [a[b].astype(np.float64) for b in branches]


# --- synthetic events ------------------------------------------------------------------------
BRANCHES = ("mass", "pt", "eta", "phi")


def synthetic_events(n: int, seed: int, index: int) -> dict[str, np.ndarray]:
    """A Z-like peak over a falling background (mass, GeV), pt, eta, phi; float64.

    File `index` of a generated set draws from its own stream, so the events do not depend on
    how many ranks write the files."""
    rng = np.random.default_rng([seed, index])
    signal = rng.random(n) < 0.3
    mass = np.where(signal, rng.normal(91.19, 2.5, n), 20.0 + rng.exponential(40.0, n))
    return {
        "mass": mass,
        "pt": rng.exponential(25.0, n),
        "eta": rng.normal(0.0, 1.5, n),
        "phi": rng.uniform(-np.pi, np.pi, n),
    }


def write_events(path: str, kind: str, events: dict[str, np.ndarray], tree: str) -> None:
    """Write one file whole or not at all (atomic.atomic_path: a hidden name, then rename)."""
    with atomic_path(path) as tmp:
        if kind == "root":
            import uproot

            with uproot.recreate(str(tmp)) as f:
                # mktree: a TTree (assigning a dict makes an RNTuple in recent uproot)
                t = f.mktree(tree, {k: v.dtype for k, v in events.items()})
                n = len(next(iter(events.values())))
                step = 1 << 18
                for start in range(0, n, step):
                    t.extend({k: v[start : start + step] for k, v in events.items()})
        elif kind == "parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            pq.write_table(pa.table(events), str(tmp), row_group_size=1 << 18)
        else:
            n = len(next(iter(events.values())))
            rec = np.empty(n, dtype=[(k, v.dtype) for k, v in events.items()])
            for k, v in events.items():
                rec[k] = v
            with open(tmp, "wb") as fh:
                np.save(fh, rec)

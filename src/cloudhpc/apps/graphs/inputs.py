"""Edge lists: text (TSV/CSV), Parquet and .npy, checked and read.

`check_edge_file` reads headers only (before launch). Reading: a .npy file is memory-mapped and
every rank reads its own rows; Parquet and text are read whole by one rank (text: NumPy's C
parser; on a parse error the file is scanned again line by line to name the first bad line).
Every reader returns (src, dst, weight or None) with ids as int64; bad content (a malformed
line, an id that is negative or not an integer, a weight that is not a finite number) is one
CloudhpcError naming the file and the line or row."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import CloudhpcError
from ...paths import check_input_file

TEXT_SUFFIXES = (".tsv", ".txt", ".edges", ".el", ".csv")
COMMENTS = ("#", "%")

if TYPE_CHECKING:  # numpy is imported by the readers: the headers are checked without it
    import numpy as np

    Edges = tuple[np.ndarray, np.ndarray, np.ndarray | None]


def edge_format(path: str) -> str:
    suffix = Path(path).suffix.lower()
    if suffix in TEXT_SUFFIXES:
        return "text"
    if suffix == ".parquet":
        return "parquet"
    if suffix == ".npy":
        return "npy"
    raise CloudhpcError(
        f"edges file {path}: unknown format {suffix or '(no suffix)'}; "
        "give .tsv/.txt/.edges/.csv, .parquet or .npy"
    )


def check_edge_file(path: str) -> None:
    """Exists, readable, a known format whose header fits an edge list (no data read)."""
    check_input_file(path, "edges file")
    kind = edge_format(path)
    if kind == "npy":
        _open_npy(path)
    elif kind == "parquet":
        _parquet_columns(path)


def _open_npy(path: str) -> np.ndarray:
    import numpy as np

    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except Exception as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CloudhpcError(f"cannot read edges file {path} as .npy: {reason}") from None
    if arr.ndim != 2 or arr.shape[1] not in (2, 3):
        raise CloudhpcError(
            f"edges file {path} has shape {'x'.join(map(str, arr.shape))}; expected E x 2 "
            "(src, dst) or E x 3 (src, dst, weight)"
        )
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise CloudhpcError(f"edges file {path} has dtype {arr.dtype}; expected numbers")
    return arr


def _parquet_columns(path: str) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except Exception as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CloudhpcError(f"cannot read edges file {path} as Parquet: {reason}") from None
    names = schema.names
    if "src" not in names or "dst" not in names:  # never a guess at which columns are which
        raise CloudhpcError(
            f"edges file {path} has columns {', '.join(names) or '(none)'}; expected src, dst "
            "and optionally weight"
        )
    wanted = ["src", "dst"] + (["weight"] if "weight" in names else [])
    for name in wanted:
        kind = schema.field(name).type
        if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
            expected = "numbers" if name == "weight" else "integer vertex ids"
            raise CloudhpcError(
                f"edges file {path}: column {name} holds {kind}; expected {expected}"
            )
    return wanted


def edge_rows(path: str) -> int:
    """Rows of a .npy or Parquet edge file (for splitting it over the ranks)."""
    if edge_format(path) == "npy":
        return int(_open_npy(path).shape[0])
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(path).metadata.num_rows)


def read_block(path: str, lo: int, hi: int) -> Edges:
    """Rows [lo, hi) of a .npy or Parquet edge file."""
    import numpy as np

    if edge_format(path) == "npy":
        table = np.asarray(_open_npy(path)[lo:hi])
        cols = [table[:, i] for i in range(table.shape[1])]
    else:
        import pyarrow.parquet as pq

        names = _parquet_columns(path)
        t = pq.read_table(path, columns=names).slice(lo, hi - lo)
        try:
            cols = [t.column(n).to_numpy() for n in names]
        except Exception as exc:  # nulls, strings...
            raise CloudhpcError(f"edges file {path}: column {exc}") from None
    return _checked(path, cols, lambda r: f"row {lo + r}")


def read_text(path: str) -> Edges:
    """A whole text edge list."""
    import numpy as np

    header, first = _header_line(path)
    delimiter = "," if path.lower().endswith(".csv") else None
    try:
        table = np.loadtxt(
            path,
            dtype=np.float64,
            comments=COMMENTS,
            delimiter=delimiter,
            skiprows=header + 1 if header >= 0 else 0,
            ndmin=2,
        )
    except (ValueError, IndexError):
        raise CloudhpcError(_first_bad_line(path, delimiter, header)) from None
    if table.size == 0:
        table = np.empty((0, 2))
    if table.shape[1] not in (2, 3):
        raise CloudhpcError(
            f"edges file {path} line {first + 1}: {table.shape[1]} fields; "
            "expected 'src dst' or 'src dst weight'"
        )
    cols = [table[:, i] for i in range(table.shape[1])]
    return _checked(path, cols, lambda r: f"line {_data_line(path, r, header)}")


def _lines(path: str):
    with open(path, encoding="utf-8", errors="replace") as f:
        yield from enumerate(f, start=1)


def _is_data(text: str) -> bool:
    s = text.strip()
    return bool(s) and not s.startswith(COMMENTS)


def _header_line(path: str) -> tuple[int, int]:
    """(0-based index of a header line or -1, 0-based index of the first data line)."""
    for n, line in _lines(path):
        if _is_data(line):
            first = line.replace(",", " ").split()[0]
            try:
                float(first)
            except ValueError:
                return n - 1, n
            return -1, n - 1
    return -1, 0


def _data_line(path: str, row: int, header: int) -> int:
    """The file line number (1-based) of data row `row`."""
    seen = 0
    for n, line in _lines(path):
        if n - 1 <= header or not _is_data(line):
            continue
        if seen == row:
            return n
        seen += 1
    return -1


def _first_bad_line(path: str, delimiter: str | None, header: int) -> str:
    width = None
    for n, line in _lines(path):
        if n - 1 <= header or not _is_data(line):
            continue
        fields = line.strip().split(delimiter)
        fields = [f.strip() for f in fields]
        try:
            [float(f) for f in fields]
            ok = len(fields) in (2, 3) and (width is None or len(fields) == width)
        except ValueError:
            ok = False
        if not ok:
            shown = line.strip()[:60]
            return (
                f"edges file {path} line {n}: malformed edge {shown!r}; expected 'src dst' or "
                f"'src dst weight'{' (the same on every line)' if width else ''}"
            )
        width = len(fields)
    return f"edges file {path}: cannot parse it as an edge list"


def _checked(path: str, cols: list[np.ndarray], where) -> Edges:
    """int64 ids (non-negative integers) and finite float64 weights, or one line on the first
    bad one."""
    import numpy as np

    ids = []
    for c in cols[:2]:
        c = np.asarray(c)
        if np.issubdtype(c.dtype, np.floating):
            bad = ~np.isfinite(c) | (c < 0) | (c != np.floor(c)) | (c >= 2.0**62)
        else:
            bad = c < 0
        if bad.any():
            r = int(np.argmax(bad))
            raise CloudhpcError(
                f"edges file {path} {where(r)}: vertex id {_number(c[r])} out of range "
                "(ids are integers >= 0)"
            )
        ids.append(c.astype(np.int64))
    w = None
    if len(cols) > 2:
        w = np.asarray(cols[2], dtype=np.float64)
        bad = ~np.isfinite(w)
        if bad.any():
            r = int(np.argmax(bad))
            raise CloudhpcError(
                f"edges file {path} {where(r)}: weight {_number(w[r])} is not a number"
            )
    return ids[0], ids[1], w


def _number(x) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else repr(x)

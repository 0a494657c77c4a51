"""Pictures of a profile (PNG and SVG): the time of the top MPI calls on each rank (004's "time
distribution graph", chapter 6) and the point-to-point communication matrix as a heat map."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..atomic import atomic_path
from ..text import count
from .model import Profile
from .report import APP_ROW, MPI_TOTAL_ROW, comm_matrix


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, stem: Path) -> list[Path]:
    paths = []
    for ext in ("png", "svg"):
        final = stem.with_suffix(f".{ext}")
        with atomic_path(final) as tmp:
            fig.savefig(tmp, dpi=120, bbox_inches="tight")
        paths.append(final)
    return paths


def top_functions(profile: Profile, top: int) -> list[str]:
    totals: dict[str, float] = {}
    for rp in profile.ranks:
        for name, c in rp.calls.items():
            totals[name] = totals.get(name, 0.0) + c.time_s
    return sorted(totals, key=lambda n: -totals[n])[:top]


def time_distribution(profile: Profile, stem: str | os.PathLike, top: int = 8) -> list[Path]:
    """Grouped bars: for each of the `top` MPI functions, its exclusive time on every rank."""
    plt = _pyplot()
    names = top_functions(profile, top)
    ranks = profile.ranks
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(names) + 2), 4.0))
    if names and ranks:
        width = 0.8 / len(ranks)
        x = np.arange(len(names))
        for i, rp in enumerate(ranks):
            ms = [rp.calls[n].time_s * 1e3 if n in rp.calls else 0.0 for n in names]
            ax.bar(x + i * width - 0.4 + width / 2, ms, width, label=f"rank {rp.rank}")
        ax.set_xticks(x, [n.removeprefix("MPI_") for n in names], rotation=30, ha="right")
        ax.legend(fontsize="small", ncol=max(1, len(ranks) // 8))
    ax.set_ylabel("exclusive time (ms)")
    missing = profile.missing_ranks
    title = f"Time distribution of the top MPI calls over {count(profile.nprocs, 'rank')}"
    if missing:
        title += f" (no profile from ranks {', '.join(map(str, missing))})"
    ax.set_title(title, fontsize="medium")
    paths = _save(fig, Path(stem))
    plt.close(fig)
    return paths


def matrix_heatmap(profile: Profile, stem: str | os.PathLike) -> list[Path]:
    """Bytes sent point-to-point from each source rank (row) to each destination (column)."""
    plt = _pyplot()
    from matplotlib.colors import LogNorm

    msgs, nbytes = comm_matrix(profile)
    p = profile.nprocs
    fig, ax = plt.subplots(figsize=(max(4.0, 0.5 * p + 3), max(3.5, 0.5 * p + 2.5)))
    data = np.where(nbytes > 0, nbytes, np.nan).astype(float)
    if np.isfinite(data).any():
        im = ax.imshow(data, cmap="viridis", norm=LogNorm(), origin="upper")
        fig.colorbar(im, ax=ax, label="bytes sent")
    else:
        ax.imshow(np.zeros((p, p)), cmap="Greys", vmin=0, vmax=1)
    if p <= 16:
        for i in range(p):
            for j in range(p):
                if msgs[i, j]:
                    ax.text(
                        j, i, f"{msgs[i, j]}", ha="center", va="center", fontsize=7, color="white"
                    )
    ax.set_xlabel("destination rank")
    ax.set_ylabel("source rank")
    ax.set_xticks(range(p))
    ax.set_yticks(range(p))
    ax.set_title("P2P bytes (numbers: messages)", fontsize="medium")
    paths = _save(fig, Path(stem))
    plt.close(fig)
    return paths


def compare_figure(rows: list[dict], labels: tuple[str, str], top: int = 10):
    """The B/A time ratio of each MPI function on a log axis (left: a bar from 1 to the ratio,
    its value written at its end), and the two absolute mean times per rank beside it (right, log
    axis), for the `top` functions that differ most (rows as report.compare_rows gives them,
    sorted by |B - A|). All MPI calls together and the application's own time are said in the
    title, not drawn as functions that would flatten the others; a function one side never
    called has no ratio (its row says which side)."""
    plt = _pyplot()
    whole = {r["Name"]: r for r in rows if r["Name"] in (MPI_TOTAL_ROW, APP_ROW)}
    rows = [r for r in rows if r["Name"] not in whole][:top]
    rows = rows[::-1]  # the largest difference at the top
    fig, (rax, tax) = plt.subplots(
        1, 2, figsize=(11.0, max(2.5, 0.42 * len(rows) + 1.6)), sharey=True,
        gridspec_kw={"width_ratios": [3, 2]},
    )  # fmt: skip
    y = np.arange(len(rows))
    names = [r["Name"].removeprefix("MPI_") for r in rows]
    ratios = [r["B/A time"] if r["A msec"] > 0 and r["B msec"] > 0 else None for r in rows]
    shown = [q for q in ratios if q is not None]
    for i, (row, q) in enumerate(zip(rows, ratios, strict=True)):
        if q is None:
            side = "B" if row["A msec"] == 0 else "A"
            rax.text(1, i, f" only in {side}", va="center", fontsize="small", color="#555")
            continue
        rax.barh(i, q - 1, left=1, height=0.6, color="#d62728" if q > 1 else "#2ca02c")
        rax.text(q, i, f" {q:.3g}x ", va="center", ha="left" if q >= 1 else "right",
                 fontsize="small")  # fmt: skip
    rax.axvline(1, color="#333", linewidth=0.8)
    rax.set_xscale("log")
    low, high = min([*shown, 1.0]), max([*shown, 1.0])
    rax.set_xlim(low / 2, high * 2)
    rax.set_yticks(y, names)
    rax.set_xlabel("B/A mean exclusive time (log; > 1: B slower)")
    rax.set_ylabel("MPI function")
    width = 0.38
    for k, (col, side) in enumerate((("A msec", labels[0]), ("B msec", labels[1]))):
        ms = [r[col] if r[col] > 0 else np.nan for r in rows]
        tax.barh(y + (k - 0.5) * width, ms, width, label=side.split(":")[0])
    if any(r["A msec"] > 0 or r["B msec"] > 0 for r in rows):
        tax.set_xscale("log")
    tax.set_xlabel("mean exclusive time per rank (ms, log)")
    tax.legend(fontsize="small", loc="lower right")
    title = f"B/A per MPI function, the {len(rows)} that differ most\n{labels[0]}\n{labels[1]}"
    for name, what in ((MPI_TOTAL_ROW, "all MPI calls"), (APP_ROW, "the application outside MPI")):
        r = whole.get(name)
        if r and r["A msec"] > 0:
            title += (
                f"\n{what}: {r['B msec'] / r['A msec']:.3g}x ({r['A msec']:.4g} ms -> "
                f"{r['B msec']:.4g} ms per rank)"
            )
    fig.suptitle(title, fontsize="medium")
    fig.tight_layout()
    return fig


def compare_bars(
    rows: list[dict], stem: str | os.PathLike, labels: tuple[str, str], top: int = 10
) -> list[Path]:
    """compare_figure() as STEM.png and STEM.svg (004, chapter 7: the same calls in a physical
    and a virtual cluster)."""
    plt = _pyplot()
    fig = compare_figure(rows, labels, top)
    paths = _save(fig, Path(stem))
    plt.close(fig)
    return paths

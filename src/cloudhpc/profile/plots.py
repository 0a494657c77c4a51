"""Pictures of a profile (PNG and SVG): the time of the top MPI calls on each rank (004's "time
distribution graph", chapter 6) and the point-to-point communication matrix as a heat map."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..atomic import atomic_path
from .model import Profile
from .report import comm_matrix


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
    title = f"Time distribution of the top MPI calls over {profile.nprocs} ranks"
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


def compare_bars(
    rows: list[dict], stem: str | os.PathLike, labels: tuple[str, str], top: int = 10
) -> list[Path]:
    """Mean exclusive time per rank of the functions that differ most, A and B side by side
    (004, chapter 7: the same calls in a physical and a virtual cluster)."""
    plt = _pyplot()
    rows = rows[:top]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(rows) + 2), 4.0))
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r["A msec"] for r in rows], 0.4, label=labels[0])
    ax.bar(x + 0.2, [r["B msec"] for r in rows], 0.4, label=labels[1])
    names = [r["Name"].removeprefix("MPI_") for r in rows]
    ax.set_xticks(x, names, rotation=30, ha="right")
    ax.set_ylabel("mean exclusive time per rank (ms)")
    ax.set_title("A vs B, sorted by |B - A|", fontsize="medium")
    ax.legend(fontsize="small")
    paths = _save(fig, Path(stem))
    plt.close(fig)
    return paths

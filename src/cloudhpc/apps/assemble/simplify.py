"""Graph simplification in the order of seed 002 section IV.B: compression of non-branching
chains, tip removal, bubble removal, compression again (repeated while anything is removed).

The graph is the k-mer graph (graph_kernels); compression builds the unitigs (maximal
non-branching paths), tips and bubbles are unitigs, and removing one removes its k-mers and the
edges that touch them, so the next compression merges what the removal left non-branching.
Coverage (the mean k-mer count) is carried through every merge.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .graph_kernels import (
    all_unitig_codes,
    bubble_candidates,
    build_unitigs,
    find_tips,
    kill_nodes,
    pop_bubbles,
    unitig_coverage,
    unitig_links,
    unitig_minkey,
)


@dataclass
class Graph:
    """The k-mer graph: sorted canonical keys, counts, edge masks and which nodes remain."""

    k: int
    keys: np.ndarray
    counts: np.ndarray
    masks: np.ndarray
    alive: np.ndarray = field(default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.alive is None:
            self.alive = np.ones(len(self.keys), dtype=np.bool_)

    @property
    def nodes(self) -> int:
        return int(self.alive.sum())

    @property
    def edges(self) -> int:
        """Edges between remaining nodes (each stored at both ends)."""
        m = self.masks[self.alive]
        return int(np.unpackbits(m[:, None], axis=1).sum()) // 2


@dataclass
class Unitigs:
    """The compressed graph: unitig u is path[starts[u]:starts[u+1]] (nodes, orientations)."""

    path: np.ndarray
    porient: np.ndarray
    starts: np.ndarray
    uid: np.ndarray
    links: np.ndarray
    deg: np.ndarray

    def __len__(self) -> int:
        return len(self.starts) - 1

    @property
    def nodes_per_unitig(self) -> np.ndarray:
        return np.diff(self.starts)

    def nodes_of(self, which: np.ndarray) -> np.ndarray:
        """The k-mer nodes of the unitigs marked in the boolean array `which`."""
        sel = np.repeat(which, self.nodes_per_unitig)
        return self.path[sel]


def compress(g: Graph) -> Unitigs:
    path, porient, starts, uid, _ = build_unitigs(g.keys, g.masks, g.alive, g.k)
    links, deg = unitig_links(g.keys, g.masks, path, porient, starts, uid, g.k)
    return Unitigs(path, porient, starts, uid, links, deg)


def remove_tips(g: Graph, u: Unitigs, max_len: int) -> int:
    """Remove dead ends shorter than max_len bases (seed: 2k); returns how many."""
    tips = find_tips(u.links, u.deg, u.nodes_per_unitig, g.k, max_len)
    kill_nodes(g.keys, g.masks, g.alive, u.nodes_of(tips), g.k)
    return int(tips.sum())


def remove_low_coverage(g: Graph, u: Unitigs, cutoff: float) -> int:
    """Remove unitigs whose mean k-mer coverage is below cutoff (Velvet's -cov_cutoff): error
    paths that join two parts of the graph (neither tips nor bubbles) and keep a branch open."""
    if cutoff <= 0:
        return 0
    low = unitig_coverage(g.counts, u.path, u.starts) < cutoff
    kill_nodes(g.keys, g.masks, g.alive, u.nodes_of(low), g.k)
    return int(low.sum())


def remove_bubbles(g: Graph, u: Unitigs, max_len: int, max_diff: int, min_identity: float) -> int:
    """Among paths with the same predecessor and successor keep the one of highest coverage;
    remove the others within the length (max_len, max_diff) and identity bounds."""
    keys, flip, ok = bubble_candidates(u.links, u.deg, u.nodes_per_unitig, g.k, max_len)
    cand = np.flatnonzero(ok)
    if len(cand) < 2:
        return 0
    ck = keys[cand]
    order = cand[np.lexsort((ck[:, 3], ck[:, 2], ck[:, 1], ck[:, 0]))]
    cov = (unitig_coverage(g.counts, u.path, u.starts) * 1e6).astype(np.int64)  # as the BSP's
    minkey = unitig_minkey(g.keys, u.path, u.starts)
    codes, offs = all_unitig_codes(g.keys, u.path, u.porient, u.starts, g.k)
    remove = pop_bubbles(order, keys, flip, cov, minkey, codes, offs, max_diff, min_identity)
    kill_nodes(g.keys, g.masks, g.alive, u.nodes_of(remove), g.k)
    return int(remove.sum())

"""The superstep loop: compute, exchange messages, reduce aggregators and counts, apply
mutations, run the master; until every vertex has voted to halt with no message in flight, the
master halts, or the superstep limit."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...engines.base import Engine
from ...errors import CloudhpcError
from .._timing import PhaseTimer, timer_or_null
from .messages import Outbox
from .mutations import Mutations
from .partition import Partition
from .program import AGG_OPS, Inbox, Master, Superstep, VertexProgram

SPMD_ONLY = "the bsp model runs on SPMD engines (--engine mpi or serial), not on {}"


@dataclass
class BSPResult:
    supersteps: int
    halted_by: str  # "vote" (all halted, no messages), "master", "limit"
    aggregated: dict[str, float]
    phase: Any
    globals: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)  # one per superstep

    @property
    def messages(self) -> int:
        return sum(r["messages"] for r in self.rows)


def run_bsp(
    engine: Engine,
    part: Partition,
    program: VertexProgram,
    *,
    max_supersteps: int | None = None,
    timer: PhaseTimer | None = None,
    progress: Callable[[int, int], None] | None = None,
    phase: Any = 0,
) -> BSPResult:
    """Run `program` on the graph (collective: every rank calls it with its partition).

    Per superstep the record row holds the live `vertices`, `active` vertices, `messages` sent
    (before combining), `delivered` (after), `dropped` (to vertices that do not exist), the
    mutations and the seconds of the compute and communicate phases (maximum over ranks)."""
    if not engine.spmd:
        raise CloudhpcError(SPMD_ONLY.format(engine.name))
    for name, op in program.aggregators.items():
        if op not in AGG_OPS:
            raise ValueError(f"aggregator {name!r}: unknown op {op!r}; known: {AGG_OPS}")
    timer = timer_or_null(timer)
    limit = int(max_supersteps if max_supersteps is not None else program.max_supersteps)
    program.init(part)
    halted = ~part.alive.copy()
    inbox = Inbox.empty(part.n_local)
    aggregated: dict[str, float] = {}
    globals_: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    halted_by = "limit"
    names = sorted(program.aggregators)
    s = 0
    while s < limit:
        wake = inbox.has & part.alive
        halted[wake] = False
        active = part.alive & ~halted
        outbox = Outbox(engine, part, program)
        mutations = Mutations()
        step = Superstep(
            s, phase, part, active, halted, inbox, aggregated, globals_, outbox, mutations, program
        )
        t0 = time.perf_counter()
        with timer.phase("compute"):
            program.compute(step)
        t1 = time.perf_counter()
        with timer.phase("communicate"):
            inbox = outbox.deliver()
            local = step._aggregates
            sums = [
                np.count_nonzero(active),
                outbox.made,
                inbox.delivered,
                mutations.count,
                np.count_nonzero(part.alive),
            ]
            sums += [local.get(n, 0.0) for n in names if program.aggregators[n] == "sum"]
            tot = engine.allreduce(np.array(sums, dtype=np.float64), "sum")
            aggregated = _reduce_others(engine, program, names, local)
            sum_names = [n for n in names if program.aggregators[n] == "sum"]
            aggregated.update({n: float(v) for n, v in zip(sum_names, tot[5:], strict=True)})
        t2 = time.perf_counter()
        row = {
            "superstep": s,
            "vertices": int(tot[4]),
            "active": int(tot[0]),
            "messages": int(tot[1]),
            "delivered": int(tot[2]),
            "mutations": int(tot[3]),
        }
        if tot[3] > 0:
            with timer.phase("mutate"):
                row.update(mutations.apply(engine, part, program))
                inbox.has &= part.alive
        next_active = np.count_nonzero(part.alive & (~halted | inbox.has))
        counts = engine.allreduce(np.array([next_active, np.count_nonzero(part.alive)]), "sum")
        times = engine.allreduce(np.array([t1 - t0, t2 - t1]), "max")
        row.update(compute_s=float(times[0]), communicate_s=float(times[1]))
        rows.append(row)
        master = Master(
            superstep=s,
            phase=phase,
            aggregated=aggregated,
            active=int(counts[0]),
            messages=int(tot[1]),
            vertices=int(counts[1]),
            globals=globals_,
        )
        program.master(master)
        phase, globals_ = master.phase, master.globals
        s += 1
        if progress is not None:
            progress(s, limit)
        if master.woken:
            halted[:] = ~part.alive
        if master.halted:
            halted_by = "master"
            break
        if counts[0] == 0 and not master.woken:
            halted_by = "vote"
            break
    return BSPResult(s, halted_by, aggregated, phase, globals_, rows)


def _reduce_others(engine: Engine, program, names, local) -> dict[str, float]:
    out = {}
    for op in ("min", "max"):
        mine = [n for n in names if program.aggregators[n] == op]
        if not mine:
            continue
        ident = np.inf if op == "min" else -np.inf
        vals = np.array([local.get(n, ident) for n in mine], dtype=np.float64)
        out.update(zip(mine, map(float, engine.allreduce(vals, op)), strict=True))
    return out

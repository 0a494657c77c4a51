"""The superstep loop: compute, exchange messages, reduce aggregators and counts, apply
mutations, run the master; until every vertex has voted to halt with no message in flight, the
master halts, or the superstep limit.

The path messages along edges take is chosen from what the program declares: a built-in combiner
(sum, min, max) on one-value messages takes the sparse-product path (edgeplan.py: a plan built
once per graph, collectively, and again after mutations); any other program the general path
(messages by id, combined by hashing). A program declaring min-label propagation (min_label)
on an undirected graph takes the graph-centric path instead (graphcentric.py: local components
first, then labels across ranks only). The result says which path ran and how the edges were
placed."""

from __future__ import annotations

import inspect
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...engines.base import Engine
from ...errors import CloudhpcError
from .._timing import PhaseTimer, timer_or_null
from .checkpoints import BspCheckpoints
from .edgekernels import frontier_work
from .edgeplan import DENSE, DIRECTIONS, OPS, PULL, PUSH, EdgePlan
from .exchange import Wire
from .graphcentric import NAME as GRAPH_CENTRIC
from .graphcentric import declared, reason_not, run_graph_centric
from .messages import Outbox
from .mutations import Mutations
from .partition import Partition
from .placement import source_cut
from .program import AGG_OPS, Inbox, Master, Superstep, VertexProgram
from .pushkernels import frontier_edges
from .sparsepush import PUSH_SPARSE, SparsePush

SPMD_ONLY = "the bsp model runs on SPMD engines (--engine mpi or serial), not on {}"
PATHS = ("auto", "graph-centric", "fast", "general")
_LOCAL = 10  # the columns of local_rows
_RUSAGE = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)  # Linux: the thread's own


@dataclass
class BSPResult:
    supersteps: int
    halted_by: str  # "vote" (all halted, no messages), "master", "limit"
    aggregated: dict[str, float]
    phase: Any
    globals: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)  # one per superstep
    resumed_from: int = 0  # the checkpoint's superstep this run started from (0: the start)
    # "graph-centric": local components, labels across ranks (graphcentric.py); "fast": the
    # sparse-product path; "general": messages by id
    path: str = "general"
    partitioning: dict[str, Any] = field(default_factory=dict)  # placement, edges per rank
    # per figure ("compute_s", "communicate_s", "wait_s", "sent", "compute_cpu_s"), per rank, per
    # superstep: what each rank did (the rows hold the slowest); "sent": the rows it sent to other
    # ranks; "compute_cpu_s": the compute's thread CPU time (with the plan's CSC build: a rank
    # descheduled on a shared machine loses wall time, not CPU time; memory stalls count);
    # "compute_switches": the times the kernel took the CPU from it during the compute (another
    # process, or the other rank on the same vCPU: cloudhpc's ranks are not bound)
    ranks: dict[str, list[list[float]]] = field(default_factory=dict)
    # a program declaring min-label propagation that ran vertex-centric: why (else "")
    path_note: str = ""

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
    path: str = "auto",
    direction: str = "auto",
    split: bool | None = None,
) -> BSPResult:
    """Run `program` on the graph (collective: every rank calls it with its partition).

    Per superstep the record row holds the live `vertices`, `active` vertices, `messages` sent
    (before combining), `delivered` (after: rows received on the general path, vertices reached
    on the sparse-product path), the mutations, the seconds of the compute and communicate
    phases (maximum over ranks) and the `direction` messages along edges took ("pull", "push",
    "pull+push" when ranks differed, "" when none were sent). `path`: "auto" (the graph-centric
    path for a program declaring min_label where it applies (graphcentric.py), else the
    sparse-product path when the program's combiner allows it), "graph-centric" or "fast"
    (insist), or "general"; "fast" and "general" run a min_label program vertex-centric;
    `direction`: "auto" (Ligra's rule, per rank and superstep), "pull" or "push"; `split`: None
    (placement by the measured degrees), True/False (split hubs, or never; tests). The plan's
    CSC, built at a rank's first pull, is timed as phase `plan` and left out of that superstep's
    compute_s (the phase `compute` holds it too)."""
    if not engine.spmd:
        raise CloudhpcError(SPMD_ONLY.format(engine.name))
    for name, op in program.aggregators.items():
        if op not in AGG_OPS:
            raise ValueError(f"aggregator {name!r}: unknown op {op!r}; known: {AGG_OPS}")
    if path not in PATHS or direction not in DIRECTIONS:
        raise ValueError(f"path {path!r}, direction {direction!r}: see run_bsp's doc")
    fast = _fast_path(program)
    if path == "fast" and not fast:
        raise ValueError("path 'fast' needs a combiner sum, min or max and message_width 1")
    if path == "graph-centric" and declared(program) is None:
        raise ValueError("path 'graph-centric' needs a program declaring min_label")
    fast = fast and path != "general"
    timer = timer_or_null(timer)
    limit = int(max_supersteps if max_supersteps is not None else program.max_supersteps)
    program.init(part)
    wire = Wire(engine)
    halted = ~part.alive.copy()
    inbox = Inbox.empty(part.n_local)
    aggregated: dict[str, float] = {}
    globals_: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    # this rank's compute and communicate seconds, delivered, pulled, pushed, waited, sent
    local_rows: list[tuple] = []
    halted_by = "limit"
    by_op = {op: sorted(n for n, o in program.aggregators.items() if o == op) for op in AGG_OPS}
    n_sum, n_max = len(by_op["sum"]), len(by_op["max"])
    partitioning: dict[str, Any] = {}
    s = 0
    # --checkpoint-every K: the partition's state at a superstep barrier (checkpoints.py)
    checkpoints = BspCheckpoints.of(engine, program, timer)
    restored = checkpoints.resume(part, program, timer) if checkpoints is not None else None
    if restored is not None:
        s, phase, globals_ = restored.superstep, restored.phase, restored.globals
        aggregated, rows, halted, inbox = (
            restored.aggregated, restored.rows, restored.halted, restored.inbox
        )  # fmt: skip
        saved = restored.local_rows
        # (a checkpoint of an earlier version kept fewer columns: zeros for the rest)
        zeros = [(0.0,) * _LOCAL] * s
        local_rows = zeros if saved is None else [(*r, *(0.0,) * (_LOCAL - len(r))) for r in saved]
    resumed_from = s
    note = ""
    if declared(program) is not None:
        note = reason_not(part, program, checkpoints) or ""
        if path == "graph-centric" and note:
            raise ValueError(f"path 'graph-centric' does not apply: {note}")
        if not note and path in ("auto", "graph-centric"):
            s, halted_by, rows, local_rows, partitioning = run_graph_centric(
                engine, part, program, timer, limit, progress
            )
            ranks = _add_rank_figures(engine, rows, local_rows)
            return BSPResult(
                s, halted_by, {}, phase, {}, rows, 0, GRAPH_CENTRIC, partitioning, ranks
            )
        note = note or f"path {path!r} asked for"
    # the plan is built before the first superstep for an explicit pull or push; otherwise
    # each superstep's sends pick their router once known (Outbox.settle): the push without a
    # plan while every rank's frontier is sparse, the plan (built then) when one turns dense;
    # from then on the plan's own per-rank choice of pull or push, as with the plan built
    # first (no agreement per superstep: PageRank's supersteps cost what they did)
    eager = fast and direction in ("pull", "push")
    routes = Routes(engine, part, program, split, timer, direction) if fast and not eager else None
    lazy = routes
    n_alive = int(np.count_nonzero(part.alive))
    asleep = False  # every vertex voted to halt in the superstep that ended (none woken since)
    while s < limit:
        if checkpoints is not None:
            checkpoints.begin(s)
        plan = _plan(engine, part, program, split, timer) if eager else None
        if plan is not None:
            plan.direction = direction
            plan.timer = timer
            partitioning = plan.record()
        if asleep and inbox.reached is not None:
            # only the vertices the inbox reached wake (live ones: the push delivers to those):
            # no pass over every vertex
            active: np.ndarray = inbox.reached
            halted[active] = False
            n_active = len(active)
        else:
            # a message wakes a live vertex (as halted[wake] = False, without the boolean-mask
            # assignment's scatter: 1.6 ms of a PageRank iteration's 2 ms of such passes at 1M
            # vertices)
            np.logical_and(halted, ~(inbox.has & part.alive), out=halted)
            active = part.alive & ~halted
            n_active = int(np.count_nonzero(active))
        outbox = Outbox(engine, part, program, plan, routes)
        mutations = Mutations()
        step = Superstep(
            s, phase, part, active, halted, inbox, aggregated, globals_, outbox, mutations, program
        )
        t0, c0, v0 = time.perf_counter(), time.thread_time(), _switches()
        with timer.phase("compute"):
            program.compute(step)
            agreed, built = outbox.settle()  # (the agreement's wait, the lazy plan's build)
        engine.fault_point(s)  # --inject-failure ITER:RANK: this rank dies at superstep ITER
        t1, c1, v1 = time.perf_counter(), time.thread_time(), _switches()
        if outbox.plan is not None and routes is not None:
            partitioning = outbox.plan.record()
            routes.used_at, eager, routes = s, True, None
        unhalted = 0 if step.all_halted else int(np.count_nonzero(part.alive & ~halted))
        with timer.phase("communicate"):
            # one Alltoall carries everything the ranks must agree on: the rows each sends to
            # each (messages by id and sparse-product rows), whether the sparse product ran and
            # whether only flagged slots travel, the counts and the aggregators; then only the
            # exchanges that carry something run
            counts = outbox.prepare()
            local = step._aggregates
            common = [
                counts.sum(),
                outbox.plan_used,
                outbox.plan_partial,
                n_active,
                outbox.made,
                unhalted,
                mutations.count,
                n_alive,
            ]
            common += [local.get(n, 0.0) for n in by_op["sum"]]
            common += [local.get(n, -np.inf) for n in by_op["max"]]
            common += [-local.get(n, np.inf) for n in by_op["min"]]
            header = np.empty((engine.size, 2 + len(common)), dtype=np.float64)
            header[:, 0] = counts
            header[:, 1] = outbox.plan_counts
            header[:, 2:] = common
            tw = time.perf_counter()
            got = wire.alltoall(header)  # the first barrier: a rank that finished early waits here
            waited = time.perf_counter() - tw
            rcounts = got[:, 0].astype(np.int64)
            plan_rcounts = got[:, 1].astype(np.int64)
            tot = got[:, 2:10].sum(axis=0)
            flags = got[:, 3:5].max(axis=0)
            inbox = outbox.deliver(
                wire, rcounts, tot[0] > 0, bool(flags[0]), bool(flags[1]), plan_rcounts
            )
        t2 = time.perf_counter()
        router = outbox.router
        directions = router.directions if router is not None else 0
        # the plan's build and its CSC's: phase plan, not compute; the agreement's wait:
        # communicate, a wait
        index_s = (router.index_s if router is not None else 0.0) + built + agreed
        # rows sent to other ranks (messages by id and the product's combined values)
        sent = int(counts.sum() - counts[engine.rank])
        sent += int(outbox.plan_counts.sum() - outbox.plan_counts[engine.rank])
        local_rows.append(
            (t1 - t0 - index_s, t2 - t1 + agreed, inbox.delivered, directions & PULL,
             (directions & PUSH) >> 1, waited + agreed, sent, c1 - c0, v1 - v0,
             (directions & PUSH_SPARSE) >> 2)
        )  # fmt: skip
        aggs = got[:, 10:]
        aggregated = dict(zip(by_op["sum"], map(float, aggs[:, :n_sum].sum(axis=0)), strict=True))
        top = aggs[:, n_sum:].max(axis=0) if aggs.shape[1] > n_sum else np.empty(0)
        aggregated.update(zip(by_op["max"], map(float, top[:n_max]), strict=True))
        aggregated.update(zip(by_op["min"], (-float(x) for x in top[n_max:]), strict=True))
        row = {
            "superstep": s,
            "vertices": int(tot[7]),
            "active": int(tot[3]),
            "messages": int(tot[4]),
            "mutations": int(tot[6]),
        }
        unhalted, alive_next = int(tot[5]), int(tot[7])
        if tot[6] > 0:
            with timer.phase("mutate"):
                row.update(mutations.apply(engine, part, program))
                inbox.has &= part.alive
                after = engine.allreduce(
                    np.array(
                        [np.count_nonzero(part.alive & ~halted), np.count_nonzero(part.alive)]
                    ),
                    "sum",
                )
            unhalted, alive_next = int(after[0]), int(after[1])
            n_alive = int(np.count_nonzero(part.alive))
        rows.append(row)
        master = Master(
            superstep=s,
            phase=phase,
            aggregated=aggregated,
            active=unhalted,
            messages=int(tot[4]),
            vertices=alive_next,
            globals=globals_,
        )
        program.master(master)
        phase, globals_ = master.phase, master.globals
        s += 1
        if progress is not None:
            progress(s, limit)
        if master.woken:
            halted[:] = ~part.alive
        asleep = step.all_halted and not master.woken and tot[6] == 0
        voted = unhalted == 0 and master.messages == 0 and not master.woken
        if checkpoints is not None:
            meta = {"phase": phase, "globals": globals_, "aggregated": aggregated, "rows": rows}
            ending = master.halted or voted or s >= limit
            checkpoints.after(s, ending, part, program, halted, inbox, local_rows, meta)
        if master.halted:
            halted_by = "master"
            break
        if voted:
            halted_by = "vote"
            break
    if checkpoints is not None:
        checkpoints.finish()
    ranks = _add_rank_figures(engine, rows, local_rows)
    if not fast or not partitioning:  # no plan: every edge computed at its source's rank
        partitioning = source_cut(engine, part.n_edges)
    if lazy is not None:  # the superstep the plan was first used at (None: never built)
        partitioning["plan_superstep"] = lazy.used_at
    path_taken = "fast" if fast else "general"
    return BSPResult(
        s, halted_by, aggregated, phase, globals_, rows, resumed_from, path_taken, partitioning,
        ranks, note,
    )  # fmt: skip


class Routes:
    """A run's routers of messages along edges when none is forced: the push without a plan
    (sparsepush.py), made at the start, and the plan (edgeplan.py), built at the first superstep
    in which some rank's frontier is dense by Ligra's rule (its vertices and their out-edges
    above the rank's edges / DENSE); "push-sparse" never builds it."""

    def __init__(self, engine, part: Partition, program, split, timer, direction: str) -> None:
        self.engine, self.part, self.program = engine, part, program
        self.split, self.timer, self.direction = split, timer, direction
        combiner = inspect.getattr_static(program, "combiner")
        self.sparse = SparsePush(part, program.message_dtype, combiner)
        self.used_at: int | None = None
        self._degree: np.ndarray | None = None
        self._flag = np.zeros(1, dtype=np.int64)

    def has_plan(self) -> bool:
        """The plan exists (built in an earlier superstep or run, for this message type)."""
        return self.part._plan is not None and self.part._plan.key == _plan_key(
            self.program, self.split
        )

    def frontier(self, mask) -> np.ndarray:
        """The live senders' local indices, from a bool mask or a list of indices."""
        part = self.part
        mask = np.asarray(mask)
        if mask.dtype == np.bool_:
            return np.flatnonzero(mask & part.alive) if part.mutated else np.flatnonzero(mask)
        frontier = np.ascontiguousarray(mask, dtype=np.int64)
        return frontier[part.alive[frontier]] if part.mutated else frontier

    def dense(self, mask) -> bool:
        """Ligra's rule on a frontier (a bool mask, or live local indices from `frontier`)."""
        if self.direction == "push-sparse":
            return False
        part = self.part
        mask = np.asarray(mask)
        if mask.dtype != np.bool_:  # live local indices (Routes.frontier's)
            work = len(mask) + frontier_edges(mask, part.offsets)
        elif not part.mutated and mask.all():  # every vertex sends: dense
            return True
        else:
            if self._degree is None or part.mutated:
                self._degree = part.degree()
            work = frontier_work(np.ascontiguousarray(mask & part.alive), self._degree)
        return work * DENSE > part.n_edges

    def agree(self, dense: bool) -> tuple[bool, float]:
        """Collective (unless "push-sparse"): whether some rank's frontier is dense; with the
        seconds this rank waited for the others."""
        if self.direction == "push-sparse":
            return False, 0.0
        self._flag[0] = dense
        t = time.perf_counter()
        every = self.engine.allreduce(self._flag, "max")
        return bool(every[0]), time.perf_counter() - t

    def plan(self) -> tuple[EdgePlan, float]:
        """The plan (built now the first time: collective) and the seconds its build took."""
        t = time.perf_counter()
        plan = _plan(self.engine, self.part, self.program, self.split, self.timer)
        plan.direction, plan.timer = "auto", self.timer
        return plan, time.perf_counter() - t


def _fast_path(program: VertexProgram) -> bool:
    """Whether the program's messages along edges can take the sparse-product path."""
    combiner = inspect.getattr_static(program, "combiner")
    return isinstance(combiner, str) and combiner in OPS and int(program.message_width) == 1


def _plan(engine, part: Partition, program: VertexProgram, split, timer) -> EdgePlan:
    """The graph's plan: kept until the edges change, rebuilt for another message type or
    placement (collective: every rank's partition changes at the same barriers)."""
    key = _plan_key(program, split)
    plan = part._plan
    if plan is None or plan.key != key:
        with timer.phase("plan"):
            plan = part._plan = EdgePlan.build(engine, part, key[0], key[1], split)
        plan.key = key
    return plan


def _plan_key(program: VertexProgram, split) -> tuple:
    return (np.dtype(program.message_dtype), inspect.getattr_static(program, "combiner"), split)


def _switches() -> int:
    """This thread's involuntary context switches so far."""
    return resource.getrusage(_RUSAGE).ru_nivcsw


def _add_rank_figures(
    engine: Engine, rows: list[dict], local_rows: list[tuple]
) -> dict[str, list[list[float]]]:
    """Per superstep: the slowest rank's compute and communicate seconds and the longest any rank
    waited in the superstep's first Alltoall (`wait_s`: the ranks' imbalance in time, plus one
    small Alltoall; communicate_s less wait_s is the exchange and combining), the rows delivered
    (after combining) on all ranks, the direction of the product; reduced once, after the run.
    Returns each rank's own compute, communicate, wait seconds and rows sent per superstep (which
    rank waits for which: the slowest alone does not say)."""
    if not rows:
        return {}
    mine = np.zeros((len(rows), _LOCAL))  # a checkpoint of an earlier version kept fewer columns
    kept = np.array(local_rows, dtype=np.float64).reshape(len(rows), -1)
    mine[:, : kept.shape[1]] = kept
    each = np.zeros((engine.size, 6, len(rows)))
    each[engine.rank] = mine[:, [0, 1, 5, 6, 7, 8]].T
    each = engine.allreduce(each, "sum")
    slowest = engine.allreduce(np.ascontiguousarray(mine[:, [0, 1, 5]]), "max")
    summed = engine.allreduce(np.ascontiguousarray(mine[:, [2, 3, 4, 9]]), "sum")
    for row, (c, m, w), (d, pulled, pushed, sparse) in zip(rows, slowest, summed, strict=True):
        ways = (("pull", pulled), ("push", pushed), ("push-sparse", sparse))
        direction = "+".join(n for n, k in ways if k)
        row.update(
            delivered=int(d),
            compute_s=float(c),
            communicate_s=float(m),
            wait_s=float(w),
            direction=direction,
        )
    names = ("compute_s", "communicate_s", "wait_s", "sent", "compute_cpu_s", "compute_switches")
    return {name: each[:, i, :].tolist() for i, name in enumerate(names)}

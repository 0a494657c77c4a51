"""A profiled run's time (and cost) on another environment, from Python (docs/predict.md).

prof = cloudhpc.profile("wave", {"points": 50000, "steps": 500}, np=2)
pred = cloudhpc.predict(prof.id, env="vm-net")
pred["predicted_total_s"], pred["prediction"]["ratio"]
adv = cloudhpc.advise("is.model.json", size="class=B", platforms=["lab"],
                      instances=["c5n.18xlarge"], nodes=[1, 2, 4, 8])
adv.rows[0]["predicted_total_s"], adv.extra["advice"]["pareto"]
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from ..curves.prediction import predict_profile
from ..launch.options import DEFAULT_RESULTS
from ..results.record import Record, as_record


def predict(
    profile: str = "last",
    *,
    env: str | None = None,
    hosts: str | os.PathLike | None = None,
    np: int | None = None,
    mpi: str | None = None,
    oversubscribe: bool = False,
    refresh: bool = False,
    timeout: float | None = None,
    instance: str | None = None,
    nodes: int | None = None,
    prices: str | os.PathLike | None = None,
    results: str | os.PathLike | None = None,
) -> Record:
    """Predict the profile's run (a record id of `results`, a unique prefix, `last`, or a path)
    on the target `env` / `hosts` at `np` ranks (default: the profile's) with MPI `mpi`, from
    both environments' micro-benchmark curves (measured the first time, then kept; `refresh`
    measures again); `instance` and `nodes` add the $ per run. Returns the `predict` Record."""
    record = predict_profile(
        profile,
        env=env,
        hosts=os.fspath(hosts) if hosts is not None else None,
        nprocs=np,
        mpi=mpi,
        oversubscribe=oversubscribe,
        refresh=refresh,
        timeout=timeout,
        instance=instance,
        nodes=nodes,
        prices=os.fspath(prices) if prices is not None else None,
        results=os.fspath(results) if results is not None else DEFAULT_RESULTS,
        command_line=f"cloudhpc.predict({profile!r}, env={env!r})",
    )
    return as_record(record)


def advise(
    model: str | os.PathLike,
    *,
    size: str | None = None,
    platforms: Sequence[str | os.PathLike],
    nodes: Sequence[int] | str,
    instances: Sequence[str] = (),
    ranks_per_node: int | None = None,
    deadline_s: float | None = None,
    budget_usd: float | None = None,
    prices: str | os.PathLike | None = None,
    results: str | os.PathLike | None = None,
    annotate: Callable[[Any], dict[str, Any]] | None = None,
) -> Record:
    """The scaling model `model` at `size` ("class=B", "n=1000000") on each platform (a file, or a
    name in `results`/platforms) and instance type ("c5n.18xlarge", or "c5n.18xlarge=lab" for
    the platform named lab only) at each node count: time, range, $, efficiency, extrapolated,
    the Pareto front (analysis/advise.py). Nothing is measured. Returns the `advise` Record: its
    rows are the options, `extra["advice"]` the targets, fastest, cheapest and Pareto front.
    `annotate(option) -> dict` adds fields to each option (a checkpoint interval, say)."""
    from ..analysis.advise import advise_files

    _, record = advise_files(
        os.fspath(model),
        size,
        [os.fspath(p) for p in platforms],
        nodes,
        instances=list(instances),
        prices=os.fspath(prices) if prices is not None else None,
        ranks_per_node=ranks_per_node,
        deadline_s=deadline_s,
        budget_usd=budget_usd,
        results=os.fspath(results) if results is not None else DEFAULT_RESULTS,
        command_line=f"cloudhpc.advise({os.fspath(model)!r}, size={size!r})",
        annotate=annotate,
    )
    return as_record(record)

"""A profiled run's time (and cost) on another environment, from Python (docs/predict.md).

prof = cloudhpc.profile("wave", {"points": 50000, "steps": 500}, np=2)
pred = cloudhpc.predict(prof.id, env="vm-net")
pred["predicted_total_s"], pred["prediction"]["ratio"]
"""

from __future__ import annotations

import os

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

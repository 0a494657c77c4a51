"""The options `predict` and `advise` share, declared once (as launch/options.py's LAUNCH is
for the commands that run a job): what is predicted (a scaling model at a size, on
platforms), the costs of checkpoints and restarts, and the price table."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from ..params import Param, Params

MODEL = Params(
    Param("model", str, None, "a scaling model (`cloudhpc model fit`), predicted at --size and "
          "-n P, which may be a P and problem size never run", metavar="MODEL.json"),
    Param("size", str, None, "the problem size, as the parameter that varied between the "
          "model's profiles (class=A for NPB, n=1000000 for k-means)", metavar="KEY=VALUE"),
    Param("platform", str, None, "a platform measured once (`cloudhpc platform measure`), a "
          "file or a name in --results/platforms: nothing is measured", metavar="FILE"),
    what="the prediction",
)  # fmt: skip

FAILURE_COSTS = Params(
    Param("run", str, None, "the run whose checkpoint and restart costs are used (a record id "
          "or prefix, or `last`; a run with --checkpoint-every)", metavar="RECORD"),
    Param("checkpoint_cost", float, None, "seconds one checkpoint costs (default: measured in "
          "--run)", min=0, metavar="SEC"),
    Param("restart_cost", float, None, "seconds from a failure to work again (default: "
          "--run's, else 0)", min=0, metavar="SEC"),
    what="the failures",
)  # fmt: skip

PRICES = Params(
    Param("prices", str, None, "a price table of your own (CSV; default: the shipped one)",
          metavar="FILE"),
)  # fmt: skip


def add(params: Params, parser: Any, group: Any = None) -> None:
    """`params` as arguments of `parser` (into the argument group `group` when given)."""
    params.add_arguments(group if group is not None else parser)


def read(args: argparse.Namespace, *declared: Params) -> Mapping[str, Any]:
    """The declared options' values, converted and checked (one line, exit 2, for a bad one),
    set back on `args` for the handler."""
    values: dict[str, Any] = {}
    for params in declared:
        given = params.check(params.from_namespace(args))
        for p in params:
            values[p.name] = given[p.name]
            setattr(args, p.name, values[p.name])
    return values

"""The immutable description of one run: what to compute, on how many ranks, where and how."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Layout:
    """t x m x n of the seeds (000, Fig 12.9): threads per process, processes per node, nodes."""

    threads: int = 1
    procs_per_node: int = 1
    nodes: int = 1

    @property
    def nprocs(self) -> int:
        return self.procs_per_node * self.nodes

    def __str__(self) -> str:
        return f"{self.threads}x{self.procs_per_node}x{self.nodes}"


@dataclass(frozen=True)
class Host:
    name: str
    slots: int = 1
    rack: str = ""  # `rack=NAME` in the hosts file: data-aware placement keeps to a rack


@dataclass(frozen=True)
class Job:
    """Everything a launcher and a worker need; serialised to JSON on the worker's argv."""

    app: str  # registry name, e.g. "bench.pingpong"
    params: dict[str, Any] = field(default_factory=dict)
    nprocs: int = 1
    layout: Layout = field(default_factory=Layout)
    layout_given: bool = False  # --layout was given (else ranks fill the hosts' slots)
    env: str = "native"
    # the MPI implementation and the launcher, by their registry names (cloudhpc.mpi,
    # cloudhpc.launch); "": the default implementation, the local launcher (named at launch)
    mpi: str = ""
    engine: str = "mpi"
    launcher: str = ""
    hosts: tuple[Host, ...] = ()
    oversubscribe: bool = False
    results_dir: str = "cloudhpc-results"
    command_line: str = ""
    timeout_s: float | None = None
    # engine settings beyond the name (ray: ray_address, inject_failure = [iteration, worker])
    engine_options: dict[str, Any] = field(default_factory=dict)
    # the emulated cluster the hosts belong to (cluster.Cluster.to_dict()), None elsewhere
    cluster: dict[str, Any] | None = None
    # the machine type the run stands for, for its cost: {"type": "c5n.18xlarge", "nodes": 2}
    instance: dict[str, Any] | None = None
    # checkpoints and restarts (checkpoint.CheckpointSettings.to_dict()), None without them
    checkpoint: dict[str, Any] | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Job:
        d = json.loads(text)
        d["layout"] = Layout(**d["layout"])
        d["hosts"] = tuple(Host(**h) for h in d["hosts"])
        return cls(**d)

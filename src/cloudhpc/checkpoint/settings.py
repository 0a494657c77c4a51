"""What a Job carries about its checkpoints (Job.checkpoint, as a dict on the worker's argv)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

FORMAT = "cloudhpc.checkpoint"
VERSION = 1  # of the directory's layout and manifests; a newer one is refused

# restart modes: "" a fresh start (no checkpoint may be there); "required" resume from the newest
# whole checkpoint (--restart DIR: checked before launch that there is one); "auto" resume from
# the newest whole checkpoint if there is one (a relaunch after a failure, a requeued Slurm job)
RESTART_MODES = ("", "required", "auto")


@dataclass(frozen=True)
class CheckpointSettings:
    dir: str  # absolute path of the job's checkpoint directory
    every: int = 0  # a checkpoint every K iterations or supersteps (0: none written)
    restart: str = ""  # see RESTART_MODES
    stamp: dict[str, Any] = field(default_factory=dict)  # stamp.make_stamp(...)
    attempt: int = 0  # 0: the first launch; n: the n-th relaunch
    token: str = ""  # this attempt's, in the names of the directories it writes
    default_dir: bool = False  # cloudhpc chose the directory (removed after success)
    keep: bool = False  # keep the checkpoints after a successful run
    restarts: int = 0  # relaunch after a lost rank or host, up to this many times

    @property
    def key(self) -> str:
        return str(self.stamp.get("key", ""))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> CheckpointSettings | None:
        if not d:
            return None
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})

"""Checkpoints of a job's models, so that a long iterative or graph job survives a lost rank, a
lost node or a preemption (docs/checkpoint.md).

The models write them (models/iterative.py: the dynamic data and the iteration; models/bsp: each
rank's partition state at a superstep barrier; models/map_only.py: the items finished), not the
apps; an app that is a pipeline of models (the assembler) saves each finished stage's result
with `Checkpoints.result`. A checkpoint is a directory `STAGE.STEP` under the job's checkpoint
directory, complete or absent: its files are written under a hidden name, fsync'd, the manifest
last, then renamed; the previous checkpoint of the stage is removed only once the new one is
whole. The manifest is stamped with the job's parameters and its inputs' checksums, so that a
checkpoint of another job is refused.

    settings.py   what the Job carries (CheckpointSettings: K, the directory, restart or not)
    stamp.py      the job's stamp: its parameters and input checksums, and how two differ
    store.py      the directory: whole checkpoints, half-written ones, the lock, checks made
                  before launch, publishing and removing (stdlib only: the parent uses it)
    runtime.py    on the ranks (numpy): Checkpoints (ctx.checkpoints) and a model's Stage,
                  which writes in a background thread while the next iteration computes
"""

from .settings import FORMAT, VERSION, CheckpointSettings

__all__ = ["FORMAT", "VERSION", "CheckpointSettings"]

"""slurm: inside an allocation (SLURM_JOB_ID set), ranks are started by srun."""

from __future__ import annotations

import os

from ..job import Job
from .base import Launcher


class SlurmLauncher(Launcher):
    name = "slurm"
    spans_hosts = True
    same_machine = False

    def slots(self, job: Job) -> int | None:
        # CPUs of the allocation: tasks x cpus per task (both as Slurm exports them).
        n = os.environ.get("SLURM_NTASKS") or os.environ.get("SLURM_NPROCS")
        cpt = os.environ.get("SLURM_CPUS_PER_TASK", "1")
        if not (n and n.isdigit()):
            return None
        return int(n) * (int(cpt) if cpt.isdigit() else 1)

    def command(self, job: Job, rank_argv: list[str], env: dict[str, str]) -> list[str]:
        lay = job.layout
        # a rank that fails exits without MPI_Finalize (worker._fail): end the whole step then
        mpi = self.implementation(job)
        argv = ["srun", f"--mpi={mpi.srun_mpi}", "--kill-on-bad-exit=1", f"--ntasks={job.nprocs}"]
        if job.layout_given:
            argv += [f"--nodes={lay.nodes}", f"--ntasks-per-node={lay.procs_per_node}"]
        argv.append(f"--cpus-per-task={lay.threads}")
        argv.append("--overcommit" if job.oversubscribe else "--cpu-bind=cores")
        exports = ",".join(f"{k}={v}" for k, v in sorted(env.items()))
        argv.append(f"--export=ALL,{exports}")
        return argv + rank_argv

"""slurm: inside an allocation (SLURM_JOB_ID set: salloc, sbatch), ranks are started by srun.

`srun --mpi=TYPE` with the type the job's MPI implementation's PMI client speaks (its
`srun_mpi`: pmi2 for MPICH and Intel MPI, whose simple PMI clients talk to Slurm's pmi2 plugin;
pmix for Open MPI 5). When this Slurm lacks that plugin (`srun --mpi=list`), the
implementation's own launcher starts the ranks inside the allocation instead, reaching the nodes
through Slurm (Hydra's slurm bootstrap, PRRTE's slurm plm): the `slurm-mpiexec` launcher, which
can also be asked for by name.

- The allocation's CPUs are the slots (SLURM_JOB_CPUS_PER_NODE).
- `--layout TxMxN`: `--nodes=N --ntasks-per-node=M --cpus-per-task=T`, each rank bound to its T
  cores (`--cpu-bind=cores`); `--oversubscribe`: `--overcommit`, no binding.
- `--placement PLAN`: rank r on the plan's r-th host, through `--distribution=arbitrary` and a
  SLURM_HOSTFILE (one host per rank) that the run writes into its control directory.
- Variables reach the ranks through srun's environment (`--export=ALL,NAME,...` names them):
  a value holding a comma (OMPI_MCA_btl=self,sm,tcp) cannot be written on srun's command line.
- An allocation of one node keeps the ranks' TCP on loopback (vm-net), as on this machine.
- The run's record says which job it ran in (launch.slurm: job id, nodes, partition).
- Outside an allocation srun asks Slurm for one itself, for the length of the run.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import socket
import subprocess

from ..cluster.model import IFACE
from ..errors import CloudhpcError
from ..job import Job
from ..mpi import Where
from .base import Launcher
from .names import SLURM, SLURM_MPIEXEC
from .plan import LaunchPlan

HOSTFILE_VAR = "SLURM_HOSTFILE"


# what srun and the step daemons print when they end a step a rank brought down
SRUN_NOISE = (
    "srun: Job step aborted",
    "srun: launch/slurm: _step_signal",
    "srun: error: Timed out waiting for job step",
    "slurmstepd: error: *** STEP",
    "slurmstepd-",
    # an emulated cluster's Slurm binds no task to cores (its hosts' control groups do)
    "srun: cluster configuration lacks support for cpu binding",
)
# srun: error: NODE: task 1: Exited with exit code 3 / tasks 0-1: Killed
_TASK_END = re.compile(
    r"^srun: error: \S+: tasks? ([\d,\-]+): (?:Exited with exit code (\d+)|Killed|(.+))$"
)

_SIGNALS = {
    "Terminated": 15,
    "Segmentation fault": 11,
    "Aborted": 6,
    "Bus error": 7,
    "Floating point exception": 8,
}


def srun_exits(stderr: str) -> tuple[str, dict[int, int]]:
    """srun's report of the tasks that ended badly, out of its stderr: (the rest, {rank: wait
    status})."""
    kept, ends = [], {}
    for line in stderr.splitlines(keepends=True):
        m = _TASK_END.match(line.strip())
        if m is None:
            kept.append(line)
            continue
        if m[2] is not None:
            status = int(m[2]) << 8
        elif m[3] is None:
            status = 9  # Killed: SIGKILL
        elif m[3].split(" (")[0] in _SIGNALS:
            status = _SIGNALS[m[3].split(" (")[0]]
        else:
            kept.append(line)
            continue
        for part in m[1].split(","):
            lo, _, hi = part.partition("-")
            for rank in range(int(lo), int(hi or lo) + 1):
                ends[rank] = status
    return "".join(kept), ends


def allocation_cpus(environ=os.environ) -> int | None:
    """The CPUs of the allocation: SLURM_JOB_CPUS_PER_NODE ("4(x2),2": 4 on each of two nodes,
    then 2), else tasks x CPUs per task."""
    spec = environ.get("SLURM_JOB_CPUS_PER_NODE", "")
    if spec:
        total = 0
        for part in spec.split(","):
            m = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part.strip())
            if m is None:
                total = 0
                break
            total += int(m[1]) * int(m[2] or 1)
        if total:
            return total
    n = environ.get("SLURM_NTASKS") or environ.get("SLURM_NPROCS")
    cpt = environ.get("SLURM_CPUS_PER_TASK", "1")
    if not (n and n.isdigit()):
        return None
    return int(n) * (int(cpt) if cpt.isdigit() else 1)


def allocation_nodes(environ=os.environ) -> int | None:
    n = environ.get("SLURM_JOB_NUM_NODES") or environ.get("SLURM_NNODES")
    return int(n) if n and n.isdigit() else None


@functools.cache
def srun_mpi_types() -> frozenset[str] | None:
    """The MPI plugin types this Slurm's srun has (`srun --mpi=list`); None: no srun here."""
    try:
        r = subprocess.run(["srun", "--mpi=list"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = r.stdout + r.stderr
    found = set(re.findall(r"^\s+(\S+)\s*$", text, re.M))
    found |= {v for m in re.findall(r"versions available: (.*)", text) for v in m.split(",")}
    return frozenset(t.strip() for t in found if t.strip()) or None


def allocation_hostnames() -> list[str]:
    """The allocation's nodes, one name each (scontrol expands SLURM_JOB_NODELIST)."""
    try:
        r = subprocess.run(
            ["scontrol", "show", "hostnames", os.environ["SLURM_JOB_NODELIST"]],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, KeyError, subprocess.TimeoutExpired):
        return []
    return r.stdout.split() if r.returncode == 0 else []


def allocation_facts(environ=os.environ) -> dict[str, str]:
    """What the record says about the allocation the run was in."""
    names = {
        "job_id": "SLURM_JOB_ID",
        "nodes": "SLURM_JOB_NODELIST",
        "partition": "SLURM_JOB_PARTITION",
        "cluster": "SLURM_CLUSTER_NAME",
        "account": "SLURM_JOB_ACCOUNT",
        "array_job_id": "SLURM_ARRAY_JOB_ID",  # a task of an array job (campaign run --submit)
        "array_task_id": "SLURM_ARRAY_TASK_ID",
    }
    return {k: environ[v] for k, v in names.items() if environ.get(v)}


class SlurmLauncher(Launcher):
    name = SLURM
    slot_word = "CPUs of the allocation"

    @property
    def spans_hosts(self) -> bool:  # type: ignore[override]
        return allocation_nodes() != 1

    @property
    def same_machine(self) -> bool:  # type: ignore[override]
        """The allocation is one node, and it is this machine (a batch script runs there)."""
        nodes = os.environ.get("SLURM_JOB_NODELIST", "")
        return allocation_nodes() == 1 and nodes in (socket.gethostname().split(".")[0], "")

    def tcp_iface(self, job: Job) -> str | None:
        if allocation_nodes() == 1:
            return "lo"
        # the nodes of an emulated cluster's Slurm reach each other on their link alone
        return IFACE if job.cluster else None  # else the library chooses

    def slots(self, job: Job) -> int | None:
        return allocation_cpus()

    def preflight(self, job: Job) -> None:
        self._check_nodes(job)
        if not job.hosts or not os.environ.get("SLURM_JOB_NODELIST"):
            return
        nodes = allocation_hostnames()
        strangers = [h.name for h in job.hosts if h.name not in nodes]
        if nodes and strangers:
            raise CloudhpcError(
                f"--placement names {strangers[0]}, not a node of this allocation "
                f"({', '.join(nodes)})"
            )

    def _check_nodes(self, job: Job) -> None:
        """srun --nodes=N with more nodes than there are fails in Slurm's words, exit 1: a
        --layout asking that of the srun cloudhpc builds is bad input, refused here (exit 2)."""
        if not job.layout_given or job.hosts or not self.uses_srun(job):
            return
        if os.environ.get("SLURM_JOB_ID"):
            have, where = allocation_nodes(), "this Slurm allocation"
        else:  # srun asks Slurm for an allocation itself: the default partition's nodes
            from ..slurm.client import SlurmClient

            try:
                part = SlurmClient().partition(None)
            except CloudhpcError:
                return  # no Slurm that answers: srun says so
            have, where = part.nodes, f"Slurm partition {part.name}"
        if have is not None and job.layout.nodes > have:
            raise CloudhpcError(
                f"layout {job.layout} asks for {job.layout.nodes} nodes but {where} has {have}"
            )

    def uses_srun(self, job: Job) -> bool:
        """srun has the plugin the implementation's PMI speaks (assumed when srun is absent:
        --dry-run outside Slurm)."""
        types = srun_mpi_types()
        return types is None or self.implementation(job).srun_mpi in types

    def plan(self, job: Job, rank_argv: list[str] | None = None, extra_env=None) -> LaunchPlan:
        mode = None
        if job.cluster:  # a job of an emulated cluster's Slurm: its hosts' wait mode
            from .cluster import job_cluster, wait_mode

            mode, wait = wait_mode(job_cluster(job), job)
            extra_env = {**wait, **(extra_env or {})}
        plan = super().plan(job, rank_argv, extra_env)
        plan.details["slurm"] = {**allocation_facts(), "starter": self.starter(job)}
        if mode is not None:
            plan.details["mpi_wait"] = mode
        if job.hosts:
            plan.files[HOSTFILE_VAR] = "".join(
                f"{h.name}\n" for h in job.hosts for _ in range(h.slots)
            )
        return dataclasses.replace(plan, noise=SRUN_NOISE, exits=srun_exits, ranks_below=False)

    def starter(self, job: Job) -> str:
        mpi = self.implementation(job)
        if self.uses_srun(job):
            return f"srun --mpi={mpi.srun_mpi}"
        return f"{mpi.title}'s mpiexec through Slurm"

    def command(self, job: Job, rank_argv: list[str], env: dict[str, str]) -> list[str]:
        if not self.uses_srun(job):  # the implementation's mpiexec, reaching nodes through Slurm
            return super().command(job, rank_argv, env)
        lay = job.layout
        mpi = self.implementation(job)
        # a rank that fails exits without MPI_Finalize (worker._fail): end the whole step then
        argv = ["srun", f"--mpi={mpi.srun_mpi}", "--kill-on-bad-exit=1", f"--ntasks={job.nprocs}"]
        if job.hosts:
            argv.append("--distribution=arbitrary")  # SLURM_HOSTFILE, in rank order
        elif job.layout_given:
            argv += [f"--nodes={lay.nodes}", f"--ntasks-per-node={lay.procs_per_node}"]
        argv.append(f"--cpus-per-task={lay.threads}")
        argv.append("--overcommit" if job.oversubscribe else "--cpu-bind=cores")
        argv.append("--export=" + ",".join(["ALL", *sorted(env)]))
        return argv + rank_argv

    def where(self, job: Job) -> Where:
        if job.hosts:
            mpi = self.implementation(job)
            raise CloudhpcError(
                f"--placement inside a Slurm allocation needs srun's {mpi.srun_mpi} plugin for "
                f"{mpi.title}, which this Slurm lacks (srun --mpi=list)"
            )
        per_node = job.layout.procs_per_node if job.layout_given else None
        return Where(allocation=True, per_node=per_node)


class SlurmMpiexecLauncher(SlurmLauncher):
    """slurm-mpiexec: the implementation's own launcher inside the allocation (mpiexec reaching
    the nodes through Slurm), even where srun could start the ranks itself."""

    name = SLURM_MPIEXEC

    def preflight(self, job: Job) -> None:
        if not os.environ.get("SLURM_JOB_ID"):
            raise CloudhpcError(
                "the slurm-mpiexec launcher runs inside a Slurm allocation (salloc, sbatch; "
                "SLURM_JOB_ID is not set)"
            )

    def uses_srun(self, job: Job) -> bool:
        return False

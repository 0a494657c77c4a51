"""Hydra's mpiexec, which MPICH and Intel MPI (MPICH-derived) both start their ranks with.

What they share: variables as `-genv NAME VALUE`; hosts as `-hosts h0:2,h1:1` (Hydra gives
ranks to the entries in order, and a host may come back); the bootstrap that starts a proxy on
each host (ssh, or a program called as ssh would be, the emulated cluster's hook; slurm inside an
allocation, `-ppn M` ranks per node); the exit-code report of every rank, asked for with
`exit_report_args`, and the lines it prints when it tears a job down. What differs is said by
each: the option naming the bootstrap (`-launcher` / `-bootstrap`), how proxies find the head
node on an emulated cluster (`callback_args`), binding, and how hosts are written (`ranks`).
"""

from __future__ import annotations

import re

from ..job import Job
from .base import MpiImplementation, Reach, Where

EXIT_REPORT = re.compile(r"\[mpiexec@[^\]]*\] Exit codes: (.*)")
# with several hosts, each host after the first is on a line of its own: "[HOST2] 0,0"
EXIT_REPORT_MORE = re.compile(r"\[[^\]@]*\]\s+(\d+(?:,\d+)*)")


class Hydra(MpiImplementation):
    # the options that choose how proxies start (ssh, slurm) and the program called for ssh
    bootstrap = "-launcher"
    bootstrap_exec = "-launcher-exec"
    noise_prefixes = ("=====", "BAD TERMINATION", "PID ", "RUNNING AT ", "EXIT CODE", "CLEANING UP")
    # the box it prints on stdout when a rank is killed (cloudhpc says which rank, in one line)
    stdout_noise = (
        "=====",
        "=   ",
        "YOUR APPLICATION TERMINATED WITH THE EXIT STRING",
        "This typically refers to a problem with your application",
        "Please see the FAQ page for debugging",
    )

    def rank_exits(self, stderr: str) -> tuple[str, dict[int, int]]:
        # "[mpiexec@HOST] Exit codes: [HOST] 0,768" then "[HOST2] 0,0" (a line per further
        # host): wait statuses, host by host, in rank order (ranks fill the hosts in order)
        if not self.exit_report_args:
            return stderr, {}
        kept, statuses, in_report = [], [], False
        for line in stderr.splitlines(keepends=True):
            m = EXIT_REPORT.match(line.strip())
            if m is not None:
                statuses = [int(s) for s in re.findall(r"\d+", re.sub(r"\[[^\]]*\]", " ", m[1]))]
                in_report = True
            elif in_report and (more := EXIT_REPORT_MORE.fullmatch(line.strip())):
                statuses += [int(s) for s in more[1].split(",")]
            else:
                in_report = False
                kept.append(line)
        failed = {rank: s for rank, s in enumerate(statuses) if s}
        return "".join(kept), failed

    def env_args(self, env: dict[str, str]) -> list[str]:
        args: list[str] = []
        for key, value in sorted(env.items()):
            args += ["-genv", key, value]
        return args

    def binding_args(self, job: Job) -> list[str]:
        return []

    def callback_args(self, reach: Reach) -> list[str]:
        """What tells the proxies on the hosts where to call the launcher back."""
        return []

    def reach_args(self, where: Where) -> list[str]:
        if where.allocation:  # Hydra reads the allocation's nodes and starts proxies with srun
            return [self.bootstrap, "slurm"]
        if not where.hosts:
            return []
        agent = [self.bootstrap_exec, where.reach.agent] if where.reach.agent else []
        return [self.bootstrap, "ssh", *agent, *self.callback_args(where.reach)]

    def ranks(self, job: Job, where: Where, options: list[str], rank_argv: list[str]) -> list[str]:
        """The hosts, the ranks and the program, with the global `options` where they go."""
        hosts = ["-hosts", ",".join(f"{h}:{n}" for h, n in where.hosts)] if where.hosts else []
        per_node = ["-ppn", str(where.per_node)] if where.per_node else []
        return [*hosts, "-n", str(job.nprocs), *per_node, *options, *rank_argv]

    def command(
        self, job: Job, where: Where, env: dict[str, str], rank_argv: list[str]
    ) -> list[str]:
        options = [*self.binding_args(job), *self.exit_report_args, *self.env_args(env)]
        ranks = self.ranks(job, where, options, rank_argv)
        return [self.tool("mpiexec"), *self.reach_args(where), *ranks]

"""The `npb` app: one NPB kernel of one class, checked, timed and verified.

Params: kernel (cg, mg, ft, is, ep), class (S, W, A, B, C), corrupt (test hook: perturb one
computed value so verification must fail).
"""

from __future__ import annotations

from typing import Any

from ..errors import CloudhpcError
from ..jit import load_packages  # numba: imported with the job (job_import), not timed
from . import load
from .common import available_memory, check_class, gib, peak_rss_max, report_text


def check_procs(kernel: Any, nprocs: int) -> None:
    if not kernel.allowed_procs(nprocs):
        raise CloudhpcError(
            f"npb {kernel.KERNEL}: {nprocs} processes not allowed; "
            f"{kernel.KERNEL} runs on {kernel.PROCS_RULE}"
        )


def check_memory(comm: Any, kernel: Any, cls: str) -> int:
    """Refuse a class that does not fit in this host's memory, before anything is allocated.

    Every host compares (estimate per rank) x (its ranks) with its available memory; the
    verdict is agreed on by all ranks so that all of them stop with the same message.
    """
    from mpi4py import MPI

    per_rank = int(kernel.memory_estimate(cls, comm.Get_size()))
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    local_ranks = node.Get_size()
    node.Free()
    need = per_rank * local_ranks
    have = available_memory()
    short = comm.allreduce(1 if need > have else 0, op=MPI.MAX)
    if short:
        worst_have = comm.allreduce(have, op=MPI.MIN)
        raise CloudhpcError(
            f"npb {kernel.KERNEL} class {cls}: needs about {gib(need)} on a host "
            f"({gib(per_rank)} per rank x {local_ranks} ranks) but only {gib(worst_have)} "
            "is available; choose a smaller class or more hosts"
        )
    return per_rank


def main(ctx: Any) -> dict:
    with ctx.phase("jit"):  # the kernel's module and its cached machine code
        kernel = load(ctx.params.get("kernel", ""))
        load_packages("cloudhpc.npb")
    cls = check_class(kernel.KERNEL, ctx.params.get("class", "S"), kernel.CLASSES)
    corrupt = bool(ctx.params.get("corrupt", False))
    check_procs(kernel, ctx.size)
    per_rank = check_memory(ctx.comm, kernel, cls)
    with ctx.phase("compute"):
        res = kernel.run(ctx.comm, cls, corrupt=corrupt, progress=ctx.progress)
    peak_rss = peak_rss_max(ctx.comm)
    values = {
        v["name"]: {"computed": v["computed"], "reference": v["reference"]}
        for v in res["verification"]
    }
    return {
        "metrics": {
            "mops_total": res["mops_total"],
            "mops_per_process": res["mops_per_process"],
            "time_s": res["time_s"],
            "iterations": res["iterations"],
        },
        "verified": res["verified"],
        "report": report_text(res),
        "kernel": res["kernel"],
        "class": res["class"],
        "size": res["size"],
        "mops_total": res["mops_total"],
        "mops_per_process": res["mops_per_process"],
        "verification": res["verification"],
        "verification_values": values,
        "memory_estimate_per_rank": per_rank,
        "peak_rss_bytes_max_rank": peak_rss,
        **({"kernel_extra": res["extra"]} if res.get("extra") else {}),
    }

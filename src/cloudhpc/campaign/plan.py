"""A campaign -> every run it asks for, as checked Jobs, in the order they run.

Each workload names one job: by its kind and values (`app = "kmeans"`, `params = {...}`) or by
a command (`run kmeans --k 8 -n 2`, read by launch/jobs.py's read_command from the job's own
declaration). Each matrix key is a launch option (`nprocs`, `env`, `mpi`, `engine` for `run`
apps, ...) or one of the job's declared parameters (`k`); a cell's values go over the workload's,
and launch/jobs.py's job_for builds and checks the Job: the same path, and the same one line for
a bad value, as the command line and the Python API.

Order: repetition by repetition, and within one repetition every cell, each workload in turn
(round-robin), so that a machine's drift over the campaign spreads over all cells alike.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ..analysis.cost import instance_type
from ..errors import CloudhpcError
from ..launch.execute import RunRequest
from ..launch.jobs import COMMANDS, job_for, read_command, request_for, spec_of
from ..launch.options import LAUNCH, RUNTIME, LaunchOptions
from ..params import Params
from ..results.campaigns import Key, cell_text
from .spec import Campaign, Scalar, Workload

RUNNABLE = COMMANDS  # the commands a workload may be: each runs one job
# the command line's own options: never in a workload's command
RESERVED = {
    "--results": "the campaign's records go where `campaign run --results` says",
    "--json": "a campaign prints its own summary (`campaign run --json`)",
    "--dry-run": "use `campaign run --dry-run` to list the runs",
    "--submit": "a campaign submits its runs with `campaign run --submit`",
    "--partition": "give it to `campaign run --submit`",
    "--time": "give it to `campaign run --submit`",
    "--account": "give it to `campaign run --submit`",
    "--help": "a workload is a command to run",
    "-h": "a workload is a command to run",
}
# matrix keys that are another name of a launch option
ALIASES = {"np": "nprocs"}


@dataclass(frozen=True)
class PlannedRun:
    workload: str
    cell: dict[str, Scalar]
    repetition: int
    request: RunRequest | None  # None in an outline (status), whose jobs are not built
    words: tuple[str, ...]  # the command after `cloudhpc` that runs it, --results included

    @property
    def key(self) -> Key:
        return (self.workload, cell_text(self.cell), self.repetition)

    @property
    def command_line(self) -> str:
        return shlex.join(["cloudhpc", *self.words])


@dataclass(frozen=True)
class CampaignPlan:
    campaign: Campaign
    results: str
    cells: tuple[dict[str, Scalar], ...]
    runs: tuple[PlannedRun, ...]  # every run of the campaign, in the order they run


@dataclass(frozen=True)
class WorkloadJob:
    """A workload read: the job it runs, its values and its launch options (by name)."""

    name: str
    values: dict[str, Any]
    launch: dict[str, Any]
    words: tuple[str, ...] | None  # its command's words, for a workload given as a command

    @property
    def takes(self) -> tuple[Params, ...]:
        """The launch options it takes: `run` apps' engine settings too."""
        run = spec_of(self.name).command.startswith("run ")
        return (LAUNCH, RUNTIME) if run else (LAUNCH,)


def cell_label(cell: dict[str, Scalar]) -> str:
    """`nprocs=2 env=vm-net`: a cell as people write it."""
    return " ".join(f"{k}={_word(v)}" for k, v in cell.items())


def _word(v: Scalar) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def run_count(campaign: Campaign) -> tuple[int, int]:
    """(runs, (workload, cell) pairs) the campaign makes, without building a job."""
    pairs = sum(len(campaign.cells(w.name)) for w in campaign.workloads)
    return pairs * campaign.repetitions, pairs


def plan_campaign(
    campaign: Campaign,
    results: str,
    progress: Callable[[int, int], None] | None = None,
) -> CampaignPlan:
    """Every run of the campaign, each job built and checked: the first problem is raised as
    CampaignFileError naming the file's line and key, before anything runs. `progress(done,
    total)` after each (workload, cell)."""
    cells = campaign.cells()
    per_workload = {w.name: campaign.cells(w.name) for w in campaign.workloads}
    total, done = sum(len(c) for c in per_workload.values()), 0
    requests: dict[tuple[str, str], tuple[RunRequest, tuple[str, ...]]] = {}
    for w in campaign.workloads:
        read = read_workload(campaign, w)
        where = {key: _matrix_key(campaign, w, read, key) for key in campaign.matrix}
        _once_each(campaign, where)
        bare_error: list[str | None] = []  # the workload's own problem, found at most once
        for cell in per_workload[w.name]:
            done += 1
            if progress is not None:
                progress(done, total)
            values, launch = dict(read.values), dict(read.launch)
            for key, value in cell.items():
                kind, name = where[key]
                (launch if kind == "launch" else values)[name] = value
            try:
                words = _command(read, values, launch, cell, where, results)
                job = _job(read.name, values, launch, results, shlex.join(["cloudhpc", *words]))
            except CloudhpcError as e:
                if not bare_error:
                    bare_error.append(_bare_error(read, results))
                prefix = f"with {cell_label(cell)}: " if str(e) != bare_error[0] else ""
                raise _workload_error(campaign, w, f"{prefix}{e}") from None
            requests[(w.name, cell_text(cell))] = (request_for(job), words)
    runs = []
    for rep in range(1, campaign.repetitions + 1):
        for cell in cells:
            for w in campaign.workloads:
                if (w.name, cell_text(cell)) in requests:  # not excluded for this workload
                    request, words = requests[(w.name, cell_text(cell))]
                    runs.append(PlannedRun(w.name, dict(cell), rep, request, words))
    return CampaignPlan(campaign, results, tuple(cells), tuple(runs))


def read_workload(c: Campaign, w: Workload) -> WorkloadJob:
    """The job a workload runs, its values and launch options (a command read by the job's
    declaration; its own options refused with why)."""
    if w.job is not None:
        return WorkloadJob(w.job, dict(w.params), dict(w.launch), None)
    try:
        words = shlex.split(w.command)
    except ValueError as e:  # an unclosed quote
        raise c.error(f"cannot split into words: {e}", "workload", "command", w.index) from None
    if words and words[0] == "cloudhpc":
        words = words[1:]
    if not words:
        raise c.error("give the command after `cloudhpc`", "workload", "command", w.index)
    for word in words:
        option = word.partition("=")[0] if word.startswith("--") else word
        if option in RESERVED:
            raise c.error(f"{option} is not for a workload: {RESERVED[option]}", "workload",
                          "command", w.index)  # fmt: skip
    if words[0] not in RUNNABLE:
        raise c.error(f"`{words[0]}` is not a command a campaign runs (one of: "
                      f"{', '.join(RUNNABLE)})", "workload", "command", w.index)  # fmt: skip
    try:
        name, values, launch = read_command(words)
    except CloudhpcError as e:
        raise c.error(str(e), "workload", "command", w.index) from None
    return WorkloadJob(name, values, launch, tuple(words))


def outline(campaign: Campaign, results: str) -> CampaignPlan:
    """The campaign's runs in order, without building their jobs (what `status` needs)."""
    cells = campaign.cells()
    included = {(w.name, cell_text(c)) for w in campaign.workloads for c in campaign.cells(w.name)}
    runs = [
        PlannedRun(w.name, dict(cell), rep, None, ())
        for rep in range(1, campaign.repetitions + 1)
        for cell in cells
        for w in campaign.workloads
        if (w.name, cell_text(cell)) in included
    ]
    return CampaignPlan(campaign, results, tuple(cells), tuple(runs))


def _job(name: str, values: dict, launch: dict, results: str, command: str):
    opts = LaunchOptions.from_values(launch, results=results, command_line=command)
    opts = replace(opts, instance=instance_type(opts.instance, opts.prices))
    return job_for(name, values, opts)


def _bare_error(read: WorkloadJob, results: str) -> str | None:
    """The workload's own problem, without any cell's values (None: it has none)."""
    try:
        _job(read.name, read.values, read.launch, results, "")
    except CloudhpcError as e:
        return str(e)
    return None


def _workload_error(c: Campaign, w: Workload, problem: str):
    key = "command" if w.job is None else "params"
    return c.error(problem, "workload", key, w.index)


def _matrix_key(c: Campaign, w: Workload, read: WorkloadJob, key: str) -> tuple[str, str]:
    """Where the matrix's `key` goes for this workload: ("launch", option) or ("param", name);
    refused when the workload takes no such option or sets it itself."""
    name = ALIASES.get(key, key.replace("-", "_"))  # `ray-address` is `ray_address`
    spec = spec_of(read.name)
    if any(name in params for params in read.takes):
        kind = "launch"
    elif (p := spec.params.find(name)) is not None:
        kind, name = "param", p.name
    else:
        spelling = "--" + key.replace("_", "-")
        if name in RUNTIME:
            spelling = RUNTIME[name].option_strings[-1]
        raise c.error(f"workload {w.name!r} ({w.command}) takes no {spelling}", "matrix", key)
    given = read.launch if kind == "launch" else read.values
    if name in given:
        what = "its command" if read.words is not None else "its table"
        raise c.error(
            f"workload {w.name!r} sets {_spelling(read, kind, name)} in {what} too: keep it in "
            "one place",
            "matrix",
            key,
        )
    return kind, name


def _spelling(read: WorkloadJob, kind: str, name: str) -> str:
    params = [*read.takes] if kind == "launch" else [spec_of(read.name).params]
    for ps in params:
        if name in ps and ps[name].option_strings:
            return ps[name].option_strings[-1]
    return name


def _once_each(c: Campaign, where: dict[str, tuple[str, str]]) -> None:
    """Two matrix keys that are one option (`nprocs` and `np`) would run every cell with the
    last one alone, recorded under both."""
    seen: dict[tuple[str, str], str] = {}
    for key, target in where.items():
        if target in seen:
            raise c.error(
                f"{seen[target]} and {key} are the same option: give it once", "matrix", key
            )
        seen[target] = key


def _command(
    read: WorkloadJob,
    values: dict[str, Any],
    launch: dict[str, Any],
    cell: dict[str, Scalar],
    where: dict[str, tuple[str, str]],
    results: str,
) -> tuple[str, ...]:
    """The command (after `cloudhpc`) that runs this cell of the workload: a command's words
    and the cell's, or the words of a workload's values."""
    from ..launch.jobs import command_words

    if read.words is None:
        words = command_words(read.name, values, launch)
    else:
        words = list(read.words)
        spec = spec_of(read.name)
        for key, value in cell.items():
            kind, name = where[key]
            if kind == "param":
                words += spec.params.to_words(spec.params.given({name: value}), all_values=True)
            else:
                ps = LAUNCH if name in LAUNCH else RUNTIME
                words += ps.to_words(ps.given({name: value}), all_values=True)
    return (*words, "--results", results)

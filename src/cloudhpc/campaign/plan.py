"""A campaign file -> every run it asks for: each workload's command with each matrix cell's
options, read by the command line's own parser, in the order they run.

The parser belongs to the command line (cli/), above this layer: it is handed in as a
`CommandReader`, which tells which options a command takes and turns a command line into the
job(s) it would run (its handler's checks included), running nothing.

Order: repetition by repetition, and within one repetition every cell, each workload in turn
(round-robin), so that a machine's drift over the campaign spreads over all cells alike.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ..errors import CloudhpcError
from ..launch.execute import RunRequest
from ..results.campaigns import Key, cell_text
from .spec import Campaign, Scalar, Workload

# option strings a campaign decides for all its runs: never in a workload's command
RESERVED = {
    "--results": "the campaign's records go where `campaign run --results` says",
    "--json": "a campaign prints its own summary (`campaign run --json`)",
    "--dry-run": "use `campaign run --dry-run` to list the runs",
    "--help": "a workload is a command to run",
}
# matrix keys that are not `--KEY`
ALIASES = {"nprocs": "--np", "np": "--np"}


@dataclass(frozen=True)
class Option:
    """One option of a command: all its spellings, and whether it takes a value."""

    strings: tuple[str, ...]
    flag: bool  # a switch (--oversubscribe): true or false in the matrix


class CommandReader(Protocol):
    def options(self, words: list[str]) -> dict[str, Option]:
        """The options the command `words` (after `cloudhpc`) takes, by each spelling;
        CloudhpcError when it is not a command a campaign can run."""
        ...

    def requests(self, words: list[str]) -> list[RunRequest]:
        """The jobs the command would run (after every check its handler makes), running
        nothing; CloudhpcError with the command's own message when it is refused."""
        ...


@dataclass(frozen=True)
class PlannedRun:
    workload: str
    cell: dict[str, Scalar]
    repetition: int
    request: RunRequest | None  # None in an outline (status), whose commands are not read
    words: tuple[str, ...]  # the command after `cloudhpc`, the cell's options and --results in

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


def cell_label(cell: dict[str, Scalar]) -> str:
    """`nprocs=2 env=vm-net`: a cell as people write it."""
    return " ".join(f"{k}={_word(v)}" for k, v in cell.items())


def _word(v: Scalar) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def run_count(campaign: Campaign) -> tuple[int, int]:
    """(runs, (workload, cell) pairs) the campaign makes, without reading a command."""
    pairs = sum(len(campaign.cells(w.name)) for w in campaign.workloads)
    return pairs * campaign.repetitions, pairs


def plan_campaign(
    campaign: Campaign,
    reader: CommandReader,
    results: str,
    progress: Callable[[int, int], None] | None = None,
) -> CampaignPlan:
    """Every run of the campaign, each command read and checked: the first problem is raised as
    CampaignFileError naming the file's line and key, before anything runs. `progress(done,
    total)` after each (workload, cell) read."""
    cells = campaign.cells()
    per_workload = {w.name: campaign.cells(w.name) for w in campaign.workloads}
    total, done = sum(len(c) for c in per_workload.values()), 0
    requests: dict[tuple[str, str], tuple[RunRequest, tuple[str, ...]]] = {}
    for w in campaign.workloads:
        words = _words(campaign, w)
        try:
            options = reader.options(words)
        except CloudhpcError as e:
            raise campaign.error(str(e), "workload", "command", w.index) from None
        given = _given_options(campaign, w, words, options)
        spelled = {key: _matrix_option(campaign, w, key, options, given) for key in campaign.matrix}
        _once_each(campaign, spelled)
        for cell in per_workload[w.name]:
            done += 1
            if progress is not None:
                progress(done, total)
            argv = [*words, *_cell_words(campaign, cell, spelled), "--results", results]
            try:
                found = reader.requests(argv)
            except CloudhpcError as e:
                where = (
                    f"with {cell_label(cell)}: " if _cells_fault(reader, words, results, e) else ""
                )
                raise campaign.error(f"{where}{e}", "workload", "command", w.index) from None
            if len(found) != 1:
                raise campaign.error(
                    f"runs {len(found)} jobs; a workload is one run (name one kernel, one "
                    "benchmark: one workload each)",
                    "workload",
                    "command",
                    w.index,
                )
            request = found[0]
            job = dataclasses.replace(request.job, command_line=shlex.join(["cloudhpc", *argv]))
            requests[(w.name, cell_text(cell))] = (
                dataclasses.replace(request, job=job),
                tuple(argv),
            )
    runs = []
    for rep in range(1, campaign.repetitions + 1):
        for cell in cells:
            for w in campaign.workloads:
                if (w.name, cell_text(cell)) in requests:  # not excluded for this workload
                    request, argv = requests[(w.name, cell_text(cell))]
                    runs.append(PlannedRun(w.name, dict(cell), rep, request, argv))
    return CampaignPlan(campaign, results, tuple(cells), tuple(runs))


def _once_each(c: Campaign, spelled: dict[str, tuple[str, Option]]) -> None:
    """Two matrix keys that are one option (`nprocs` and `np`, `ray_address` and
    `ray-address`) would run every cell with the last one alone, recorded under both."""
    seen: dict[tuple[str, ...], str] = {}
    for key, (spelling, option) in spelled.items():
        if option.strings in seen:
            raise c.error(
                f"{seen[option.strings]} and {key} are the same option ({spelling}): give it once",
                "matrix",
                key,
            )
        seen[option.strings] = key


def _cells_fault(
    reader: CommandReader, words: list[str], results: str, error: CloudhpcError
) -> bool:
    """Whether the cell's options made the command fail (it fails otherwise without them)."""
    try:
        reader.requests([*words, "--results", results])
    except CloudhpcError as bare:
        return str(bare) != str(error)
    return True


def outline(campaign: Campaign, results: str) -> CampaignPlan:
    """The campaign's runs in order, without reading their commands (what `status` needs)."""
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


def _words(c: Campaign, w: Workload) -> list[str]:
    try:
        words = shlex.split(w.command)
    except ValueError as e:  # an unclosed quote
        raise c.error(f"cannot split into words: {e}", "workload", "command", w.index) from None
    if words and words[0] == "cloudhpc":
        words = words[1:]
    if not words:
        raise c.error("give the command after `cloudhpc`", "workload", "command", w.index)
    return words


def _resolve(word: str, options: dict[str, Option]) -> tuple[str, Option] | None:
    """The option a word of a command line spells (exactly, `--opt=value`, `-nVALUE`, or a
    unique prefix of a long option, as argparse reads it); None for a value."""
    if not word.startswith("-") or word == "-" or _is_number(word):
        return None
    if word.startswith("--"):
        name = word.split("=", 1)[0]
        if name in options:
            return name, options[name]
        matches = {o.strings: (s, o) for s, o in options.items() if s.startswith(name)}
        return next(iter(matches.values())) if len(matches) == 1 else None
    short = word[:2]
    return (short, options[short]) if short in options else None


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def _given_options(
    c: Campaign, w: Workload, words: list[str], options: dict[str, Option]
) -> set[tuple[str, ...]]:
    """The options the workload's command sets itself; the campaign's own are refused."""
    given = set()
    for word in words:
        found = _resolve(word, options)
        if found is None and word in ("-h", "--help"):
            found = (word, Option(("-h", "--help"), True))
        if found is None:
            continue
        for spelling in found[1].strings:
            if spelling in RESERVED:
                raise c.error(
                    f"{spelling} is not for a workload: {RESERVED[spelling]}",
                    "workload",
                    "command",
                    w.index,
                )
        given.add(found[1].strings)
    return given


def _matrix_option(
    c: Campaign,
    w: Workload,
    key: str,
    options: dict[str, Option],
    given: set[tuple[str, ...]],
) -> tuple[str, Option]:
    """How the matrix's `key` is spelled on the workload's command line (`nprocs` -> --np,
    `ray_address` -> --ray-address, `k` -> --k)."""
    spelling = ALIASES.get(key) or "--" + key.replace("_", "-")
    option = options.get(spelling)
    if option is None:
        raise c.error(
            f"workload {w.name!r} ({w.command}) takes no {spelling}",
            "matrix",
            key,
        )
    if spelling in RESERVED or any(s in RESERVED for s in option.strings):
        raise c.error(f"{spelling} is not a matrix option: {RESERVED[spelling]}", "matrix", key)
    if option.strings in given:
        raise c.error(
            f"workload {w.name!r} sets {spelling} in its command too: keep it in one place",
            "matrix",
            key,
        )
    return spelling, option


def _cell_words(
    c: Campaign, cell: dict[str, Scalar], spelled: dict[str, tuple[str, Option]]
) -> list[str]:
    words: list[str] = []
    for key, value in cell.items():
        spelling, option = spelled[key]
        if option.flag:
            if not isinstance(value, bool):
                raise c.error(f"{spelling} is a switch: give true or false", "matrix", key)
            words += [spelling] if value else []
        elif isinstance(value, bool):
            raise c.error(f"{spelling} takes a value, not {_word(value)}", "matrix", key)
        else:
            words += [spelling, str(value)]
    return words

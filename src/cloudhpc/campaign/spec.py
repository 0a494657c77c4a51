"""A campaign: what to run (workloads), over which launch options (the matrix), how often; from
a TOML file or, with the same keys, from Python (api/campaigns.py).

    name = "kmeans-runtimes"
    repetitions = 3
    [[workload]]
    name = "kmeans"
    app = "kmeans"                        # or bench = "pingpong", npb = "cg"
    params = { generate = true, n = 200000, k = 8, iterations = 10 }
    metric = "total_s"                    # optional: its figure of merit (analysis/merit.py)
    [[workload]]
    name = "ep"
    command = "npb ep --class S"          # or a command, as typed after `cloudhpc`
    [matrix]
    nprocs = [1, 2]
    env = ["native", "vm-net"]

Read with tomllib. Every problem is refused before anything runs, as one line naming the file,
the line and the key (`campaign.toml:9: [matrix] env: ...`): a workload's values are checked
here by the job's own declaration (params.py), the same check as the command line's; commands
are read, and the jobs checked, by plan.py, with the same kind of message.
"""

from __future__ import annotations

import itertools
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import CloudhpcError

TOP_KEYS = ("name", "description", "repetitions", "workload", "matrix", "exclude")
# what a workload runs: a command, or a job named by its kind
KINDS = {"app": "{}", "bench": "bench.{}", "npb": "npb"}
WORKLOAD_KEYS = ("name", "command", *KINDS, "params", "metric")
Scalar = str | int | float | bool


class CampaignFileError(CloudhpcError):
    """A campaign file that cannot run: `FILE:LINE: where: problem`, exit 2."""


@dataclass(frozen=True)
class Workload:
    name: str
    command: str  # as the file gives it; for a job named by its kind, the command that runs it
    index: int  # its place among the file's [[workload]] tables
    # the figure of merit reports chart it in (`metric = "latency_us@8"`, as `results compare
    # --metric` reads it); None: the workload's own (analysis/merit.py)
    metric: str | None = None
    job: str | None = None  # the job (kmeans, bench.pingpong, npb) when named by its kind
    params: dict[str, Any] = field(default_factory=dict)  # its values, by declared name
    launch: dict[str, Any] = field(default_factory=dict)  # launch options of this workload


@dataclass(frozen=True)
class Campaign:
    path: Path | None  # None: made in Python
    name: str
    repetitions: int
    workloads: tuple[Workload, ...]
    matrix: dict[str, tuple[Scalar, ...]]  # option -> its values, in the file's order
    description: str = ""
    # cells left out: each {option: values, optionally workload: names} drops the cells whose
    # options all match (for those workloads only, when it names some)
    exclude: tuple[dict[str, tuple[Scalar, ...]], ...] = ()
    text: str = field(default="", repr=False)

    def cells(self, workload: str | None = None) -> list[dict[str, Scalar]]:
        """The matrix's product, the first option varying slowest, without the excluded cells
        (for `workload`: also those excluded for it alone)."""
        keys = list(self.matrix)
        product = [
            dict(zip(keys, values, strict=True))
            for values in itertools.product(*self.matrix.values())
        ]
        return [c for c in product if not any(_excludes(x, c, workload) for x in self.exclude)]

    def where(self, table: str | None = None, key: str | None = None, index: int = 0) -> str:
        """`FILE:LINE` of `key` in `table` (the index-th of an array of tables), or of the
        table's header; `FILE` alone when the line cannot be found."""
        if self.path is None:  # made in Python: no file, no line
            return f"campaign {self.name!r}" if self.name else "campaign"
        line = locate(self.text, table, key, index)
        return f"{self.path}:{line}" if line else str(self.path)

    def error(
        self,
        problem: str,
        table: str | None = None,
        key: str | None = None,
        index: int = 0,
        shown: str | None = None,
    ) -> CampaignFileError:
        """`FILE:LINE: [table] key: problem` (a workload named by its name, once it has one;
        `shown`: the key as the label says it, `params.k`, when it is not `key`)."""
        label = f"[{table}]" if table else ""
        if table == "exclude":
            label = f"[[exclude]] {index + 1}"
        if table == "workload":
            named = self.workloads[index].name if index < len(self.workloads) else None
            label = f"workload {named!r}" if named else f"[[workload]] {index + 1}"
        label = " ".join(x for x in (label, shown or key) if x)
        where = self.where(table, key, index)
        return CampaignFileError(f"{where}: {label}: {problem}" if label else f"{where}: {problem}")


def _excludes(
    rule: dict[str, tuple[Scalar, ...]], cell: dict[str, Scalar], workload: str | None
) -> bool:
    if "workload" in rule and workload not in rule["workload"]:
        return False
    return all(_same(cell[k], vs) for k, vs in rule.items() if k != "workload")


def _same(value: Scalar, values: tuple[Scalar, ...]) -> bool:
    return any(type(value) is type(v) and value == v for v in values)


_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]\s]+)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"""^\s*(?:"([^"]*)"|'([^']*)'|([A-Za-z0-9_.-]+))\s*=""")


def locate(text: str, table: str | None, key: str | None, index: int = 0) -> int | None:
    """The 1-based line of `key` in table `table` (None: the top level; for an array of tables
    its index-th element), or of the table's header when `key` is None."""
    current: str | None = None
    seen: dict[str, int] = {}
    here = -1  # the element of the array of tables we are in
    for number, line in enumerate(text.splitlines(), 1):
        m = _HEADER.match(line)
        if m:
            current = m.group(2)
            if m.group(1) == "[[":
                seen[current] = seen.get(current, -1) + 1
                here = seen[current]
            else:
                here = 0
            if key is None and current == table and here == index:
                return number
            continue
        k = _KEY.match(line)
        if not k or key is None:
            continue
        name = next(g for g in k.groups() if g is not None)
        if current == table and here == (index if table else -1) and name == key:
            return number
        if current is None and table is not None and name == f"{table}.{key}":  # dotted key
            return number
    if key is not None and table is not None:  # the key is not there: the table's header
        return locate(text, table, None, index)
    return None


def read_campaign(path: str | Path) -> Campaign:
    """Read and check a campaign file (its structure; the commands are read by plan.py)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise CloudhpcError(f"no campaign file {path}") from None
    except IsADirectoryError:
        raise CloudhpcError(f"{path} is a directory, not a campaign file") from None
    except OSError as e:
        raise CloudhpcError(f"cannot read campaign file {path}: {e.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CampaignFileError(f"{path}: not UTF-8 text (byte {e.start})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"\(at line (\d+), column \d+\)", str(e))
        msg = re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", str(e))
        line = m.group(1) if m else len(text.splitlines())
        where = f"{path}:{line}" if "end of document" in str(e) or m else str(path)
        raise CampaignFileError(f"{where}: not a TOML file: {msg}") from None
    return campaign_from_data(data, path, text)


def campaign_from_data(data: dict[str, Any], path: Path | None = None, text: str = "") -> Campaign:
    """A campaign from its keys (a TOML file's, or the same given in Python), checked."""
    shell = Campaign(path, "", 1, (), {}, text=text)
    if not isinstance(data, dict):
        raise shell.error("a campaign is a table of name, workload, matrix, ...")
    for key in data:
        if key not in TOP_KEYS:
            raise shell.error(
                "unknown key (a campaign file has name, description, repetitions, "
                "[[workload]], [matrix] and [[exclude]])",
                key=key,
            )
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise shell.error("give the campaign a name (a non-empty string)", key="name")
    if any(not c.isprintable() for c in name):
        raise shell.error("the name must be printable text on one line", key="name")
    shell = Campaign(path, name.strip(), 1, (), {}, text=text)
    description = data.get("description", "")
    if not isinstance(description, str):
        raise shell.error("a string", key="description")
    reps = data.get("repetitions", 1)
    if not isinstance(reps, int) or isinstance(reps, bool) or reps < 1:
        raise shell.error(f"a whole number >= 1, not {reps!r}", key="repetitions")
    workloads = _workloads(shell, data.get("workload"))
    shell = Campaign(path, name.strip(), 1, workloads, {}, text=text)
    matrix = _matrix(shell, data.get("matrix"))
    shell = Campaign(path, name.strip(), reps, workloads, matrix, description, text=text)
    exclude = _exclude(shell, data.get("exclude"))
    c = Campaign(path, name.strip(), reps, workloads, matrix, description, exclude, text)
    if not any(c.cells(w.name) for w in workloads):
        raise c.error("every cell of the matrix is excluded", key="exclude")
    return c


def _workloads(c: Campaign, tables: Any) -> tuple[Workload, ...]:
    if tables is None:
        raise c.error("no [[workload]]: give at least one, with name and command", key="workload")
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise c.error("write each workload as a [[workload]] table", key="workload")
    found: list[Workload] = []
    names: set[str] = set()
    for i, t in enumerate(tables):
        name = t.get("name")
        if not isinstance(name, str) or not name.strip():
            raise c.error("give the workload a name (a non-empty string)", "workload", "name", i)
        if any(not ch.isprintable() for ch in name):
            raise c.error("the name must be printable text on one line", "workload", "name", i)
        if name in names:
            raise c.error(f"a second workload named {name!r}", "workload", "name", i)
        names.add(name)
        found.append(_workload(Campaign(c.path, c.name, 1, (*found, Workload(name, "", i)), {},
                                        text=c.text), t, name, i))  # fmt: skip
    return tuple(found)


def _metric(c: Campaign, value: Any, i: int) -> str | None:
    """A workload's `metric`, checked as `results compare --metric` reads it."""
    if value is None:
        return None
    from ..analysis.fields import parse_metric

    if not isinstance(value, str) or not value.strip():
        raise c.error(
            'a metric as `results compare --metric` takes it ("latency_us@8", "mops", '
            '"total_s", "bandwidth_MBs@1M")',
            "workload",
            "metric",
            i,
        )
    try:
        return parse_metric(value).name
    except CloudhpcError as e:
        raise c.error(str(e).replace("--metric ", ""), "workload", "metric", i) from None


def _workload(c: Campaign, t: dict[str, Any], name: str, i: int) -> Workload:
    """One [[workload]]: a command, or a job named by its kind (app, bench or npb) with its
    params and launch options, each value checked by the job's declaration."""
    from ..launch.jobs import command_words, spec_of
    from ..launch.options import LAUNCH, RUNTIME

    launch_keys = {*LAUNCH.names, *RUNTIME.names, "np"}
    kinds = [k for k in KINDS if k in t]
    for key in t:
        if key not in WORKLOAD_KEYS and not (kinds and key in launch_keys):
            raise c.error(
                "unknown key (a workload has name and command, or app, bench or npb with "
                "params and launch options; optionally metric)",
                "workload", key, i,
            )  # fmt: skip
    metric = _metric(c, t.get("metric"), i)
    command = t.get("command")
    if "command" in t or not kinds:
        if kinds or "params" in t:
            raise c.error("give a command, or app/bench/npb with params: not both",
                          "workload", "command", i)  # fmt: skip
        if not isinstance(command, str) or not command.strip():
            raise c.error("give the command, as you would type it after `cloudhpc` (or app = "
                          "NAME with its params)", "workload", "command", i)  # fmt: skip
        return Workload(name, command.strip(), i, metric)
    if len(kinds) > 1:
        raise c.error(f"a workload runs one job: give one of {', '.join(kinds)}",
                      "workload", kinds[1], i)  # fmt: skip
    kind = kinds[0]
    what = t[kind]
    if not isinstance(what, str) or not what.strip():
        raise c.error(f"the {kind} to run, by name (a string)", "workload", kind, i)
    job = KINDS[kind].format(what.strip())
    params = t.get("params", {})
    if kind == "npb":  # npb = "cg": the kernel
        params = {"kernel": what.strip(), **(params if isinstance(params, dict) else {})}
    if not isinstance(params, dict):
        raise c.error("a table of the job's parameters (params = { k = 8 })", "workload",
                      "params", i)  # fmt: skip
    try:
        spec = spec_of(job)
    except CloudhpcError as e:
        raise c.error(str(e), "workload", kind, i) from None
    for key, value in params.items():  # the job's own declaration checks each value
        try:
            spec.params.given({key: value})
        except CloudhpcError as e:
            raise c.error(str(e), "workload", "params", i, shown=f"params.{key}") from None
    launch = {("nprocs" if k == "np" else k): v for k, v in t.items() if k in launch_keys}
    for key, value in launch.items():
        try:
            (LAUNCH if key in LAUNCH else RUNTIME).given({key: value})
        except CloudhpcError as e:
            raise c.error(str(e), "workload", key, i) from None
    command = shlex.join(command_words(job, params, launch))  # what it runs, for the records
    return Workload(name, command, i, metric, job, dict(params), launch)


def _matrix(c: Campaign, table: Any) -> dict[str, tuple[Scalar, ...]]:
    if table is None:
        raise c.error(
            "no [matrix]: give the launch options to compare, a list of values each "
            '(e.g. env = ["native", "vm-net"])',
            key="matrix",
        )
    if not isinstance(table, dict):
        raise c.error("write the matrix as a [matrix] table", key="matrix")
    if not table:
        raise c.error("the matrix is empty: give at least one option with its values", "matrix")
    matrix: dict[str, tuple[Scalar, ...]] = {}
    for key, values in table.items():
        if isinstance(values, (str, int, float, bool)):
            values = [values]  # one value: the same for every cell
        if not isinstance(values, list):
            raise c.error("a list of values (strings, numbers, true/false)", "matrix", key)
        if not values:
            raise c.error("an empty list: give at least one value", "matrix", key)
        for v in values:
            if not isinstance(v, (str, int, float, bool)):
                raise c.error(f"{v!r} is not a value (strings, numbers, true/false)", "matrix", key)
        seen: set[tuple[type, Scalar]] = set()  # 1 and 1.0 and true are three values
        for v in values:
            if (type(v), v) in seen:
                raise c.error(f"{v!r} is listed twice", "matrix", key)
            seen.add((type(v), v))
        matrix[key] = tuple(values)
    return matrix


def _exclude(c: Campaign, tables: Any) -> tuple[dict[str, tuple[Scalar, ...]], ...]:
    """[[exclude]] tables: matrix options (and `workload`) with a value or a list of values
    each; a value the matrix (or the workloads) does not have is refused: it would exclude
    nothing, and is most likely a typo."""
    if tables is None:
        return ()
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise c.error("write each exclusion as an [[exclude]] table", key="exclude")
    rules = []
    for i, t in enumerate(tables):
        if not t:
            raise c.error("an empty exclusion would drop every cell", "exclude", None, i)
        rule: dict[str, tuple[Scalar, ...]] = {}
        for key, values in t.items():
            values = tuple(values) if isinstance(values, list) else (values,)
            if key == "workload":
                known = tuple(w.name for w in c.workloads)
                what = "workloads"
            elif key in c.matrix:
                known, what = c.matrix[key], f"values of [matrix] {key}"
            else:
                raise c.error("not an option of the [matrix] (nor workload)", "exclude", key, i)
            for v in values:
                if not _same(v, known):
                    raise c.error(
                        f"{v!r} is not one of the {what} ({', '.join(map(repr, known))})",
                        "exclude",
                        key,
                        i,
                    )
            rule[key] = values
        rules.append(rule)
    return tuple(rules)

"""A run record as a typed value: `Record.from_dict` checks a stored record field by field
against the schema its `schema` field names (`record.schema.json` beside this file is the same
contract in JSON Schema, for other tools), upgrades what older versions wrote, and gives typed
fields. A record that does not pass is refused with the field that failed (`RecordInvalid`); the
store skips it with one warning line naming the file and that field.

What changed over the versions of `cloudhpc.record/1`, and how it is read now:
- no `schema` field: read as `cloudhpc.record/1` (the first form);
- no `mpi.name` (before `--mpi`): the implementation and version the library's text names
  (`MPICH Version: 4.3`), else `mpich` (every run used the mpich wheel then);
- `instance` as a bare type name (`"c5.large"`): `{type, nodes: 1}`;
- no `status`: `ok` (a failed run was never recorded then); no `exit_code`: 0 when ok, else 1;
- no `engine_info`, `jit`, `jit_cache`, `checked_against`, `provenance`, `cluster`, `campaign`,
  `instance`: empty or null;
- a metric or row value that is NaN or infinite (written before the writer refused them): null.
A record of a newer schema (`cloudhpc.record/2`) is refused as "written by a newer cloudhpc".
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import CloudhpcError

SCHEMA = "cloudhpc.record/1"
SCHEMA_PREFIX = "cloudhpc.record/"
SCHEMA_FILE = Path(__file__).with_name("record.schema.json")

# A duration longer than this (about 31 years) is not a measurement: a hand-edited or damaged
# value, which would overflow a cost to infinity.
MAX_SECONDS = 1e9
MAX_PROCS = 1 << 24
STATUSES = ("ok", "failed", "timeout")
# A record id names a file in the store: letters, digits, '.', '_' and '-', never a path.
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
# A campaign run id as campaigns.new_run_id makes it: the UTC time and 6 hex digits.
RUN_ID_PATTERN = re.compile(r"\d{8}T\d{6}-[0-9a-f]{6}")


class RecordInvalid(CloudhpcError):
    """A record that does not follow its schema: `field` names the (dotted) field."""

    def __init__(self, field_name: str, problem: str, newer: bool = False) -> None:
        self.field = field_name
        self.problem = problem
        self.newer = newer
        super().__init__(f"field {field_name!r} {problem}")


def is_record_id(text: str) -> bool:
    return bool(ID_PATTERN.fullmatch(text)) and ".." not in text


# ---- the typed parts ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Timings:
    """Seconds measured inside the job: `total_s` between two barriers, each phase's maximum
    over ranks, `check_s` (the --check, not in total_s). None: not measured (a failed run)."""

    total_s: float | None = None
    check_s: float | None = None
    phases: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Mpi:
    name: str = "mpich"  # the implementation (records before --mpi ran the mpich wheel)
    version: str | None = None
    library: str | None = None  # MPI_Get_library_version's text


@dataclass(frozen=True, slots=True)
class Env:
    name: str | None = None
    description: str | None = None
    variables: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Host:
    hostname: str | None = None
    cpu_model: str | None = None
    cores: int | None = None


@dataclass(frozen=True, slots=True)
class Instance:
    """What the run stands for in a cloud: an instance type and how many of them."""

    type: str
    nodes: int = 1


@dataclass(frozen=True, slots=True)
class Cluster:
    """The emulated cluster a run ran on."""

    name: str | None = None
    hosts: tuple[Mapping[str, Any], ...] = ()
    ephemeral: bool = False


@dataclass(frozen=True, slots=True)
class CampaignTag:
    """Which campaign run, workload, matrix cell and repetition a record belongs to."""

    name: str
    workload: str
    cell: Mapping[str, Any]
    repetition: int
    run: str = ""  # the campaign run (campaigns.new_run_id); "" in the earliest records
    command: str | None = None  # the workload's command as the file gave it
    file: str | None = None


@dataclass(frozen=True, slots=True, eq=False)  # a record is itself: hashable, compared by id
class Record:
    """One stored run. Typed fields for what readers use; `data` is the whole record as stored
    (after the upgrades above), `path` its file (None: not read from a store).

    A Record is also a read-only mapping over `data`, so code written against the dict form
    keeps working while it moves to the typed fields."""

    id: str
    app: str
    started_at: str
    started: dt.datetime
    status: str
    exit_code: int
    command_line: str
    cloudhpc_version: str | None
    host: Host
    mpi: Mpi
    env: Env
    launcher: str | None
    engine: str | None
    layout: str | None
    nprocs: int | None
    nodes: tuple[str, ...]
    hosts: tuple[Mapping[str, Any], ...]  # the hosts the job was given (name, slots)
    timings: Timings
    params: Mapping[str, Any]
    metrics: Mapping[str, Any]
    rows: tuple[Mapping[str, Any], ...]
    verified: bool | None
    checked_against: str | None
    jit_cache: str | None
    outputs: tuple[str, ...]
    report: str | None
    extra: Mapping[str, Any]
    instance: Instance | None
    campaign: CampaignTag | None
    cluster: Cluster | None
    data: Mapping[str, Any] = field(repr=False)
    path: Path | None = field(default=None, compare=False)
    schema: str = SCHEMA

    @property
    def total_s(self) -> float | None:
        return self.timings.total_s

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def section(self, name: str) -> Mapping[str, Any]:
        """A mapping section of the record (`launch`, `software`, `provenance`, `engine_info`,
        `jit`, ...) as stored; {} when it has none."""
        value = self.data.get(name)
        return value if isinstance(value, dict) else {}

    def lookup(self, path: tuple[str, ...]) -> Any:
        """The value at a dotted path of the stored record (`params.kernel`,
        `campaign.cell.nprocs`); None where it has none."""
        node: Any = self.data
        for part in path:
            if not isinstance(node, Mapping) or part not in node:
                return None
            node = node[part]
        return node

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON would hold it (a copy of `data`)."""
        return dict(self.data)

    @classmethod
    def from_dict(cls, obj: Any, path: Path | None = None, *, nonfinite: bool = True) -> Record:
        """The record `obj` (parsed JSON) as a Record; RecordInvalid naming the first field
        that does not follow the schema. `nonfinite=False`: the caller knows that `obj` holds
        no NaN or infinity (its JSON text had none), so metrics and rows are not searched."""
        return _build(obj, path, nonfinite)

    # -- read-only mapping over `data`, for readers not yet moved to the typed fields --------
    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self.data

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def keys(self):
        return self.data.keys()

    def items(self):
        return self.data.items()

    def values(self):
        return self.data.values()


Mapping.register(Record)


# ---- checking and upgrading --------------------------------------------------------------


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _str(obj: Mapping[str, Any], key: str, *, required: bool = False, where: str = "") -> Any:
    value = obj.get(key)
    if value is None:
        if required:
            raise RecordInvalid(where + key, "is missing" if key not in obj else "is null")
        return None
    if not isinstance(value, str):
        raise RecordInvalid(where + key, f"is {_kind(value)}, not a string")
    return value


def _dict(obj: Mapping[str, Any], key: str, where: str = "") -> dict[str, Any]:
    value = obj.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RecordInvalid(where + key, f"is {_kind(value)}, not an object")
    return value


def _list(obj: Mapping[str, Any], key: str, where: str = "") -> list[Any]:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise RecordInvalid(where + key, f"is {_kind(value)}, not a list")
    return value


def _int(value: Any, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer() and low <= value <= high:
            return int(value)
        raise RecordInvalid(name, f"is {_kind(value)}, not a whole number")
    if not low <= value <= high:
        raise RecordInvalid(name, f"is {value}, outside {low}..{high}")
    return value


def _seconds(value: Any, name: str) -> float | None:
    """A duration: a finite number of seconds in 0..MAX_SECONDS, or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RecordInvalid(name, f"is {_kind(value)}, not a number of seconds")
    if not math.isfinite(value):
        raise RecordInvalid(name, f"is {value}, not a finite number of seconds")
    if not 0 <= value <= MAX_SECONDS:
        raise RecordInvalid(name, f"is {value:g} s, outside 0..{MAX_SECONDS:g} s")
    return float(value)


def _finite(value: Any) -> Any:
    """A metric's or row's value with NaN and infinities read as null (nested too)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _has_nonfinite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_has_nonfinite(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_nonfinite(v) for v in value)
    return False


def schema_version(obj: Mapping[str, Any]) -> int:
    """The version of `cloudhpc.record/N` a record says it follows (1 when it says none)."""
    schema = obj.get("schema", SCHEMA)
    if not isinstance(schema, str) or not schema.startswith(SCHEMA_PREFIX):
        raise RecordInvalid("schema", f"is {schema!r}, not a cloudhpc record schema")
    try:
        version = int(schema[len(SCHEMA_PREFIX) :])
    except ValueError:
        raise RecordInvalid("schema", f"is {schema!r}, not a cloudhpc record schema") from None
    if version > 1:
        raise RecordInvalid("schema", f"was written by a newer cloudhpc ({schema})", newer=True)
    if version < 1:
        raise RecordInvalid("schema", f"is {schema!r}, not a cloudhpc record schema")
    return version


def _timings(obj: Mapping[str, Any]) -> Timings:
    t = _dict(obj, "timings")
    phases_in = _dict(t, "phases", "timings.")
    phases = {}
    for k, v in phases_in.items():
        s = _seconds(v, f"timings.phases.{k}")
        if s is not None:
            phases[k] = s
    for k, v in t.items():  # every other timing is seconds too (total_s, check_s, ...)
        if k != "phases" and (k.endswith("_s") or isinstance(v, int | float)):
            _seconds(v, f"timings.{k}")
    return Timings(
        total_s=_seconds(t.get("total_s"), "timings.total_s"),
        check_s=_seconds(t.get("check_s"), "timings.check_s"),
        phases=phases,
    )


def _campaign(obj: Mapping[str, Any]) -> CampaignTag | None:
    c = obj.get("campaign")
    if c is None:
        return None
    if not isinstance(c, dict):
        raise RecordInvalid("campaign", f"is {_kind(c)}, not an object")
    name = _str(c, "name", required=True, where="campaign.")
    workload = _str(c, "workload", required=True, where="campaign.")
    if not name:
        raise RecordInvalid("campaign.name", "is empty")
    if "cell" not in c or not isinstance(c["cell"], dict):
        raise RecordInvalid("campaign.cell", f"is {_kind(c.get('cell'))}, not an object")
    repetition = _int(c.get("repetition"), "campaign.repetition", 1, 1 << 31)
    run = c.get("run")
    if run is None:
        run = ""
    elif not isinstance(run, str) or not RUN_ID_PATTERN.fullmatch(run):
        raise RecordInvalid(
            "campaign.run", f"is {run!r}, not a campaign run id (YYYYMMDDTHHMMSS-xxxxxx)"
        )
    return CampaignTag(
        name=name,
        workload=workload,
        cell=c["cell"],
        repetition=repetition,
        run=run,
        command=_str(c, "command", where="campaign."),
        file=_str(c, "file", where="campaign."),
    )


def _instance(obj: dict[str, Any]) -> Instance | None:
    inst = obj.get("instance")
    if inst is None:
        return None
    if isinstance(inst, str):  # an early form: the type alone
        if not inst:
            raise RecordInvalid("instance", "is empty")
        obj["instance"] = {"type": inst, "nodes": 1}
        return Instance(inst, 1)
    if not isinstance(inst, dict):
        raise RecordInvalid("instance", f"is {_kind(inst)}, not an object")
    kind = _str(inst, "type", required=True, where="instance.")
    if not kind:
        raise RecordInvalid("instance.type", "is empty")
    nodes = inst.get("nodes")
    return Instance(kind, 1 if nodes is None else _int(nodes, "instance.nodes", 1, MAX_PROCS))


def _cluster(obj: Mapping[str, Any]) -> Cluster | None:
    c = obj.get("cluster")
    if c is None:
        return None
    if not isinstance(c, dict):
        raise RecordInvalid("cluster", f"is {_kind(c)}, not an object")
    hosts = _list(c, "hosts", "cluster.")
    return Cluster(
        name=_str(c, "name", where="cluster."),
        hosts=tuple(h for h in hosts if isinstance(h, dict)),
        ephemeral=bool(c.get("ephemeral")),
    )


# MPI_Get_library_version's text names the implementation and its version
_MPI_LIBRARIES = (
    (re.compile(r"MPICH Version:\s*(\S+)"), "mpich"),
    (re.compile(r"Open MPI v(\S+?),"), "openmpi"),
    (re.compile(r"Intel\(R\) MPI Library (\S+)"), "intelmpi"),
)


def _mpi(obj: dict[str, Any]) -> Mpi:
    m = _dict(obj, "mpi")
    name = _str(m, "name", where="mpi.")
    version = m.get("version")
    library = m.get("library")
    library = None if library is None else str(library)
    if not name:  # before --mpi: the library's own text says which, else the mpich wheel
        name = "mpich"
        for pattern, known in _MPI_LIBRARIES:
            found = pattern.search(library or "")
            if found:
                name, version = known, version or found.group(1)
                break
        m = obj["mpi"] = {**m, "name": name, **({"version": version} if version else {})}
    return Mpi(name=name, version=None if version is None else str(version), library=library)


def _env(obj: Mapping[str, Any]) -> Env:
    e = _dict(obj, "env")
    variables = _dict(e, "variables", "env.")
    return Env(
        name=_str(e, "name", where="env."),
        description=_str(e, "description", where="env."),
        variables=variables
        if all(isinstance(v, str) for v in variables.values())
        else {str(k): str(v) for k, v in variables.items()},
    )


def _host(obj: Mapping[str, Any]) -> Host:
    h = _dict(obj, "host")
    cores = h.get("cores")
    return Host(
        hostname=None if h.get("hostname") is None else str(h["hostname"]),
        cpu_model=None if h.get("cpu_model") is None else str(h["cpu_model"]),
        cores=cores if isinstance(cores, int) and not isinstance(cores, bool) else None,
    )


def _build(obj: Any, path: Path | None, nonfinite: bool = True) -> Record:
    if not isinstance(obj, dict):
        raise RecordInvalid("(record)", f"is {_kind(obj)}, not an object")
    schema_version(obj)
    data = dict(obj)  # upgrades go into a copy: `obj` stays as it was read
    data["schema"] = SCHEMA
    rid = _str(data, "id", required=True)
    if not is_record_id(rid):
        raise RecordInvalid("id", f"is {rid!r}, not a record id (letters, digits, '.', '_', '-')")
    app = _str(data, "app", required=True)
    if not app:
        raise RecordInvalid("app", "is empty")
    started_at = _str(data, "started_at", required=True)
    try:
        started = dt.datetime.fromisoformat(started_at)
    except ValueError:
        raise RecordInvalid("started_at", f"is {started_at!r}, not an ISO date and time") from None
    if started.tzinfo is None:
        started = started.replace(tzinfo=dt.UTC)
    status = _str(data, "status") or "ok"
    if status not in STATUSES:
        raise RecordInvalid("status", f"is {status!r}, not one of {', '.join(STATUSES)}")
    data["status"] = status
    code = data.get("exit_code")
    exit_code = (0 if status == "ok" else 1) if code is None else _int(code, "exit_code", 0, 255)
    nprocs = data.get("nprocs")
    if nprocs is not None:
        nprocs = _int(nprocs, "nprocs", 1, MAX_PROCS)
    verified = data.get("verified")
    if verified is not None and not isinstance(verified, bool):
        raise RecordInvalid("verified", f"is {_kind(verified)}, not true, false or null")
    for key in ("host", "software", "launch", "engine_info", "params", "extra", "provenance"):
        _dict(data, key)
    jit = data.get("jit")
    if jit is not None and not isinstance(jit, dict):
        raise RecordInvalid("jit", f"is {_kind(jit)}, not an object")
    metrics = _dict(data, "metrics")
    if nonfinite and _has_nonfinite(metrics):
        metrics = data["metrics"] = _finite(metrics)
    rows = _list(data, "rows")
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise RecordInvalid(f"rows[{i}]", f"is {_kind(row)}, not an object")
    if nonfinite and _has_nonfinite(rows):
        rows = data["rows"] = _finite(rows)
    nodes = _list(data, "nodes")
    outputs = _list(data, "outputs")
    hosts = _list(data, "hosts")
    for i, h in enumerate(hosts):
        if not isinstance(h, dict):
            raise RecordInvalid(f"hosts[{i}]", f"is {_kind(h)}, not an object")
    return Record(
        id=rid,
        app=app,
        started_at=started_at,
        started=started,
        status=status,
        exit_code=exit_code,
        command_line=_str(data, "command_line") or "",
        cloudhpc_version=_str(data, "cloudhpc_version"),
        host=_host(data),
        mpi=_mpi(data),
        env=_env(data),
        launcher=_str(data, "launcher"),
        engine=_str(data, "engine"),
        layout=_str(data, "layout"),
        nprocs=nprocs,
        nodes=tuple(str(n) for n in nodes),
        hosts=tuple(hosts),
        timings=_timings(data),
        params=_dict(data, "params"),
        metrics=metrics,
        rows=tuple(rows),
        verified=verified,
        checked_against=_str(data, "checked_against"),
        jit_cache=_str(data, "jit_cache"),
        outputs=tuple(str(o) for o in outputs),
        report=_str(data, "report"),
        extra=_dict(data, "extra"),
        instance=_instance(data),
        campaign=_campaign(data),
        cluster=_cluster(data),
        data=data,
        path=path,
    )


def as_record(record: Record | Mapping[str, Any]) -> Record:
    """A Record, from a Record or from a record's dict (one just made, not read from a store)."""
    if isinstance(record, Record):
        return record
    data = dict(record)
    path = data.pop("_path", None)  # where run_job wrote it (not a field of the record)
    return Record.from_dict(data, Path(path) if path else None)

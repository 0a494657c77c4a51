"""What cloudhpc made, and the proof that it made it: the one place that decides what cloudhpc
may remove or kill (docs/failures.md, rule 1). Every remover of a directory and every killer of
a process that cloudhpc did not start in this very call goes through here.

A directory cloudhpc makes holds a marker file (`MARK`) with a random token, and cloudhpc's own
state records that token with the directory's path and inode (`STATE/made/TOKEN.json`, STATE
being $CLOUDHPC_STATE, else $XDG_STATE_HOME/cloudhpc, else ~/.local/state/cloudhpc). A directory
is cloudhpc's only when its marker, its path and its inode all match one record: a file name
(`owner`, `slurm.conf`), a marker with another token, a marker copied into another directory or
linked to, a symbolic link, or another directory put where the made one was prove nothing, and
such a directory is never touched.

What goes when a made directory is removed: all of it when cloudhpc made it for itself alone
(`whole=True`: a run's private control directory, filled by the run's processes), else only the
parts it recorded (`add_part`, before making each); the directory itself goes only if cloudhpc
created it and nothing else is left in it. A directory that existed before (an empty one the
user named) is lent, never taken: it stays, and so does any file a user wrote into one.

Processes: a record holds the PIDs of the processes cloudhpc started for it, each with its start
time (a PID reused by another process is not that process), and the processes started for it
may carry `VAR=TOKEN` in their environment, a value no user's shell holds by accident.
`end_processes` kills those and every process below them, found before any is killed; never a
process found by a variable a user may carry (SLURM_CONF, a directory's path).

A record whose owner process (PID and start time) is gone is an orphan (its owner was
SIGKILLed); the next command of its kind removes what it made (`orphans`).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import stat
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .errors import CloudhpcError
from .procs import descendants, kill, parent_pids, start_time, tagged

STATE_VAR = "CLOUDHPC_STATE"
MARK = ".cloudhpc-made"
_TOKEN = re.compile(r"[0-9a-f]{32}")


def state_home() -> Path:
    """cloudhpc's own state: $CLOUDHPC_STATE, else $XDG_STATE_HOME/cloudhpc, else
    ~/.local/state/cloudhpc."""
    explicit = os.environ.get(STATE_VAR)
    if explicit:
        return Path(explicit).expanduser().absolute()
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local/state")
    return Path(base).absolute() / "cloudhpc"


def _registry() -> Path:
    """STATE/made; where STATE cannot be made (a read-only home), a directory of this user's
    alone in the temporary directory, so that runs still work (what is recorded there is found
    there only)."""
    home = state_home() / "made"
    try:
        home.mkdir(parents=True, exist_ok=True)
        return home
    except OSError:
        if os.environ.get(STATE_VAR):
            return home  # asked for: _save names it in its error
    private = Path(tempfile.gettempdir()) / f"cloudhpc-state-{os.getuid()}"
    try:
        private.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(private)
    except OSError:
        return home
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return home  # not this user's alone: never trusted
    return private / "made"


@dataclass
class Made:
    """One directory cloudhpc made (see the module's docstring)."""

    token: str
    kind: str
    path: str
    dev: int
    ino: int
    owner: list | None  # [pid, start time] of the process it belongs to; None: kept until removed
    made_dir: bool  # cloudhpc created the directory (else it was an empty one, lent)
    whole: bool  # everything in it is cloudhpc's (else only `parts`)
    parts: list[str] = field(default_factory=list)
    processes: dict[str, list] = field(default_factory=dict)  # label -> [pid, start time]
    kernel: dict[str, list] = field(default_factory=dict)  # "netns NAME"/"link NAME" -> its id


def _record_path(token: str) -> Path:
    return _registry() / f"{token}.json"


def _save(made: Made) -> None:
    from .atomic import write_text

    reg = _registry()
    try:
        reg.mkdir(parents=True, exist_ok=True)
        write_text(_record_path(made.token), json.dumps(asdict(made)))
    except OSError as e:
        raise CloudhpcError(
            f"cannot record what cloudhpc makes in {reg}: {e.strerror} (set {STATE_VAR} to a "
            "writable directory)"
        ) from None


def _load(token: str) -> Made | None:
    if not _TOKEN.fullmatch(token):
        return None
    try:
        data = json.loads(_record_path(token).read_text())
        made = Made(**data)
    except (OSError, ValueError, TypeError):
        return None
    return made if made.token == token else None


def _forget(made: Made) -> None:
    try:
        _record_path(made.token).unlink()
    except OSError:
        pass


def _read_mark(path: str) -> str | None:
    """The token in `path`'s marker: a regular file, read without following a link."""
    try:
        fd = os.open(os.path.join(path, MARK), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        text = os.read(fd, 64).decode("ascii", errors="replace").strip()
    finally:
        os.close(fd)
    return text if _TOKEN.fullmatch(text) else None


def _norm(path: str | os.PathLike) -> str:
    """`path` absolute, its parent's symbolic links resolved (not its own: a link is not the
    directory it points to), so that two spellings of one directory name it alike."""
    path = os.path.abspath(path)
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


def find(path: str | os.PathLike, kind: str | None = None) -> Made | None:
    """The record proving that cloudhpc made the directory `path` (of `kind`), else None."""
    path = _norm(path)
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        return None  # a symbolic link, even to a made directory, is not it
    token = _read_mark(path)
    made = _load(token) if token else None
    if made is None or made.path != path or (made.dev, made.ino) != (st.st_dev, st.st_ino):
        return None
    return made if kind is None or made.kind == kind else None


def make_dir(
    kind: str,
    *,
    path: str | os.PathLike | None = None,
    parent: str | os.PathLike | None = None,
    prefix: str = "",
    owner: int | None = -1,
    whole: bool = True,
    mode: int | None = None,
) -> Made:
    """Make a directory of `kind` and record it: a new one named `prefix` + random characters
    in `parent` (default: the temporary directory), or `path` (created, with its parents, if
    missing; lent if it exists and is empty; refused otherwise). `mode`: of one it creates.
    `owner`: the pid of the process
    it belongs to (-1: this one; None: none, kept until removed). `whole`: the whole directory
    is cloudhpc's (only for one it creates); else only the parts recorded with add_part."""
    if path is None:
        made_dir = True
        where = _norm(tempfile.mkdtemp(prefix=prefix, dir=parent))
    else:
        where = _norm(path)
        made_dir = not os.path.lexists(where)
        if made_dir:
            os.makedirs(where)
        elif os.path.islink(where) or not os.path.isdir(where):
            raise CloudhpcError(f"{where} exists and is not a directory")
        elif os.listdir(where):
            raise CloudhpcError(
                f"{where} is not empty and is not cloudhpc's: give a new or an empty directory"
            )
    if mode is not None and made_dir:
        os.chmod(where, mode)
    st = os.lstat(where)
    pid = os.getpid() if owner == -1 else owner
    made = Made(
        token=secrets.token_hex(16),
        kind=kind,
        path=where,
        dev=st.st_dev,
        ino=st.st_ino,
        owner=None if pid is None else [pid, start_time(pid)],
        made_dir=made_dir,
        whole=whole and made_dir,
    )
    try:
        _save(made)  # the record first: a marker alone would prove nothing
        fd = os.open(os.path.join(where, MARK), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "w") as fh:
            fh.write(made.token + "\n")
    except BaseException:
        _forget(made)
        if made_dir:
            shutil.rmtree(where, ignore_errors=True)
        raise
    return made


def add_part(made: Made, *names: str) -> None:
    """Record that cloudhpc is about to make `names` (entries of the made directory)."""
    for name in names:
        if not name or "/" in name or name in (".", "..", MARK):
            raise ValueError(name)
    made.parts.extend(n for n in names if n not in made.parts)
    _save(made)


def rename(made: Made, new_path: str | os.PathLike, keep: bool = False) -> None:
    """Rename the made directory (a complete copy to its final name) and its record with it;
    `keep`: it belongs to no process any more, kept until removed."""
    new_path = _norm(new_path)
    old = made.path
    made.path = new_path
    if keep:
        made.owner = None
    _save(made)  # first: a record naming a missing directory is forgotten, never misused
    os.rename(old, new_path)


def add_process(made: Made, pid: int, label: str) -> None:
    """Record process `pid` (with its start time) as one cloudhpc started for `made`."""
    made.processes[label] = [pid, start_time(pid)]
    _save(made)


def live_processes(made: Made) -> dict[str, int]:
    """label -> pid of the recorded processes that are still those processes, and still run: a
    zombie has ended (a daemon's is reaped by init, here a second or more later)."""
    return {
        label: pid
        for label, (pid, started) in made.processes.items()
        if started is not None and start_time(pid) == started and _state(pid) != "Z"
    }


def signal_process(made: Made, label: str, sig: int) -> bool:
    """Send `sig` to the recorded process `label` if it is still that process."""
    pid = live_processes(made).get(label)
    if pid is None:
        return False
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def token_entry(made: Made, var: str) -> str:
    """The environment entry the processes started for `made` carry: VAR=TOKEN."""
    return f"{var}={made.token}"


def end_processes(made: Made, var: str | None = None, rounds: int = 50) -> int:
    """SIGKILL the recorded processes still alive, those carrying `var`=the record's token, and
    every process below them (the tree is read before anything is killed, as the children of a
    killed process are re-parented); again until none is left. Returns how many were signalled."""
    seen: set[int] = set()
    for _ in range(rounds):
        roots = set(live_processes(made).values())
        if var:
            roots |= tagged(token_entry(made, var))
        table = parent_pids()
        pids = set(roots)
        for pid in roots:
            pids |= descendants(pid, table)
        pids = alive(pids - {os.getpid()})  # a zombie is over: only its parent can reap it
        if not pids:
            break
        kill(pids)
        seen |= pids
        time.sleep(0.005)
    return len(seen)


def alive(pids: set[int]) -> set[int]:
    """Those of `pids` that still run (neither gone nor zombies)."""
    return {p for p in pids if _state(p) not in ("Z", None)}


def _state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    return raw[raw.rfind(b")") + 2 :][:1].decode()


def remove_dir(target: Made | str | os.PathLike) -> bool:
    """Remove what cloudhpc made of the directory (see the module's docstring) and forget it.
    False, touching nothing, when the directory is not proved cloudhpc's (a record whose
    directory is gone or replaced is forgotten)."""
    path = target.path if isinstance(target, Made) else _norm(target)
    made = find(path)
    if isinstance(target, Made) and (made is None or made.token != target.token):
        _forget(target)
        return False
    if made is None:
        return False
    if made.whole:
        shutil.rmtree(path, ignore_errors=True)
    else:
        for name in made.parts:
            part = os.path.join(path, name)
            if os.path.isdir(part) and not os.path.islink(part):
                shutil.rmtree(part, ignore_errors=True)
            else:
                try:
                    os.unlink(part)
                except FileNotFoundError:
                    pass
        try:
            os.unlink(os.path.join(path, MARK))
        except FileNotFoundError:
            pass
        if made.made_dir:
            try:
                os.rmdir(path)
            except OSError:  # a file of someone else's is in it: it stays, with the directory
                pass
    _forget(made)
    return True


def orphans(kind: str) -> list[Made]:
    """The made directories of `kind` whose owner process is gone, by path; records whose
    directory is gone (of any kind: removed by hand, or with pytest's temporary directories)
    or is not the one made any more are forgotten on the way."""
    try:
        names = os.listdir(_registry())
    except OSError:
        return []
    found = []
    for name in names:
        made = _load(name.removesuffix(".json")) if name.endswith(".json") else None
        if made is None:
            continue
        if not os.path.lexists(made.path):
            _forget(made)
            continue
        if made.kind != kind or not made.owner:
            continue
        pid, started = made.owner
        if started is not None and start_time(pid) == started:
            continue  # its owner is alive
        proved = find(made.path)
        if proved is None or proved.token != made.token:
            _forget(made)
            continue
        found.append(made)
    return sorted(found, key=lambda m: m.path)


# ---- control groups ----------------------------------------------------------------------------
# A control group's directory (cgroupfs) can hold no marker file: one cloudhpc makes is proved
# by its record alone, which names its path and inode (kernfs numbers a new directory afresh, so
# a group removed and made again at the path, by anyone, is another one). The processes in a
# group it made are those its hook put there and their children: they are ended with the group.
GROUP_KIND = "cgroup"


def make_group(path: str | os.PathLike) -> Made:
    """Make the control group directory `path` (refused if it exists) and record it."""
    where = os.path.abspath(path)
    os.mkdir(where)
    st = os.lstat(where)
    made = Made(
        token=secrets.token_hex(16),
        kind=GROUP_KIND,
        path=where,
        dev=st.st_dev,
        ino=st.st_ino,
        owner=None,
        made_dir=True,
        whole=False,
    )
    try:
        _save(made)
    except BaseException:
        os.rmdir(where)  # made just now, by this call
        raise
    return made


def find_group(path: str | os.PathLike) -> Made | None:
    """The record proving that cloudhpc made control group `path`, else None."""
    where = os.path.abspath(path)
    try:
        st = os.lstat(where)
        names = os.listdir(_registry())
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        return None
    for name in names:
        made = _load(name.removesuffix(".json")) if name.endswith(".json") else None
        if made is not None and made.kind == GROUP_KIND and made.path == where:
            if (made.dev, made.ino) == (st.st_dev, st.st_ino):
                return made
    return None


def end_group(path: str | os.PathLike, rounds: int = 50) -> int:
    """SIGKILL the processes in control group `path`, if cloudhpc made it (the group stays);
    again until none is left. Returns how many were signalled."""
    made = find_group(path)
    if made is None:
        return 0
    seen: set[int] = set()
    for _ in range(rounds):
        try:
            with open(os.path.join(made.path, "cgroup.procs")) as fh:
                left = alive({int(p) for p in fh.read().split()} - {os.getpid()})
        except (OSError, ValueError):
            left = set()
        if not left:
            break
        kill(left)
        seen |= left
        time.sleep(0.005)
    return len(seen)


def remove_group(path: str | os.PathLike, timeout: float = 10.0) -> bool:
    """Kill the processes left in control group `path` and remove it, if cloudhpc made it;
    False, touching nothing, if it did not (or the group is gone)."""
    made = find_group(path)
    if made is None:
        return False
    procs = os.path.join(made.path, "cgroup.procs")
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(procs) as fh:
                left = {int(p) for p in fh.read().split()}
        except (OSError, ValueError):
            left = set()
        kill(left - {os.getpid()})
        try:
            os.rmdir(made.path)
            break
        except FileNotFoundError:
            break
        except OSError as e:  # EBUSY: killed processes not gone yet
            if time.monotonic() > deadline:
                raise CloudhpcError(
                    f"cannot remove control group {made.path}: {e.strerror}"
                ) from None
            time.sleep(0.02)
    _forget(made)
    return True


# ---- network namespaces and links -------------------------------------------------------------
# A network namespace (`ip netns add NAME`: /run/netns/NAME, a bind mount of its nsfs inode) and a
# link hold no marker either: the record of the directory they were made for (a cluster's state
# directory) names each with its identity, recorded as soon as it exists: the namespace's device
# and inode, the link's ifindex (which the kernel does not hand out again). One of that name that
# is not that one (someone else's, or made again after ours went) is not cloudhpc's.
NETNS_DIR = "/run/netns"


def _netns_id(name: str) -> list[int] | None:
    try:
        st = os.stat(os.path.join(NETNS_DIR, name))
    except OSError:
        return None
    return [st.st_dev, st.st_ino]


def add_namespace(made: Made, name: str) -> None:
    """Record network namespace `name` (made just now) as cloudhpc's, for `made`."""
    made.kernel[f"netns {name}"] = _netns_id(name)
    _save(made)


def add_link(made: Made, name: str, ifindex: int) -> None:
    """Record link `name` (made just now, numbered `ifindex`) as cloudhpc's, for `made`."""
    made.kernel[f"link {name}"] = [ifindex]
    _save(made)


def namespace_is_ours(made: Made | None, name: str) -> bool:
    """Whether network namespace `name` is the one recorded for `made`."""
    recorded = made.kernel.get(f"netns {name}") if made is not None else None
    return recorded is not None and _netns_id(name) == recorded


def link_is_ours(made: Made | None, name: str, ifindex: int | None) -> bool:
    """Whether link `name`, numbered `ifindex` now, is the one recorded for `made`."""
    recorded = made.kernel.get(f"link {name}") if made is not None else None
    return recorded is not None and ifindex is not None and recorded == [ifindex]

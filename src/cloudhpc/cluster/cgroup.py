"""A host's CPU share and memory as a control group: the only module that writes /sys/fs/cgroup.

One group per emulated host, `cloudhpc-HOST` (HOST is its namespace, `chpc-NAME-hI`, unique on
the machine because the namespace is), at the top of each controller's hierarchy:

- cgroup v1 (a hierarchy per controller, as here): `<cpu>/cloudhpc-HOST` with
  `cpu.cfs_period_us` and `cpu.cfs_quota_us` (a fractional share), `<cpuset>/cloudhpc-HOST`
  with `cpuset.cpus` (whole cores), `<memory>/cloudhpc-HOST` with `memory.limit_in_bytes` (and
  `memory.memsw.limit_in_bytes`, so that the limit cannot be dodged into swap);
- cgroup v2 (one unified hierarchy): `<root>/cloudhpc-HOST` with `cpu.max` ("QUOTA PERIOD"),
  `cpuset.cpus`, `memory.max` and `memory.swap.max` 0, the controllers enabled in the root's
  `cgroup.subtree_control`.

Top-level, not under a common parent: the scheduler weighs each group against its siblings, so
all hosts under one parent would together compete for the machine as one process does (on a
busy machine a whole 4-host cluster got the CPU time of one process). Each host's group weighs
as many processes as it has CPUs (`cpu.shares` 1024 or `cpu.weight` 100 per CPU, rounded up), as
a VM's vCPU threads do; its cap is the quota or the cpuset.

Each controller is looked for in /proc/self/mountinfo: a v1 hierarchy that has it, else the v2
hierarchy if its `cgroup.controllers` lists it. A process joins by writing its PID into the
group's `cgroup.procs` (`procs_files`); its children are born there. The host's processes are
started through cluster/hook.py's `host_argv`, which does that before anything else runs.
Each group is recorded as cloudhpc's when made (owned.make_group: its path and inode); `remove`
kills what is still in a group (only processes that cloudhpc put there) and removes it, and
leaves alone a group of that name it cannot prove it made.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .. import owned
from ..errors import CloudhpcError

PREFIX = "cloudhpc-"
CONTROLLERS = ("cpu", "cpuset", "memory")
MOUNTINFO = "/proc/self/mountinfo"


@dataclass(frozen=True)
class Limits:
    """What one host may use. cpus: its CPU share (None: unlimited); cpuset: the cores it has
    whole ("0", "2-3"; then no CFS quota); period_us: the CFS period of a fractional share (the
    quota is cpus x period); mem_bytes: its memory (None: unlimited)."""

    cpus: float | None = None
    cpuset: str = ""
    period_us: int | None = None
    mem_bytes: int | None = None

    @property
    def quota_us(self) -> int | None:
        if self.cpus is None or self.cpuset or self.period_us is None:
            return None
        return max(1000, round(self.cpus * self.period_us))

    @property
    def controllers(self) -> tuple[str, ...]:
        """The controllers this host's group needs: cpu for a CFS quota (and to account every
        host's CPU time), cpuset for whole cores, memory for a limit."""
        used = []
        if self.cpus is not None:
            used.append("cpu")
        if self.cpuset:
            used.append("cpuset")
        if self.mem_bytes is not None:
            used.append("memory")
        return tuple(used)

    @property
    def kind(self) -> str:
        if self.cpus is None:
            return "none"
        return "cpuset" if self.cpuset else "cfs"


class Hierarchy:
    """Where each controller is mounted: {controller: (mount point, version)}."""

    def __init__(self, mounts: dict[str, tuple[Path, int]]) -> None:
        self.mounts = mounts

    @classmethod
    def detect(cls, mountinfo: str = MOUNTINFO) -> Hierarchy:
        v1: dict[str, Path] = {}
        v2: Path | None = None
        try:
            lines = Path(mountinfo).read_text().splitlines()
        except OSError:
            lines = []
        for line in lines:
            left, _, right = line.partition(" - ")
            fields, rest = left.split(), right.split()
            if len(fields) < 5 or len(rest) < 3:
                continue
            point = Path(fields[4].replace("\\040", " "))
            if rest[0] == "cgroup2":
                v2 = point
            elif rest[0] == "cgroup":
                for option in rest[2].split(","):
                    if option in CONTROLLERS:
                        v1.setdefault(option, point)
        mounts: dict[str, tuple[Path, int]] = {c: (p, 1) for c, p in v1.items()}
        if v2 is not None:
            try:
                offered = (v2 / "cgroup.controllers").read_text().split()
            except OSError:
                offered = []
            for c in CONTROLLERS:
                if c not in mounts and c in offered:
                    mounts[c] = (v2, 2)
        return cls(mounts)

    def version(self, controller: str) -> int:
        return self.mounts[controller][1]

    def require(self, controllers: Iterable[str]) -> None:
        missing = [c for c in controllers if c not in self.mounts]
        if missing:
            raise CloudhpcError(
                f"this machine has no {', '.join(missing)} control group controller mounted "
                "(cgroup v1 or v2 under /sys/fs/cgroup), which --cpus/--mem need"
            )

    def group(self, controller: str, name: str) -> Path:
        return self.mounts[controller][0] / f"{PREFIX}{name}"

    def dirs(self, name: str, controllers: Iterable[str] = CONTROLLERS) -> list[Path]:
        """The group's directories, one per hierarchy (v2: one for all its controllers)."""
        return list(dict.fromkeys(self.group(c, name) for c in controllers if c in self.mounts))


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError as e:
        raise CloudhpcError(
            f"cannot write {value.strip()!r} into {path}: {e.strerror or e}"
        ) from None


def machine_cpus() -> list[int]:
    """The CPUs this process may run on (the machine's, or its container's)."""
    return sorted(os.sched_getaffinity(0))


def cpu_list(cpus: Iterable[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5" (the kernel's list format)."""
    out: list[str] = []
    run: list[int] = []
    for c in sorted(cpus):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [c]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def _prepare_root(h: Hierarchy, controller: str) -> None:
    """v2: let the root's children use the controllers (cgroup.subtree_control)."""
    if h.version(controller) == 2:
        _enable(h.mounts[controller][0], CONTROLLERS, h)


def _enable(directory: Path, controllers: Iterable[str], h: Hierarchy) -> None:
    """v2: let `directory`'s children use the controllers (cgroup.subtree_control)."""
    try:
        have = set((directory / "cgroup.subtree_control").read_text().split())
    except OSError:
        have = set()
    for c in controllers:
        if c in h.mounts and h.version(c) == 2 and c not in have:
            _write(directory / "cgroup.subtree_control", f"+{c}")


def create(name: str, limits: Limits, h: Hierarchy | None = None) -> list[str]:
    """Make host `name`'s group with `limits`; returns the files a process writes its PID into
    to join it (every controller's group). Nothing is made for no limits ([])."""
    h = h or Hierarchy.detect()
    used = limits.controllers
    if not used:
        return []
    h.require(used)
    for c in used:
        _prepare_root(h, c)
    for d in h.dirs(name, used):  # recorded as cloudhpc's (owned.py): only those are removed
        owned.make_group(d)
    for c in used:
        _limit(h, c, name, limits)
    return [str(d / "cgroup.procs") for d in h.dirs(name, used)]


def _limit(h: Hierarchy, controller: str, name: str, limits: Limits) -> None:
    g = h.group(controller, name)
    v2 = h.version(controller) == 2
    if controller == "cpu":
        quota = limits.quota_us
        period = limits.period_us or 100_000
        vcpus = math.ceil(limits.cpus or 1)
        if v2:
            _write(g / "cpu.max", f"{quota if quota else 'max'} {period}")
            _write(g / "cpu.weight", str(min(10_000, 100 * vcpus)))
        else:
            _write(g / "cpu.cfs_period_us", str(period))
            _write(g / "cpu.cfs_quota_us", str(quota if quota else -1))
            _write(g / "cpu.shares", str(min(262_144, 1024 * vcpus)))
    elif controller == "cpuset":
        _write(g / "cpuset.cpus", limits.cpuset)
        mems = g.parent / ("cpuset.mems.effective" if v2 else "cpuset.mems")
        _write(g / "cpuset.mems", mems.read_text().strip() or "0")
    elif controller == "memory":
        value = str(limits.mem_bytes)
        if v2:
            _write(g / "memory.max", value)
            if (g / "memory.swap.max").exists():
                _write(g / "memory.swap.max", "0")
        else:
            _write(g / "memory.limit_in_bytes", value)
            if (g / "memory.memsw.limit_in_bytes").exists():
                _write(g / "memory.memsw.limit_in_bytes", value)


def pids(name: str, h: Hierarchy | None = None) -> set[int]:
    """The processes in host `name`'s groups."""
    h = h or Hierarchy.detect()
    found: set[int] = set()
    for d in h.dirs(name):
        try:
            found.update(int(p) for p in (d / "cgroup.procs").read_text().split())
        except (OSError, ValueError):
            pass
    return found


def exists(name: str, h: Hierarchy | None = None) -> bool:
    h = h or Hierarchy.detect()
    return any(d.is_dir() for d in h.dirs(name))


def names(h: Hierarchy | None = None) -> set[str]:
    """The hosts that have a group (`cloudhpc-HOST`) in any controller's hierarchy."""
    h = h or Hierarchy.detect()
    found: set[str] = set()
    for root in {m for m, _ in h.mounts.values()}:
        try:
            found.update(
                p.name[len(PREFIX) :]
                for p in root.iterdir()
                if p.name.startswith(PREFIX) and p.is_dir()
            )
        except OSError:
            pass
    return found


def remove(name: str, h: Hierarchy | None = None, timeout: float = 10.0) -> bool:
    """Kill what is left in host `name`'s groups and remove them, those that cloudhpc made
    (owned.py; a group of that name it cannot prove its own is left alone). True if one went."""
    h = h or Hierarchy.detect()
    gone = False
    for d in h.dirs(name):
        gone = owned.remove_group(d, timeout) or gone
    return gone


# ---- what a process sees of its own share ------------------------------------------------------
def own_share(pid: str | int = "self", h: Hierarchy | None = None) -> dict | None:
    """The CPU share and memory limit of the process's own groups, as a record states them
    ({"cpus": 0.5, "kind": "cfs", "period_us": ..., "quota_us": ...} or {"cpus": 1.0, "kind":
    "cpuset", "cpuset": "0"}, with "mem_bytes" when limited); None when nothing limits it.
    Only the process's own groups are read, not their ancestors'."""
    h = h or Hierarchy.detect()
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    where: dict[str, str] = {}
    for line in lines:
        _, ctrls, path = line.split(":", 2)
        for c in ctrls.split(",") if ctrls else ():
            where[c] = path
        if ctrls == "":
            for c in CONTROLLERS:
                if c in h.mounts and h.version(c) == 2:
                    where.setdefault(c, path)
    out: dict = {}

    def read(controller: str, file: str) -> str | None:
        if controller not in h.mounts or controller not in where:
            return None
        try:
            return (h.mounts[controller][0] / where[controller].lstrip("/") / file).read_text()
        except OSError:
            return None

    if h.mounts.get("cpu", (None, 1))[1] == 2:
        text = read("cpu", "cpu.max")
        if text and text.split()[0] != "max":
            quota, period = (int(x) for x in text.split())
            out.update(kind="cfs", quota_us=quota, period_us=period)
    else:
        q, p = read("cpu", "cpu.cfs_quota_us"), read("cpu", "cpu.cfs_period_us")
        if q and p and int(q) > 0:
            out.update(kind="cfs", quota_us=int(q), period_us=int(p))
    if "quota_us" in out:
        out["cpus"] = round(out["quota_us"] / out["period_us"], 4)
    cpus = read("cpuset", "cpuset.cpus")
    if cpus and cpus.strip():
        n = len(_expand(cpus.strip()))
        if n < (os.cpu_count() or n):  # fewer cores than the machine's: a cpuset share
            out.setdefault("kind", "cpuset")
            out["cpuset"] = cpus.strip()
            out["cpus"] = min(out.get("cpus", n), n)
    mem = read("memory", "memory.max") or read("memory", "memory.limit_in_bytes")
    if mem and mem.strip() != "max" and int(mem) < 1 << 60:
        out["mem_bytes"] = int(mem)
    return out or None


def _expand(text: str) -> list[int]:
    cpus: list[int] = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            cpus.extend(range(int(a), int(b) + 1))
        elif part:
            cpus.append(int(part))
    return cpus

"""Ending every process of a job, wherever it sits in the process tree.

A job's processes do not share one process group: mpiexec runs in its own session, and Hydra
starts each proxy and each rank in a session of its own; `files` starts each item in a group of
its own (so an item timeout can end the item's children too). So a job is ended by identity, not
by group:

- every process whose environment holds the job's token (`CLOUDHPC_CONTROL_DIR=<this run's
  control directory>`, unique per run and inherited by ranks and everything they start, even
  after a parent dies and the child is re-parented), and
- every descendant of the launcher found by walking the process table before it is killed (for
  programs that clear their environment).

mpiexec also gets a parent-death signal (Linux prctl PR_SET_PDEATHSIG), so even a SIGKILL of
cloudhpc ends mpiexec, and Hydra then ends the ranks. What outlives the process that started it
(a Slurm's daemons, a SIGKILLed run's directory) is recorded and ended through owned.py.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from typing import IO, Any

PROC = "/proc"
PR_SET_PDEATHSIG = 1


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:  # gone, or another user's process
        return None


def parent_pids() -> dict[int, int]:
    """pid -> parent pid for every process in the table (empty without /proc)."""
    table = {}
    for pid in all_pids():
        fields = _stat_fields(pid)
        if len(fields) > 1:
            table[pid] = int(fields[1])
    return table


def _stat_fields(pid: int) -> list[bytes]:
    """/proc/PID/stat after "pid (comm) " (comm may hold spaces and parentheses): field 3 on,
    so index i is field i + 3; empty if there is no such process."""
    stat = _read(f"{PROC}/{pid}/stat")
    return stat[stat.rfind(b")") + 2 :].split() if stat else []


def descendants(root: int, table: dict[int, int] | None = None) -> set[int]:
    """Every process below `root` in the tree (not root itself)."""
    table = parent_pids() if table is None else table
    children: dict[int, list[int]] = {}
    for pid, ppid in table.items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, []))
    return found


def start_time(pid: int) -> str | None:
    """When `pid` started (clock ticks since boot, /proc/PID/stat field 22): with the pid, it
    names one process even after the pid is reused. None if there is no such process."""
    fields = _stat_fields(pid)
    return fields[19].decode() if len(fields) > 19 else None


def started_at(pid: int | None = None) -> float | None:
    """When process `pid` (default: this one) started, as time.time() would have said: its
    start in clock ticks since boot, against the time since boot now (/proc/uptime). 10 ms."""
    ticks = start_time(os.getpid() if pid is None else pid)
    try:
        with open(f"{PROC}/uptime", "rb") as fh:
            since_boot = float(fh.read().split()[0])
        return time.time() - since_boot + int(ticks) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, TypeError, ValueError):
        return None


def all_pids() -> set[int]:
    """Every process id in the table (empty without /proc)."""
    try:
        return {int(name) for name in os.listdir(PROC) if name.isdigit()}
    except OSError:
        return set()


def open_files(pids: Iterable[int], prefix: str) -> set[str]:
    """The paths starting with `prefix` that the processes `pids` hold open or have mapped
    (a shared-memory segment is mapped, its descriptor long closed)."""
    found = set()
    want = prefix.encode()
    for pid in pids:
        try:
            fds = os.listdir(f"{PROC}/{pid}/fd")
        except OSError:  # gone, or another user's process
            continue
        for fd in fds:
            try:
                target = os.readlink(f"{PROC}/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith(prefix):
                found.add(target)
        for line in (_read(f"{PROC}/{pid}/maps") or b"").splitlines():
            path = line.split(maxsplit=5)[5:]  # address perms offset dev inode [path]
            if path and path[0].startswith(want) and not path[0].endswith(b" (deleted)"):
                found.add(path[0].decode(errors="replace"))
    return found


def tagged(token: str) -> set[int]:
    """Processes whose environment holds the exact entry `token` ("NAME=value")."""
    want = token.encode()
    found = set()
    for pid in all_pids() - {os.getpid()}:
        env = _read(f"{PROC}/{pid}/environ")  # empty for zombies and kernel threads
        if env and want in env.split(b"\0"):
            found.add(pid)
    return found


def _kill(pids: Iterable[int], sig: int = signal.SIGKILL) -> None:
    for pid in pids:
        if pid > 1 and pid != os.getpid():
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    """Signal a whole process group; never this process's own group."""
    if pgid > 1 and pgid != os.getpgrp():
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def end_tagged(token: str, extra: Iterable[int] = (), rounds: int = 50) -> int:
    """SIGKILL every process carrying `token` (and `extra`), again until none is left: a process
    that forked just before its signal leaves a tagged child for the next pass. Returns how many
    processes were signalled."""
    seen: set[int] = set()
    pids = set(extra) | tagged(token)
    for _ in range(rounds):
        if not pids:
            break
        _kill(pids)
        seen |= pids
        time.sleep(0.005)
        pids = tagged(token)
    return len(seen)


class StrayWatch:
    """What a job's ranks left running: the processes carrying the job's token outside the
    launcher's tree, once no rank runs (empty before then), polled while the job runs.

    A rank that exits while a background child it started still holds its stdout may stay a
    zombie, or be reaped by its proxy at once; either way the launcher reports the job over only
    when that output closes, which the child may never do. A process with the token leaves the
    tree only when its parent there exits, so before the ranks end none is outside it but what a
    rank's child left (ended only once no rank runs). The ranks are the children of the
    launcher's own processes (`daemons`: the comm names of its proxies/daemons, e.g.
    hydra_pmi_proxy, prted; the root is always one), so a proxy whose ranks were reaped is not
    mistaken for a running rank; without names, the tree's leaves are taken for the ranks.
    `root_is_rank`: the root is the job's one rank (no mpiexec: the serial engine, Ray's driver,
    whose Ray workers carry the token outside its tree by design), so nothing is a stray while
    it runs; once it has ended, everything with the token is.
    """

    def __init__(
        self, root: int, token: str, daemons: Iterable[str] = (), root_is_rank: bool = False
    ) -> None:
        self.root, self.token, self.root_is_rank = root, token, root_is_rank
        self.daemons = frozenset(name[:15] for name in daemons)  # the kernel keeps 15 characters

    def poll(self) -> set[int]:
        if self.root_is_rank:
            if _stat_fields(self.root)[:1] not in ([b"Z"], []):
                return set()
            return tagged(self.token) - {self.root}
        children = _children_of_tree(self.root)
        tree = set().union(*children.values()) if children else set()
        if self.daemons:
            launcher = {self.root} | {p for p in tree if _comm(p) in self.daemons}
            ranks = {c for p in launcher for c in children.get(p, ())} - launcher
        else:
            ranks = {pid for pid in tree if not children.get(pid)}  # mpiexec, proxies: parents
        if any(_stat_fields(pid)[:1] not in ([b"Z"], []) for pid in ranks):
            return set()  # a rank is still running
        return tagged(self.token) - tree - {self.root}


def _comm(pid: int) -> str:
    """The process's command name (its executable's, 15 characters at most)."""
    return (_read(f"{PROC}/{pid}/comm") or b"").decode(errors="replace").rstrip("\n")


def _children_of_tree(root: int) -> dict[int, set[int]]:
    """pid -> its children, for `root` and every process below it. Read from the few
    /proc/PID/task/TID/children files of the tree (cheap enough to poll), else from the
    whole process table."""
    found: dict[int, set[int]] = {}
    todo = [root]
    while todo:
        pid = todo.pop()
        try:
            tasks = os.listdir(f"{PROC}/{pid}/task")
        except OSError:
            found[pid] = set()
            continue
        kids: set[int] = set()
        for tid in tasks:
            text = _read(f"{PROC}/{pid}/task/{tid}/children")
            if text is None:
                if os.path.exists(f"{PROC}/{pid}"):  # no such file in this kernel
                    table = parent_pids()
                    return {p: {c for c, pp in table.items() if pp == p} for p in
                            descendants(root, table) | {root}}  # fmt: skip
                continue
            kids.update(int(x) for x in text.split())
        found[pid] = kids
        todo.extend(k for k in kids if k not in found)
    return found


def kill(pids: Iterable[int]) -> None:
    """SIGKILL each of `pids` (never this process or init)."""
    _kill(pids)


def die_with_parent() -> Callable[[], None] | None:
    """A preexec_fn that makes the child get SIGKILL when its parent dies (Linux), else None.

    Set in the child between fork and exec; if the parent is already gone by then, the child
    exits at once instead of running unsupervised.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(1)

    return preexec


def run_group(
    argv: list[str],
    *,
    stdout: IO[Any] | int | None,
    stderr: IO[Any] | int | None,
    timeout: float | None = None,
    env: dict[str, str] | None = None,
) -> int | None:
    """Run argv in a process group of its own; return its exit code, or None if it was stopped
    after `timeout` seconds. When the program ends, times out, or this call is interrupted, the
    whole group is killed: no child the program left behind (`bash -c "sleep 30; ..."`) lives on.

    The leader is killed with its group *before* it is reaped (pidfd: Linux 5.3+), so the group
    id cannot have been reused by an unrelated process.
    """
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=stderr,
        env=env,
        process_group=0,
        # no preexec_fn (such as die_with_parent): it makes Python fork() the whole rank instead
        # of vfork(), 2 ms more per item; the run's token sweep ends items when a rank dies
    )
    timed_out = False
    try:
        timed_out = not _wait_unreaped(proc, timeout)
    finally:
        kill_group(proc.pid)  # the program's leftovers, or all of it on timeout / interrupt
        code = proc.wait()
    return None if timed_out else code


def _wait_unreaped(proc: subprocess.Popen, timeout: float | None) -> bool:
    """Wait until proc exits (left a zombie, not reaped); False if `timeout` passed first."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # no pidfd: wait and reap (group id reuse is then possible)
        try:
            proc.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if poller.poll(None if left is None else int(left * 1000) + 1):
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
    finally:
        os.close(fd)

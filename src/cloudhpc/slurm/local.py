"""A one-node Slurm on this machine, private to one directory.

    from cloudhpc.slurm.local import start, stop
    slurm = start()                      # munged, slurmctld, slurmd; returns once the node is idle
    env = {**os.environ, **slurm.env}    # SLURM_CONF for sbatch, srun, salloc, squeue, scancel
    stop(slurm.root)                     # cancels its jobs, stops the daemons, removes the dir

Debian's slurm-wlm and munge, started with nothing of the machine's own configuration: munged
with a key, socket, pid, log and seed file in the directory; slurmctld and slurmd from a
slurm.conf written there (free ports, the node's address 127.0.0.1, state, spool, pid and log
files in the directory, root as SlurmUser). The node is this machine with its real CPUs and
memory (`slurmd -C`). Tasks are tracked by walking /proc (proctrack/linuxproc) and bound to CPUs
with sched_setaffinity (task/affinity): no cgroup is needed, so it runs in a container.

What it makes is recorded in cloudhpc's own state (owned.py): the directory (a new one, or an
empty one the user named, lent and left in place), each file and subdirectory it makes there,
the daemons' PIDs with their start times, and the process it belongs to (none for `cloudhpc
slurm up`'s, kept until `slurm down`). Every daemon carries CLOUDHPC_SLURM_INSTANCE=<the record's
random token> in its environment, which slurmd's job step daemons inherit; the jobs' tasks are
the step daemons' children. `stop` ends exactly those (never a process because it carries the
instance's SLURM_CONF: a user's shell after `eval "$(cloudhpc slurm up)"` does) and removes only
what was recorded: a file of the user's written into the directory stays, with the directory.
`start` first sweeps the instances whose owner is gone (a SIGKILLed test run).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import CloudhpcError
from ..owned import (
    Made,
    add_part,
    add_process,
    end_processes,
    find,
    live_processes,
    make_dir,
    orphans,
    remove_dir,
    signal_process,
    token_entry,
)
from ..procs import tagged

PREFIX = "cloudhpc-slurm-"
TOKEN_VAR = "CLOUDHPC_SLURM_INSTANCE"
# where `cloudhpc slurm up` keeps its instance (default: $TMPDIR/cloudhpc-slurm-demo)
DIR_VAR = "CLOUDHPC_SLURM"
DAEMONS = ("munged", "slurmctld", "slurmd")
PARTITION = "debug"
# After SIGTERM, a job's processes have this long to end (cloudhpc writes a record) before
# SIGKILL; Slurm's default is 30 s.
KILL_WAIT_S = 10
# a slurm.conf line naming the network namespace its client commands must run in (a Slurm over
# an emulated cluster: its controller has an address only there; slurm/cluster.py)
HEAD_MARK = "# cloudhpc head: "


@dataclass(frozen=True)
class LocalSlurm:
    root: Path

    @property
    def conf(self) -> Path:
        return self.root / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        """What the client commands need: the private slurm.conf (which names the munge socket)."""
        return {"SLURM_CONF": str(self.conf)}

    @property
    def node(self) -> str:
        return _conf_value(self.conf, "NodeName")

    @property
    def partition(self) -> str:
        return _conf_value(self.conf, "PartitionName")

    def log(self, daemon: str) -> Path:
        return self.root / "log" / f"{daemon}.log"


def _conf_value(conf: Path, key: str) -> str:
    m = re.search(rf"^{key}=(\S+)", conf.read_text(), re.M)
    return m.group(1) if m else ""


def programs_missing() -> list[str]:
    """The programs of Debian's munge and slurm-wlm that are not installed."""
    need = ("munged", "slurmctld", "slurmd", "srun", "sbatch", "squeue", "sinfo", "scancel")
    return [p for p in need if shutil.which(p) is None]


def node_hardware() -> dict[str, str]:
    """This machine as slurmd sees it (`slurmd -C`): NodeName, CPUs, Boards, SocketsPerBoard,
    CoresPerSocket, ThreadsPerCore, RealMemory."""
    r = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, timeout=60)
    first = r.stdout.splitlines()[0] if r.stdout else ""
    found = dict(re.findall(r"(\w+)=(\S+)", first))
    if r.returncode != 0 or "CPUs" not in found:
        raise CloudhpcError(f"slurmd -C did not describe this machine: {r.stderr.strip()}")
    return found


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def shared_settings(root: Path) -> str:
    """The slurm.conf lines of every Slurm cloudhpc starts (this one-node Slurm and a cluster's,
    slurm/cluster.py): munge, root daemons, state and logs under `root`, no accounting."""
    first_job_id = 1_000_000 + secrets.randbelow(50_000_000)
    return f"""\
ClusterName=cloudhpc
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation={root}/state
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmctldLogFile={root}/log/slurmctld.log
# tasks found through /proc, not cgroups
ProctrackType=proctrack/linuxproc
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={root}/log/jobcomp.txt
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
# a pass every 2 s, not 30: a requeued job, held until its old credentials expire, starts once
# it may (it waited up to 30 s more for the backfill pass that starts it)
SchedulerParameters=bf_interval=2
SelectType=select/cons_tres
# a node that was down is idle again once its slurmd registers
ReturnToService=2
KillWait={KILL_WAIT_S}
# job ids from a random start: MPICH names its shared-memory segment after the job and step
# (/dev/shm/mpich_shm_<hash of "JOB.STEP">), and a segment a killed run left behind, or one of
# another instance running at the same time, would otherwise be found again by job 1, 2, ...
FirstJobId={first_job_id}
InactiveLimit=0
"""


def slurm_conf(root: Path, hw: dict[str, str], ports: tuple[int, int], partition: str) -> str:
    node = hw["NodeName"]
    shape = " ".join(
        f"{k}={hw[k]}"
        for k in ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore")
        if k in hw
    )
    memory = f" RealMemory={hw['RealMemory']}" if "RealMemory" in hw else ""
    return f"""\
# A one-node Slurm private to {root} (cloudhpc.slurm.local): nothing here is the machine's.
{shared_settings(root)}\
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={ports[0]}
SlurmdPort={ports[1]}
AuthInfo=socket={root}/munge/munge.socket
SlurmdSpoolDir={root}/spool
SlurmdPidFile={root}/run/slurmd.pid
SlurmdLogFile={root}/log/slurmd.log
# slurmd and srun bind to the node's address alone, 127.0.0.1 (slurmctld to every address)
CommunicationParameters=NoInAddrAny
# no cgroups: tasks bound with sched_setaffinity
TaskPlugin=task/affinity
SelectTypeParameters=CR_Core
NodeName={node} NodeAddr=127.0.0.1 {shape}{memory} State=UNKNOWN
PartitionName={partition} Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def client_prefix(conf: str | os.PathLike) -> list[str]:
    """What runs a client command (sbatch, squeue, ...) where the Slurm of `conf` answers:
    nothing for a one-node Slurm, `nsenter --net` into the head of a cluster's (HEAD_MARK)."""
    try:
        with open(conf, errors="replace") as fh:
            head = [fh.readline() for _ in range(4)]
    except OSError:
        return []
    for line in head:
        if line.startswith(HEAD_MARK):
            ns = line[len(HEAD_MARK) :].strip()
            if re.fullmatch(r"[\w.-]+", ns) and os.path.exists(f"/run/netns/{ns}"):
                return ["nsenter", f"--net=/run/netns/{ns}", "--"]
    return []


def daemon_env(made: Made) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"SLURM_CONF": os.path.join(made.path, "slurm.conf"), TOKEN_VAR: made.token})
    return env


def client_env(root: Path) -> dict[str, str]:
    return {**os.environ, "SLURM_CONF": str(root / "slurm.conf")}


def _run(argv: list[str], env: dict[str, str], what: str, log: Path | None) -> None:
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise CloudhpcError(f"{what} did not start: {why(r.stderr, log)}")


def why(stderr: str, log: Path | None) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    if log is not None and log.exists():
        lines += [ln for ln in log.read_text(errors="replace").splitlines() if "error" in ln]
    return lines[-1].strip() if lines else "no message"


def start(
    root: str | os.PathLike | None = None,
    owner: int | None = -1,
    partition: str = PARTITION,
    timeout: float = 60,
    message_timeout: int | None = None,
) -> LocalSlurm:
    """Start a one-node Slurm in `root` (default: a new directory in the temporary directory;
    else a new or an empty directory) and wait until its node is idle. `owner`: the pid of the
    process it belongs to (-1: this one; None: no process, kept until stop()). Stops what it
    started if any step fails. message_timeout: Slurm's MessageTimeout in seconds (default 10;
    also how long srun retries a slurmd that refuses its connection)."""
    missing = programs_missing()
    if missing:
        raise CloudhpcError(
            f"Slurm is not installed (no {', '.join(missing)}): as root, "
            "apt-get install slurm-wlm munge libpmix-dev (make test does)"
        )
    if os.geteuid() != 0:
        raise CloudhpcError("a one-node Slurm needs root (slurmd starts each job as its user)")
    sweep()
    # munged requires its socket's directories to be searchable by all
    if root is None:
        made = make_dir("slurm", prefix=PREFIX, owner=owner, whole=False, mode=0o755)
    else:
        made = make_dir("slurm", path=root, owner=owner, whole=False, mode=0o755)
    try:
        _start(made, partition, timeout, message_timeout)
    except BaseException:
        stop(made)
        raise
    return LocalSlurm(Path(made.path))


def _start(made: Made, partition: str, timeout: float, message_timeout: int | None) -> None:
    root = Path(made.path)
    for sub in ("munge", "state", "spool", "run", "log"):
        add_part(made, sub)
        (root / sub).mkdir()
    start_munged(made)
    _start_slurm(made, partition, timeout, message_timeout)


def start_munged(made: Made) -> None:
    """munged with a new key, its socket, pid, log and seed file in the instance's directory."""
    root = Path(made.path)
    env = daemon_env(made)
    key = root / "munge" / "munge.key"
    fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
    with os.fdopen(fd, "wb") as fh:
        fh.write(os.urandom(1024))
    munge = root / "munge"
    _run(
        [
            "munged",
            f"--socket={munge}/munge.socket",
            f"--key-file={key}",
            f"--pid-file={root}/run/munged.pid",
            f"--log-file={root}/log/munged.log",
            f"--seed-file={munge}/munged.seed",
        ],
        env,
        "munged",
        root / "log" / "munged.log",
    )
    record_daemon(made, "munged")


def _start_slurm(
    made: Made, partition: str, timeout: float, message_timeout: int | None = None
) -> None:
    root = Path(made.path)
    env = daemon_env(made)
    hw = node_hardware()
    ports = (free_port(), free_port())
    while ports[1] == ports[0]:
        ports = (ports[0], free_port())
    add_part(made, "slurm.conf")
    text = slurm_conf(root, hw, ports, partition)
    if message_timeout is not None:
        text += f"MessageTimeout={int(message_timeout)}\n"
    (root / "slurm.conf").write_text(text)
    conf = str(root / "slurm.conf")
    for daemon in ("slurmctld", "slurmd"):
        _run([daemon, "-f", conf], env, daemon, root / "log" / f"{daemon}.log")
        record_daemon(made, daemon)
    wait_idle(LocalSlurm(root), timeout)


def record_daemon(made: Made, daemon: str, wait_s: float = 30) -> None:
    """Record the daemon just started (it forked away from its starter) by its pid file, once
    that process is shown to be one started for this instance (it carries the token). Until
    then, stop() finds it by the token alone."""
    deadline = time.monotonic() + wait_s
    while True:
        pid = _pid(Path(made.path), daemon)
        if pid is not None and pid in tagged(token_entry(made, TOKEN_VAR)):
            add_process(made, pid, daemon)
            return
        if time.monotonic() > deadline:
            raise CloudhpcError(f"{daemon} started but wrote no pid file in {wait_s:g} s")
        time.sleep(0.05)


def node_state(slurm: LocalSlurm) -> str:
    r = subprocess.run(
        [*client_prefix(slurm.conf), "sinfo", "-h", "-N", "-o", "%T"],
        env=client_env(slurm.root),
        capture_output=True,
        text=True,
        timeout=30,
    )
    return r.stdout.strip() if r.returncode == 0 else ""


def wait_idle(slurm: LocalSlurm, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    state = ""
    while time.monotonic() < deadline:
        state = node_state(slurm)
        if state == "idle":
            return
        time.sleep(0.2)
    raise CloudhpcError(
        f"the Slurm node did not become idle in {timeout:g} s (state {state or 'unknown'}; "
        f"logs in {slurm.root / 'log'})"
    )


def _pid(root: Path, daemon: str) -> int | None:
    try:
        return int((root / "run" / f"{daemon}.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _cancel_jobs(made: Made, wait_s: float = 15) -> None:
    """Cancel every job and wait (at most `wait_s`) for them to end, while a slurmd is there to
    end them: with none (killed), a job stays COMPLETING until Slurm gives its node up, minutes
    later, and its processes are killed by stop() anyway."""
    root = Path(made.path)
    env = client_env(root)
    on = client_prefix(root / "slurm.conf")
    try:
        subprocess.run([*on, "scancel", "--user", "root"], env=env, capture_output=True, timeout=15)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and any(
            d.startswith("slurmd") for d in live_processes(made)
        ):
            r = subprocess.run(
                [*on, "squeue", "-h", "-o", "%i %T"],
                env=env,
                capture_output=True,
                text=True,
                timeout=15,
            )
            if r.returncode != 0 or not r.stdout.strip():
                return
            time.sleep(0.2)
    except (OSError, subprocess.TimeoutExpired):
        return


def stop(root: str | os.PathLike | Made) -> bool:
    """Cancel the instance's jobs, stop its daemons (SIGTERM, then SIGKILL for any of them
    left, the processes carrying its token and every process below them: the jobs' tasks), and
    remove what it made. False, touching nothing, if `root` holds no instance cloudhpc made."""
    made = root if isinstance(root, Made) else find(root, "slurm")
    if made is None:
        return False
    where = Path(made.path)
    if (where / "slurm.conf").exists() and "slurmctld" in live_processes(made):
        _cancel_jobs(made)
    nodes = sorted(d for d in made.processes if d.startswith("slurmd"))  # one per node
    for daemon in (*nodes, "slurmctld", "munged"):
        if signal_process(made, daemon, signal.SIGTERM):
            deadline = time.monotonic() + 10
            while daemon in live_processes(made) and time.monotonic() < deadline:
                time.sleep(0.05)
    end_processes(made, TOKEN_VAR)
    remove_dir(made)
    return True


def sweep() -> list[str]:
    """Stop and remove the instances whose owner process is gone. Returns their directories."""
    removed = []
    for made in orphans("slurm"):
        stop(made)
        removed.append(made.path)
    return removed


def is_instance(root: str | os.PathLike) -> bool:
    """Whether `root` holds an instance cloudhpc made (running or not)."""
    return find(root, "slurm") is not None


def running(root: str | os.PathLike) -> dict[str, bool]:
    """Which of the instance's daemons are running (none, for a directory cloudhpc did not
    make)."""
    made = find(root, "slurm")
    live = live_processes(made) if made is not None else {}
    return {d: d in live for d in DAEMONS}


def demo_dir() -> Path:
    """Where `cloudhpc slurm up` keeps its instance: $CLOUDHPC_SLURM, else
    $TMPDIR/cloudhpc-slurm-demo."""
    explicit = os.environ.get(DIR_VAR)
    if explicit:
        return Path(explicit).expanduser().absolute()
    return Path(tempfile.gettempdir()) / f"{PREFIX}demo"


def up(
    root: str | os.PathLike | None = None, partition: str = PARTITION
) -> tuple[LocalSlurm, bool]:
    """`cloudhpc slurm up`: the instance in `root` (default demo_dir()), started unless it is
    running and answering already; kept (no owner) until down(). Returns it and whether it was
    started now. One half-up (a daemon gone, a reboot) is stopped and started again. A
    directory holding anything but an instance cloudhpc made is refused, untouched."""
    root = Path(root).absolute() if root else demo_dir()
    made = find(root, "slurm")
    if made is not None:
        if all(running(root).values()):
            slurm = LocalSlurm(root)
            if node_state(slurm) in ("idle", "mixed", "allocated"):
                return slurm, False
        stop(made)
    elif os.path.lexists(root) and (not root.is_dir() or root.is_symlink() or any(root.iterdir())):
        raise CloudhpcError(
            f"{root} holds no Slurm that cloudhpc started and is not empty: nothing was changed; "
            "give a new or an empty directory (--dir)"
        )
    return start(root, owner=None, partition=partition), True


def down(root: str | os.PathLike | None = None) -> bool:
    """Stop the instance in `root` (default demo_dir()) and remove what it made; False if there
    is nothing there. A directory holding no instance cloudhpc made is refused, untouched."""
    root = Path(root).absolute() if root else demo_dir()
    if stop(root):
        return True
    if os.path.lexists(root):
        raise CloudhpcError(
            f"{root} holds no Slurm that cloudhpc started: nothing was stopped or removed"
        )
    return False

"""Start a launch plan, follow its ranks, and turn their fate into a result or one clear error.

Ranks talk to this process through control lines on stdout (context.CONTROL_PREFIX + JSON):
progress, text for the user, rank 0's result, and a rank's error just before it aborts the job.
stderr is collected and shown only when a rank crashed (or printed warnings on a good run).
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .. import loadavg
from ..context import CONTROL_DIR_VAR, CONTROL_PREFIX, register_temporary, remove_temporaries
from ..envs import get_environment
from ..errors import CloudhpcError, EnvironmentFailure, RunFailed
from ..job import Job
from ..mpi import get_implementation
from ..owned import make_dir, orphans, remove_dir
from ..procs import (
    StrayWatch,
    all_pids,
    descendants,
    die_with_parent,
    end_tagged,
    kill,
    kill_group,
    open_files,
    tagged,
)
from .base import get_launcher, named
from .names import CLUSTER, LOCAL
from .plan import LaunchPlan


class Monitor:
    """Receives what ranks report while they run; the CLI subclasses it with a progress bar."""

    def progress(self, done: int, total: int, label: str) -> None:
        pass

    def say(self, text: str) -> None:
        print(text, file=sys.stderr)

    def note(self, text: str) -> None:
        """A line about the run itself (not the app's output), for the user and logs alike."""
        print(f"cloudhpc: {text}", file=sys.stderr)

    def status(self, text: str) -> None:
        """What the job is doing now, when a progress bar would otherwise stand still (the
        --check after the last iteration): for a terminal, not a log."""

    def output(self, line: str) -> None:
        print(line, file=sys.stderr)

    def close(self) -> None:
        pass


@dataclass
class Outcome:
    returncode: int
    stderr: str
    wall_s: float
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None  # a rank's own report of why it stopped
    # lines the MPI launcher prints when it tears a job down (they repeat the rank's message)
    noise: tuple[str, ...] = ()
    # time.time() when the launcher was started, rank 0's result arrived, the launcher exited,
    # and the run's clean-up was done (start-up and teardown parts of the command's wall time)
    clock: dict[str, float] = field(default_factory=dict)
    # rank -> wait status of the ranks that did not end with 0, as the launcher reported them
    rank_exits: dict[int, int] = field(default_factory=dict)
    # what rank 0 said of the job's checkpoints (steps begun, checkpoints written, resumed),
    # each with `t`, time.time() when it arrived (launch/checkpointing.py)
    checkpoint_events: list[dict[str, Any]] = field(default_factory=list)


@contextmanager
def provisioned(job: Job, dry_run: bool = False) -> Iterator[Job]:
    """The job as its environment launches it, for the length of the block: --env capped:RATE
    brings a cluster up and hands back the job on its hosts, started with the cluster
    launcher, and takes the cluster down when the block ends, however it ends. Other
    environments hand back the job unchanged (its launcher and implementation named)."""
    job = named(job)
    environment = get_environment(job.env)
    if environment.own_hosts:
        if job.hosts:
            raise CloudhpcError(
                f"--env {environment.name} brings up a cluster of its own; drop --hosts (or run "
                "on the hosts file of a cluster with --env native)"
            )
        if job.launcher not in (LOCAL, CLUSTER):
            raise CloudhpcError(
                f"--env {environment.name} runs ranks on an emulated cluster, not with the "
                f"{job.launcher} launcher"
            )
    with environment.provision(job, dry_run=dry_run) as ready:
        yield dataclasses.replace(ready, launcher=CLUSTER) if environment.own_hosts else ready


def plan_job(
    job: Job, rank_argv: list[str] | None = None, extra_env=None, preflight: bool = True
) -> LaunchPlan:
    """The argv and environment for `job` (rank_argv defaults to the cloudhpc worker). With
    `preflight` (not for --dry-run) the job's MPI implementation is installed if it is not yet,
    and the launcher checks what it needs of the outside world."""
    job = named(job)
    launcher = get_launcher(job.launcher)
    plan = launcher.plan(job, rank_argv, extra_env)
    if preflight:
        get_implementation(job.mpi).ensure_installed()
        launcher.preflight(job)
    return plan


def _filter_noise(text: str, noise: tuple[str, ...]) -> str:
    keep = [ln for ln in text.splitlines() if ln.strip() and not ln.strip().startswith(noise)]
    return "\n".join(keep)


CONTROL_DIR_PREFIX = "cloudhpc-run-"  # a run's control directory, in the temporary directory
# where an MPI runtime's files for one run go (shared-memory segments among them): memory
_SCRATCH_ROOT = "/dev/shm" if os.path.isdir("/dev/shm") else None


def sweep_orphaned_runs() -> list[str]:
    """Remove the control directories (and the temporaries their ranks registered) of runs
    whose cloudhpc process is gone: only a SIGKILL leaves one, as no handler runs. Only what a
    run made and recorded (owned.py), never a directory that merely looks like one. Returns the
    directories removed."""
    removed = []
    for made in orphans("run"):
        remove_temporaries(made.path)
        if remove_dir(made):
            removed.append(made.path)
    return removed


def run_plan(
    plan: LaunchPlan, monitor: Monitor | None = None, timeout: float | None = None
) -> Outcome:
    """Run the plan to completion; never raises for a failed run (see Outcome)."""
    loadavg.watch_start()  # the command line warns when the machine was overloaded
    sweep_orphaned_runs()
    made = make_dir("run", prefix=CONTROL_DIR_PREFIX)  # removed by the next run if we are killed
    control_dir = made.path
    try:
        try:
            outcome = _run(plan, monitor or Monitor(), timeout, control_dir)
        finally:  # also after Ctrl-C, SIGTERM, SIGHUP: the ranks are gone, their temporaries go
            remove_temporaries(control_dir)
        if outcome.error is None and outcome.returncode != 0:
            outcome.error = _first_error_file(control_dir)
    finally:
        remove_dir(made)
    return outcome


def _first_error_file(control_dir: str) -> dict[str, Any] | None:
    """The earliest reason a rank left (the first failure is the cause, later ones follow it)."""
    found = []
    for name in os.listdir(control_dir):
        if name.startswith("error-") and name.endswith(".json"):
            path = os.path.join(control_dir, name)
            try:
                with open(path) as fh:
                    found.append((os.path.getmtime(path), json.load(fh)))
            except (OSError, ValueError):
                continue
    return min(found, key=lambda x: x[0])[1] if found else None


def _run(plan: LaunchPlan, monitor: Monitor, timeout: float | None, control_dir: str) -> Outcome:
    env = dict(os.environ)
    env.update(plan.variables)
    env[CONTROL_DIR_VAR] = control_dir
    # Every process of the run inherits this entry, however deep: procs.end_tagged finds them by it.
    token = f"{CONTROL_DIR_VAR}={control_dir}"
    mpi = get_implementation(plan.mpi)
    if mpi.wants_scratch:
        scratch = tempfile.mkdtemp(prefix=CONTROL_DIR_PREFIX, dir=_SCRATCH_ROOT)
        register_temporary(scratch, control_dir)  # removed with the run, or by the next sweep
        env.update(mpi.run_variables(scratch, plan.singleton, plan.same_machine))
    for var, text in plan.files.items():  # SLURM_HOSTFILE: gone with the control directory
        path = os.path.join(control_dir, var.lower())
        with open(path, "w") as fh:
            fh.write(text)
        env[var] = path
    t0 = time.perf_counter()
    topology = LauncherLeftovers(mpi.leftover_prefixes)
    launched = time.time()
    try:
        proc = subprocess.Popen(
            plan.argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,  # Ctrl-C reaches cloudhpc alone, which then ends the job
            preexec_fn=die_with_parent(),  # even a SIGKILL of cloudhpc ends mpiexec, then ranks
        )
    except FileNotFoundError:
        raise CloudhpcError(f"cannot start {plan.argv[0]!r}: no such program") from None
    except PermissionError:
        raise CloudhpcError(f"cannot start {plan.argv[0]!r}: not executable") from None

    topology.register(proc, control_dir)
    if plan.ranks_below:
        stop_watching = _end_strays(proc, token, mpi.daemon_names, plan.singleton)
    else:  # srun: the ranks are slurmstepd's children, and Slurm ends what a step leaves
        stop_watching = threading.Event()
    timer = None
    timed_out = threading.Event()
    try:  # from here on, any way out of this function ends the job first
        stderr_chunks: list[str] = []
        reader = threading.Thread(
            target=lambda: stderr_chunks.append(proc.stderr.read()), daemon=True
        )
        reader.start()
        outcome = Outcome(
            returncode=0, stderr="", wall_s=0.0, noise=mpi.noise_prefixes + plan.noise
        )
        outcome.clock["launch"] = launched

        def expire() -> None:
            timed_out.set()
            end_job(proc, token, topology)

        if timeout:
            timer = threading.Timer(timeout, expire)
            timer.start()
        report = ""  # the launcher's report of how each rank ended, as read so far
        blanks = 0  # empty lines held back: the launcher's noise may follow (then they go too)
        for line in proc.stdout:
            line = line.rstrip("\n")
            msg = _control_message(line)
            if msg is not None:
                _dispatch(msg, outcome, monitor)
            elif mpi.stdout_noise and line.startswith(mpi.stdout_noise):
                blanks = 0
            elif not line:
                blanks += 1
            else:
                # read whole: over several hosts each further host's statuses are a line of
                # their own ("[host2] 0"), which alone would look like the program's output
                rest, ends = mpi.rank_exits(f"{report}{line}\n")
                if not rest.strip():
                    report += f"{line}\n"
                    outcome.rank_exits = ends
                else:
                    report = ""
                    for _ in range(blanks):
                        monitor.output("")
                    monitor.output(line)
                blanks = 0
        for _ in range(blanks):
            monitor.output("")
        proc.wait()
        outcome.clock["exited"] = time.time()
        end_tagged(token)  # whatever the ranks left running (a program's background children)
        topology.remove()  # left by a proxy that MPI_Abort killed
        reader.join()
        outcome.clock["cleaned"] = time.time()
    except BaseException:  # Ctrl-C, SIGTERM, SIGHUP (signals.py), or a failure in this process
        end_job(proc, token, topology)
        proc.wait()
        raise
    finally:
        stop_watching.set()
        if timer is not None:
            timer.cancel()
            timer.join()  # an expiry under way finishes its clean-up first
        monitor.close()
    outcome.returncode = proc.returncode
    outcome.stderr, ends = mpi.rank_exits("".join(stderr_chunks))
    outcome.rank_exits = ends or outcome.rank_exits
    if plan.exits is not None:  # the launcher's own report (srun's "task 1: Exited ...")
        outcome.stderr, ends = plan.exits(outcome.stderr)
        outcome.rank_exits = outcome.rank_exits or ends
    outcome.wall_s = time.perf_counter() - t0
    if timed_out.is_set():
        outcome.error = {"kind": "timeout", "message": f"the run exceeded --timeout {timeout:g} s"}
    return outcome


STRAY_POLL_S = 0.5


def _end_strays(
    proc: subprocess.Popen, token: str, daemons: Sequence[str], singleton: bool = False
) -> threading.Event:
    """Watch the job while it runs: once its ranks have all exited, end what they left running
    (procs.StrayWatch), whose hold on a rank's output would otherwise keep the job open until
    they end by themselves; also once the launcher itself has ended (the reading of its output
    waits for them). `singleton`: the launched process is the job's one rank. Returns the event
    that stops the watch."""
    stop = threading.Event()
    strays = StrayWatch(proc.pid, token, daemons, root_is_rank=singleton)

    def watch() -> None:
        while not stop.wait(STRAY_POLL_S):
            left = tagged(token) - {proc.pid} if proc.poll() is not None else strays.poll()
            if left:
                kill(left)

    threading.Thread(target=watch, daemon=True).start()
    return stop


def _control_message(line: str) -> dict[str, Any] | None:
    """The control message on a rank's output line, or None for a line meant for the user."""
    if not line.startswith(CONTROL_PREFIX):
        return None
    try:
        msg = json.loads(line[len(CONTROL_PREFIX) :])
    except ValueError:
        return None
    return msg if isinstance(msg, dict) else None


def _dispatch(msg: dict[str, Any], outcome: Outcome, monitor: Monitor) -> None:
    if isinstance(msg.get("checkpoint"), dict):
        event, events = {**msg["checkpoint"], "t": time.time()}, outcome.checkpoint_events
        if event.get("event") == "step" and events and events[-1].get("event") == "step":
            events[-1] = event  # only the last step begun matters (the work a failure loses)
        else:
            events.append(event)
        if "note" not in msg:
            return
    if "progress" in msg:
        monitor.progress(*msg["progress"])
    elif "say" in msg:
        monitor.say(msg["say"])
    elif "status" in msg:
        monitor.status(msg["status"])
    elif "note" in msg:
        monitor.note(msg["note"])
    elif "result" in msg:
        outcome.result = msg["result"]
        outcome.clock["result"] = time.time()
    elif "error" in msg and outcome.error is None:
        outcome.error = msg


def end_job(proc: subprocess.Popen, token: str, topology: LauncherLeftovers | None = None) -> None:
    """Kill the launcher and every process of its job: its process tree (walked before the
    launcher dies, when its children are re-parented), its session's group, and everything that
    carries the run's token in its environment (procs.py); then remove the Hydra topology files
    the job held open. Returns without reaping `proc`."""
    tree = descendants(proc.pid)
    if topology is not None:
        topology.scan(tree | {proc.pid})
    kill_group(proc.pid)
    end_tagged(token, extra=tree)
    if topology is not None:
        topology.remove()


class LauncherLeftovers:
    """The files an implementation's launcher and ranks may leave (`prefixes`; MPICH: Hydra's
    proxies write the node's hwloc topology to /tmp/hydra_hwloc_xmlfile_*, the ranks share
    memory through /dev/shm/mpich_shm_*). Their owners remove them when they exit, but processes
    killed (by MPI_Abort, or with a job cloudhpc ends) cannot. remove() deletes, when the job is
    over, the files that appeared since it started and that no process holds any more (a live
    job elsewhere holds its own), and those the job held when cloudhpc killed it."""

    # Look every LOOK_S while the job starts, until a file of every prefix was seen (for up to
    # LOOK_FOR_S): on a loaded machine the proxies and MPI_Init may come seconds after mpiexec,
    # and a file not yet registered when cloudhpc is SIGKILLed would be left for good.
    LOOK_S = 0.25
    LOOK_FOR_S = 60.0

    def __init__(self, prefixes: Sequence[str] = ()) -> None:
        self.prefixes = tuple(prefixes)
        self._before = self._present()
        self.paths: set[str] = set()

    def _present(self) -> set[str]:
        return {path for prefix in self.prefixes for path in glob.glob(prefix + "*")}

    def _held(self, pids: set[int]) -> set[str]:
        return {path for prefix in self.prefixes for path in open_files(pids, prefix)}

    def scan(self, pids: set[int]) -> None:
        """Note the files `pids` hold (before they are killed, when /proc still says)."""
        self.paths |= self._held(pids)

    def register(self, proc: subprocess.Popen, control_dir: str) -> None:
        """Register the job's files as the run's temporaries, looking while the job starts: if
        cloudhpc is SIGKILLed, the next run's sweep removes them with the rest (and the end of
        the run removes those their owners could not)."""
        if not self.prefixes:
            return

        def watch() -> None:
            noted: set[str] = set()
            deadline = time.monotonic() + self.LOOK_FOR_S
            while time.monotonic() < deadline and proc.poll() is None:
                for path in self._held(descendants(proc.pid) | {proc.pid}) - noted:
                    register_temporary(path, control_dir)
                    noted.add(path)
                if all(any(p.startswith(prefix) for p in noted) for prefix in self.prefixes):
                    return
                time.sleep(self.LOOK_S)

        threading.Thread(target=watch, daemon=True).start()

    def remove(self) -> None:
        if not self.prefixes:
            return
        new = self._present() - self._before - self.paths
        if new:  # normally none: every owner removed its own
            new -= self._held(all_pids())
        for path in self.paths | new:
            try:
                os.unlink(path)
            except OSError:  # removed by its owner after all
                pass


def raise_for_failure(outcome: Outcome) -> None:
    """Turn a failed run into one error; a crash shows the ranks' stderr first."""
    err = outcome.error
    if err and err.get("kind") == "usage":
        raise CloudhpcError(err["message"])
    if err and err.get("kind") == "environment":  # a full disk, a service that does not answer
        raise EnvironmentFailure(err["message"])
    if err and err.get("kind") == "timeout":
        raise RunFailed(err["message"])
    if outcome.returncode == 0 and outcome.result is not None:
        return
    shown = _filter_noise(outcome.stderr, outcome.noise)
    if shown:
        print(shown, file=sys.stderr)
    if err:
        raise RunFailed(f"rank {err.get('rank', '?')} failed: {err['message']}")
    if outcome.returncode != 0:
        above = "; its output is above" if shown else ""
        raise RunFailed(f"{failure_text(outcome)}{above}")
    raise RunFailed("the run ended without a result from rank 0")


def failure_text(outcome: Outcome) -> str:
    """Why a run that said nothing itself failed: the ranks that ended badly, as the launcher
    reported them, else its exit code."""
    ends = []
    for rank, status in sorted(outcome.rank_exits.items())[:4]:
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            name = signal.Signals(sig).name if sig in signal.valid_signals() else str(sig)
            ends.append(f"rank {rank} was killed by signal {sig} ({name})")
        else:
            ends.append(f"rank {rank} exited with code {os.WEXITSTATUS(status)}")
    if ends:
        return "; ".join(ends) + " without a message"
    return f"the run failed (exit code {outcome.returncode}) without a message from any rank"


def launch_program(
    job: Job, program_argv: list[str], extra_env: dict[str, str] | None = None, monitor=None
) -> Outcome:
    """Start any program on the job's ranks."""
    with provisioned(job) as job:
        plan = plan_job(job, program_argv, extra_env)
        return run_plan(plan, monitor or Monitor(), job.timeout_s)

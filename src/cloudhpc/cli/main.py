"""Entry point of the `cloudhpc` command. Subcommands live in their own modules."""

from __future__ import annotations

import importlib
import os
import sys

from .. import signals
from ..errors import PATH_ERRORS, CloudhpcError, no_room
from ..version import __version__
from ..visible import visible
from .parser import Formatter, Parser, requested

# Each module has add_parser(subparsers, argv) and sets `handler` on its parser (argv: the words
# after the subcommand's name, for subcommands that can build less when they know what is asked).
SUBCOMMANDS = (
    "run",
    "bench",
    "npb",
    "profile",
    "predict",
    "model",
    "platform",
    "advise",
    "results",
    "report",
    "cluster",
    "volume",
    "place",
    "mpi",
    "demo",
    "jit",
    "campaign",
    "slurm",
    "jobs",
)


def build_parser(argv: list[str] | None = None) -> Parser:
    p = Parser(
        prog="cloudhpc",
        description="Run data- and compute-intensive scientific workloads on clusters and clouds, "
        "and measure what each runtime and each infrastructure costs them.",
        formatter_class=Formatter,
    )
    p.add_argument("--version", action="version", version=f"cloudhpc {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=Parser)
    argv = sys.argv[1:] if argv is None else argv
    wanted = requested(argv, SUBCOMMANDS)
    if argv == ["--version"]:  # answered by the top parser: no subcommand need be built
        return p
    for name in (wanted,) if wanted else SUBCOMMANDS:
        try:
            module = importlib.import_module(f"cloudhpc.cli.{name}")
        except ModuleNotFoundError as e:
            if e.name == f"cloudhpc.cli.{name}":
                continue  # a subcommand still being written
            raise
        module.add_parser(sub, argv[1:] if wanted else [])
    return p


def main(argv: list[str] | None = None) -> None:
    signals.install()
    from .. import loadavg

    loadavg.reset()  # runs noted before this command (a caller's own, in-process) are not its
    state, message = "COMPLETED", ""
    try:  # a SIGTERM while the parser is built (Slurm requeuing a job that just began): no trace
        _batch_rerun()
        args = build_parser(argv).parse_args(argv)
        code = args.handler(args) or 0
    except CloudhpcError as e:
        message = str(e)
        print(f"cloudhpc: error: {visible(str(e))}", file=sys.stderr)
        code = e.exit_code
    except KeyboardInterrupt as e:  # Ctrl-C, SIGTERM or SIGHUP (signals.py): the job has ended
        code = signals.exit_status(e)
        state, message = "CANCELLED", f"interrupted{f' ({e})' if str(e) else ''}"
        try:
            print(f"cloudhpc: {message}", file=sys.stderr)
        except OSError:
            pass  # SIGHUP: the terminal may be gone
    except BrokenPipeError:
        code = 0
    except OSError as e:  # the system refused a path: not a bug, one line
        if not (no_room(e) or e.errno in PATH_ERRORS):
            return _internal_error(e)
        where = f" {e.filename}" if e.filename else ""
        message = f"cannot use{where}: {e.strerror}"
        print(f"cloudhpc: error: {visible(message)}", file=sys.stderr)
        code = 1 if no_room(e) else 2
    except Exception as e:  # a bug in cloudhpc itself: still one line unless asked for more
        _batch_outcome("FAILED", 70, f"internal error: {type(e).__name__}: {e}")
        return _internal_error(e)
    if code and state == "COMPLETED":
        state = "FAILED"
    _load_warning(code == 0)  # a failed command's one line stays one line: no timings to doubt
    _batch_outcome(state, code, message)
    sys.exit(code)


def _load_warning(show: bool) -> None:
    """After a command that timed something: one line when the machine was overloaded."""
    from .. import loadavg

    text = loadavg.warning()  # read (and reset) the watch in any case
    if text and show:
        print(f"cloudhpc: warning: {text}", file=sys.stderr)


def _batch_rerun() -> None:
    """Inside a batch job Slurm requeued: the outcome of its earlier run goes (launch/batch.py)."""
    if not os.environ.get("CLOUDHPC_BATCH_JOB") or not os.environ.get("SLURM_RESTART_COUNT"):
        return
    from ..launch import batch

    job_dir = batch.in_batch_job()
    if job_dir is not None:
        batch.clear_earlier_outcome(job_dir)


def _batch_outcome(state: str, code: int, message: str) -> None:
    """Inside a batch job cloudhpc submitted (--submit): how the command ended, for `cloudhpc
    jobs` (a job Slurm ended at its time limit is TIMEOUT, not CANCELLED)."""
    if not os.environ.get("CLOUDHPC_BATCH_JOB"):
        return
    from ..launch import batch

    job_dir = batch.in_batch_job()
    if job_dir is None:
        return
    if state == "CANCELLED" and batch.ended_by_time_limit():
        state, message = "TIMEOUT", "Slurm ended the job at its time limit"
    batch.write_outcome(job_dir, state, code, message)


def _internal_error(e: Exception) -> None:
    if os.environ.get("CLOUDHPC_DEBUG"):
        raise e
    print(
        f"cloudhpc: internal error: {type(e).__name__}: {visible(str(e))} "
        "(set CLOUDHPC_DEBUG=1 for the traceback)",
        file=sys.stderr,
    )
    sys.exit(70)

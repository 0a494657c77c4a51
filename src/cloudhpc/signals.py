"""SIGTERM and SIGHUP end a cloudhpc command the way Ctrl-C does.

Schedulers (Slurm, `timeout`, a closing terminal) send SIGTERM or SIGHUP, not SIGINT. The CLI
turns both into :class:`Terminated`, a KeyboardInterrupt, raised in the main thread, so every
`except KeyboardInterrupt` / `finally` that already stops a job's ranks and removes its temporary
files runs for them too. The exit status is 128 + the signal number (130, 143, 129), as a shell
reports a process killed by that signal.
"""

from __future__ import annotations

import signal
from types import FrameType

HANDLED = (signal.SIGTERM, signal.SIGHUP)
# Once the first of these arrives, the others (and a second Ctrl-C) are ignored: the clean-up
# that ends the job's processes and removes its temporary files must run to its end.
IGNORED_DURING_CLEANUP = (signal.SIGINT, *HANDLED)


class Terminated(KeyboardInterrupt):
    """The command was asked to stop by a signal other than SIGINT."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise(signum: int, frame: FrameType | None) -> None:
    ignore_further()
    raise Terminated(signum)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    ignore_further()
    raise KeyboardInterrupt


def ignore_further() -> None:
    """Once is enough: a second signal while cleaning up must not interrupt the clean-up."""
    for s in IGNORED_DURING_CLEANUP:
        signal.signal(s, signal.SIG_IGN)


def install() -> None:
    """Make SIGTERM and SIGHUP raise Terminated, and SIGINT KeyboardInterrupt, in the main
    thread, each only once (call from the main thread)."""
    for s in HANDLED:
        signal.signal(s, _raise)
    signal.signal(signal.SIGINT, _interrupt)


def exit_status(exc: KeyboardInterrupt) -> int:
    """128 + signal number: 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP."""
    return 128 + getattr(exc, "signum", signal.SIGINT)

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


class Terminated(KeyboardInterrupt):
    """The command was asked to stop by a signal other than SIGINT."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise(signum: int, frame: FrameType | None) -> None:
    # Once is enough: a second signal while cleaning up must not interrupt the clean-up.
    for s in HANDLED:
        signal.signal(s, signal.SIG_IGN)
    raise Terminated(signum)


def install() -> None:
    """Make SIGTERM and SIGHUP raise Terminated in the main thread (call from the main thread)."""
    for s in HANDLED:
        signal.signal(s, _raise)


def exit_status(exc: KeyboardInterrupt) -> int:
    """128 + signal number: 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP."""
    return 128 + getattr(exc, "signum", signal.SIGINT)

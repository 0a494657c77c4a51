"""`python -m cloudhpc.cluster.guard NAME STATE_ROOT OWNER_PID`: the guard of a throwaway cluster.

A cluster brought up for one run (--env capped:RATE) is removed by its owner in a `finally`,
which a SIGKILL of the owner never reaches. So the owner starts this small process first, in a
session of its own (a Ctrl-C or a signal to the owner's process group does not reach it), with
a pipe on its stdin. The guard waits for that pipe to close: the owner closes it after removing
the cluster itself, and the kernel closes it when the owner dies in any way. If the cluster is
still there then, and is that owner's, the guard removes it at once, rather than leaving it (and
its link and address in the machine's namespace) to the next `cluster up`.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from ..errors import CloudhpcError
from . import manage, state


def main(argv: list[str]) -> int:
    if len(argv) != 3 or not argv[2].isdigit():
        print("usage: python -m cloudhpc.cluster.guard NAME STATE_ROOT OWNER_PID", file=sys.stderr)
        return 2
    name, root, owner = argv[0], Path(argv[1]), int(argv[2])
    for s in (signal.SIGINT, signal.SIGHUP):  # the terminal's signals are for the owner
        signal.signal(s, signal.SIG_IGN)
    sys.stdin.buffer.read()  # until EOF: the owner is done, or dead

    try:
        with state.locked(root):
            cluster = state.load(name, root)
            if cluster is not None and cluster.owner.get("pid") != owner:
                return 0  # not the cluster this guard was started for
            if cluster is None:
                return 0  # the owner removed it (the normal end); its state comes first
        manage.down(name, root)
    except CloudhpcError as e:
        print(f"cloudhpc: guard of throwaway cluster {name}: {e}", file=sys.stderr)
        return 1
    print(f"cloudhpc: removed throwaway cluster {name}: its run was killed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

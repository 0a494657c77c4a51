"""Hydra's launcher hook: `mpiexec -launcher ssh -launcher-exec HOOK` runs each proxy through
HOOK exactly as it would run ssh:

    HOOK -x chpc-demo-h1 "/path/hydra_pmi_proxy" --control-port 10.224.0.1:40403 ... --proxy-id 1

(`-x`: no X forwarding; the command arrives as words that ssh would join with spaces for the
remote shell, the proxy's path already in double quotes.) This module does what sshd would on
that host: joins the words and runs them with `bash -c` inside the host's network namespace, in
a UTS namespace of its own whose host name is the host's (so MPI_Get_processor_name and the
run's `nodes` name the emulated host), and in the host's control groups (its CPU share and
memory, cgroup.py). The proxy keeps this process's environment (as the run's
token, procs.py) plus CLOUDHPC_HOST / CLOUDHPC_SCRATCH, the host's name and local disk,
CLOUDHPC_HOST_MEM, its memory limit in bytes when it has one, and TAG_VAR=the token of the
cluster's state directory (owned.py): what every process cloudhpc starts on a host carries, and
what `cluster fail` and `down` kill by (never a process someone else put in the namespace).

The per-cluster script `STATE/NAME/hook` runs this file by its path (`python -I -S hook.py
STATE.json ...`): standard library only, no package import, so a proxy starts in ~10 ms.
"""

from __future__ import annotations

import json
import os
import sys

TAG_VAR = "CLOUDHPC_CLUSTER_TOKEN"
MARK = ".cloudhpc-made"  # owned.MARK: this module imports nothing of the package


def host_argv(
    namespace: str,
    hostname: str,
    command: str,
    cgroups: list[str] | tuple[str, ...] = (),
    keep_sys: bool = False,
    tag: str | None = None,
) -> list[str]:
    """argv that runs the shell command `command` as host `hostname` (namespace `namespace`),
    inside the host's control groups (the `cgroup.procs` files `cgroups`): a shell writes its
    own PID into each, then becomes `ip netns exec` (which hides /sys/fs/cgroup behind the
    namespace's own /sys), so everything the command starts is in them. keep_sys: enter the
    network namespace alone (nsenter --net), keeping the machine's /sys (slurmd needs
    /sys/fs/cgroup). tag: the cluster's VAR=TOKEN entry (manage.host_tag), put in the
    command's environment."""
    enter = (
        ["nsenter", f"--net=/run/netns/{namespace}", "--"]
        if keep_sys
        else ["ip", "netns", "exec", namespace]
    )
    argv = [
        *enter,
        *(["env", tag] if tag else []),
        "unshare",
        "--uts",
        "bash",
        "-c",
        # bash -c runs a lone simple command by exec: the proxy is then the hook's own process
        'hostname "$0" && exec bash -c "$1"',
        hostname,
        command,
    ]
    if not cgroups:
        return argv
    join = 'for g in $0; do echo $$ > "$g" || exit 125; done; exec "$@"'
    return ["sh", "-c", join, " ".join(cgroups), *argv]


def join_cgroups(cgroups: list[str] | tuple[str, ...]) -> None:
    """Put this process into the host's control groups (before it becomes the host's proxy)."""
    for path in cgroups:
        with open(path, "w") as fh:
            fh.write(str(os.getpid()))


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(
            "usage: python -m cloudhpc.cluster.hook CLUSTER.json [-x] HOST COMMAND...",
            file=sys.stderr,
        )
        return 255
    state_file, args = argv[0], argv[1:]
    while args and args[0].startswith("-"):  # ssh's options as Hydra passes them (-x)
        args.pop(0)
    if len(args) < 2:
        print("cloudhpc cluster hook: no host and command", file=sys.stderr)
        return 255
    host, command = args[0], " ".join(args[1:])
    try:
        with open(state_file) as fh:
            cluster = json.load(fh)
    except (OSError, ValueError) as e:
        print(f"cloudhpc cluster hook: cannot read {state_file}: {e}", file=sys.stderr)
        return 255
    for h in cluster.get("hosts", []):
        if h["name"] == host:
            break
    else:
        print(f"cloudhpc: host {host} is not in cluster {cluster.get('name')}", file=sys.stderr)
        return 255
    os.environ["CLOUDHPC_HOST"] = host
    os.environ["CLOUDHPC_SCRATCH"] = h["scratch"]
    if h.get("mem_bytes"):  # the host's memory: what its ranks may count on (memory.py)
        os.environ["CLOUDHPC_HOST_MEM"] = str(h["mem_bytes"])
    try:  # the cluster's token, from its state directory's marker (owned.py)
        with open(os.path.join(os.path.dirname(state_file), MARK)) as fh:
            os.environ[TAG_VAR] = fh.read().strip()
    except OSError:
        pass
    argv_ = host_argv(h["name"], host, command)
    try:
        join_cgroups(h.get("cgroups") or ())
        os.execvp(argv_[0], argv_)
    except OSError as e:
        print(f"cloudhpc cluster hook: cannot start on {host}: {e}", file=sys.stderr)
    return 255


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

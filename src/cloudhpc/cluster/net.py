"""The kernel side of a cluster, through iproute2 (`ip`, `tc`): namespaces, links, addresses and
token-bucket qdiscs. Every command either succeeds or raises one CloudhpcError naming it."""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import time
from collections.abc import Iterable

from .. import owned
from ..errors import CloudhpcError
from ..procs import descendants, kill, parent_pids, tagged
from .model import IFACE, MAX_CLUSTERS, Cluster, ClusterHost, bridge_name, link_alias, subnet_of
from .rates import format_rate, tbf_args


class NetError(CloudhpcError):
    """An iproute2 command failed."""


def require_root(what: str = "an emulated cluster") -> None:
    if os.geteuid() != 0:
        raise CloudhpcError(
            f"{what} needs root (network namespaces, links and qdiscs); run it with sudo"
        )


def _run(argv: list[str], stdin: str | None = None, check: bool = True) -> str:
    try:
        r = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise CloudhpcError(f"{argv[0]} is not installed (Debian package iproute2)") from None
    if check and r.returncode != 0:
        why = (r.stderr.strip() or r.stdout.strip() or f"exit code {r.returncode}").splitlines()
        raise NetError(f"{' '.join(argv[:6])}{' ...' if len(argv) > 6 else ''}: {why[-1]}")
    return r.stdout


def ip(*args: str, netns: str | None = None, check: bool = True) -> str:
    return _run(["ip", *(["-n", netns] if netns else []), *args], check=check)


def ip_batch(lines: Iterable[str], netns: str | None = None) -> None:
    """Several `ip` commands in one process (creating a host takes a dozen)."""
    _run(["ip", *(["-n", netns] if netns else []), "-batch", "-"], stdin="\n".join(lines) + "\n")


def tc(*args: str, netns: str | None = None) -> str:
    return _run(["tc", *(["-n", netns] if netns else []), *args])


# ---- what exists ------------------------------------------------------------------------------
def namespaces() -> set[str]:
    out = ip("netns", "list", check=False)
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def _link_data() -> list[dict]:
    try:
        return json.loads(ip("-j", "link", "show") or "[]")
    except ValueError:
        return []


def links() -> dict[str, str]:
    """Root-namespace link name -> its alias ("" when it has none)."""
    return {d["ifname"]: d.get("ifalias", "") for d in _link_data()}


def link_indexes() -> dict[str, int]:
    """Root-namespace link name -> its ifindex (what proves a link the one made: owned.py)."""
    return {d["ifname"]: d["ifindex"] for d in _link_data() if "ifindex" in d}


def _record_link(made: owned.Made, name: str) -> None:
    index = link_indexes().get(name)
    if index is not None:
        owned.add_link(made, name, index)


def used_networks() -> list[ipaddress.IPv4Network]:
    """Every IPv4 network the root namespace has an address in or a route to."""
    nets = []
    try:
        for d in json.loads(ip("-j", "-4", "addr", "show") or "[]"):
            for a in d.get("addr_info", []):
                nets.append(ipaddress.IPv4Network(f"{a['local']}/{a['prefixlen']}", strict=False))
        for r in json.loads(ip("-j", "-4", "route", "show", "table", "all") or "[]"):
            dst = r.get("dst", "")
            if dst and dst != "default":
                nets.append(ipaddress.IPv4Network(dst, strict=False))
    except (ValueError, KeyError) as e:
        raise CloudhpcError(f"cannot read this machine's addresses from `ip -j`: {e}") from None
    return nets


def claim_bridge(name: str, made: owned.Made) -> int:
    """Create the cluster's bridge under the first free number whose subnet no interface or
    route of this machine overlaps. `ip link add` fails if the name exists, so two processes
    never claim the same number (or subnet)."""
    used = used_networks()
    existing = set(links())
    for number in range(MAX_CLUSTERS):
        br = bridge_name(number)
        if br in existing or any(subnet_of(number).overlaps(n) for n in used):
            continue
        try:
            ip("link", "add", br, "type", "bridge")
        except NetError as e:
            if "exists" in str(e):
                continue  # another cluster took it a moment ago
            raise
        _record_link(made, br)
        ip("link", "set", "dev", br, "alias", link_alias(name))
        return number
    raise CloudhpcError(f"no free subnet for a cluster in 10.224.0.0/12 ({MAX_CLUSTERS} in use)")


def setup_bridge(cluster: Cluster, made: owned.Made) -> None:
    """The bridge (no address: the machine's namespace gets none of the cluster's) and the head
    node, the namespace where mpiexec runs, linked to it uncapped."""
    ip_batch(
        [f"link set dev {cluster.bridge} mtu {cluster.mtu}", f"link set dev {cluster.bridge} up"]
    )
    _link_namespace(cluster, made, cluster.head, cluster.head_veth, cluster.gateway)


def _link_namespace(
    cluster: Cluster, made: owned.Made, namespace: str, veth: str, address: str
) -> None:
    """A namespace with its end of a veth pair (chpc0, its address) and the other end on the
    bridge, each recorded in `made` (the cluster's state directory) as soon as it exists."""
    prefix = subnet_of(cluster.number).prefixlen
    mtu = cluster.mtu
    ip("netns", "add", namespace)
    owned.add_namespace(made, namespace)
    ip("link", "add", veth, "mtu", str(mtu), "type", "veth", "peer", "name", IFACE, "mtu",
       str(mtu), "netns", namespace)  # fmt: skip
    _record_link(made, veth)
    ip_batch(
        [
            f'link set dev {veth} alias "{link_alias(cluster.name)}"',
            f"link set dev {veth} master {cluster.bridge} up",
        ]
    )
    ip_batch(
        [
            f"addr add {address}/{prefix} dev {IFACE}",
            f"link set dev {IFACE} up",
            "link set dev lo up",
        ],
        netns=namespace,
    )


def add_host(cluster: Cluster, host: ClusterHost, made: owned.Made) -> None:
    """The namespace, its link to the bridge, its address, and the caps on both ends."""
    _link_namespace(cluster, made, host.namespace, host.veth, host.address)
    set_rate(cluster, host)


def set_rate(cluster: Cluster, host: ClusterHost) -> None:
    """Cap both directions of host's link: its own egress (inside the namespace) and the
    bridge's egress towards it (the root end). Uncapped: no qdisc of ours on either end."""
    for dev, netns in ((host.iface, host.namespace), (host.veth, None)):
        if host.link_bps is None:
            _run(
                ["tc", *(["-n", netns] if netns else []), "qdisc", "del", "dev", dev, "root"],
                check=False,
            )
        else:
            tc(
                "qdisc",
                "replace",
                "dev",
                dev,
                "root",
                *tbf_args(host.link_bps, cluster.mtu),
                netns=netns,
            )


def qdisc_rate(dev: str, netns: str | None = None) -> str | None:
    """The rate of the tbf at dev's root ("1gbit"), None without one."""
    try:
        data = json.loads(tc("-j", "qdisc", "show", "dev", dev, "root", netns=netns) or "[]")
    except (ValueError, NetError):
        return None
    for q in data:
        if q.get("kind") == "tbf":
            rate = q.get("options", {}).get("rate")  # tc -j: bytes per second
            return format_rate(int(rate) * 8) if isinstance(rate, int | float) else None
    return None


# ---- removal ----------------------------------------------------------------------------------
def namespace_pids(namespace: str) -> set[int]:
    return {int(p) for p in ip("netns", "pids", namespace, check=False).split() if p.isdigit()}


def started_in(namespace: str, tag: str | None) -> set[int]:
    """The processes in `namespace` that cloudhpc started there: those carrying `tag` (the
    cluster's VAR=TOKEN, which every process it starts on a host carries: hook.host_argv) and
    every process below them. Never one someone else put in the namespace."""
    if not tag:
        return set()
    inside = namespace_pids(namespace)
    roots = inside & tagged(tag)
    table = parent_pids()
    found = set(roots)
    for pid in roots:
        found |= descendants(pid, table)
    return found - {os.getpid()}


def kill_namespace_processes(namespace: str, tag: str | None) -> int:
    """SIGKILL what cloudhpc started in `namespace` (started_in), again until none is left;
    returns how many were signalled."""
    seen: set[int] = set()
    for _ in range(20):
        pids = owned.alive(started_in(namespace, tag))
        if not pids:
            break
        kill(pids)
        seen |= pids
        time.sleep(0.02)
    return len(seen)


def remove(
    made: owned.Made | None,
    names_ns: Iterable[str],
    names_links: Iterable[str],
    tag: str | None = None,
) -> tuple[list[str], list[str]]:
    """Delete the namespaces and links of those named that `made` records as cloudhpc's (and
    the processes cloudhpc started in them); returns (removed, left alone: not proved ours).

    Links first: deleting a veth's root end removes its peer at once, where deleting the
    namespace alone leaves the kernel to reap the pair a little later."""
    removed: list[str] = []
    left: list[str] = []
    existing_ns = namespaces()
    ns_list = []
    for ns in dict.fromkeys(n for n in names_ns if n in existing_ns):
        (ns_list if owned.namespace_is_ours(made, ns) else left).append(ns)
    for ns in ns_list:
        kill_namespace_processes(ns, tag)
    indexes = link_indexes()
    for link in dict.fromkeys(names_links):
        if link not in indexes:
            continue
        if owned.link_is_ours(made, link, indexes[link]):
            ip("link", "del", link, check=False)
            removed.append(link)
        else:
            left.append(link)
    for ns in ns_list:
        ip("netns", "del", ns, check=False)
        removed.append(ns)
    return removed, left

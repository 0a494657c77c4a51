"""What a cluster is: its hosts (network namespaces), their addresses, links and local disks.

This is the description every other part reads: the launcher (hosts, head, hook), run
records (`Cluster.describe()`), and later data placement (each host's scratch directory and
address). It is plain data, saved as `cluster.json` in the cluster's state directory.

Names (the kernel's, so that anyone can tell what is cloudhpc's):
- host i of cluster NAME is the network namespace `chpc-NAME-hI`, and that is also its host
  name (in the hosts file, and its own `hostname` inside the host);
- the cluster's head node, where mpiexec runs (its login node), is the namespace `chpc-NAME-head`;
- links carry the cluster's number K (interface names are limited to 15 characters): the bridge
  `chpcKbr`, the root side of host i's link `chpcKhI`, of the head's `chpcKhd`; inside every
  host and the head the link is `chpc0`. Each link's alias (`ip link` shows it) is
  `cloudhpc cluster NAME`.
- cluster K owns the subnet 10.(224 + K // 256).(K % 256).0/24: the head is .1 (mpiexec's
  address for its proxies), host i is .(i + 2). Addresses exist only inside the cluster's own
  namespaces: the machine's namespace holds the bridge and the root ends of the links, with no
  address and no route into the cluster.
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..errors import CloudhpcError
from .cgroup import Limits
from .rates import format_rate
from .shares import mem_text

PREFIX = "chpc"
IFACE = "chpc0"  # a host's end of its link, inside its namespace
MAX_CLUSTERS = 16 * 256  # subnets 10.224.0.0/24 .. 10.239.255.0/24
MAX_HOSTS = 250
_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?$")


def check_name(name: str) -> str:
    if not _NAME.match(name or ""):
        raise CloudhpcError(
            f"cluster name {name!r} must be 1-32 lower-case letters, digits or '-' "
            "(starting and ending with a letter or digit)"
        )
    return name


def host_name(cluster: str, index: int) -> str:
    return f"{PREFIX}-{cluster}-h{index}"


def host_pattern(cluster: str) -> re.Pattern[str]:
    """Namespace names of cluster `cluster`'s hosts (and no other cluster's)."""
    return re.compile(rf"^{PREFIX}-{re.escape(cluster)}-h\d+$")


def head_name(cluster: str) -> str:
    return f"{PREFIX}-{cluster}-head"


def namespace_pattern(cluster: str) -> re.Pattern[str]:
    """Every namespace of cluster `cluster`: its hosts and its head (and no other cluster's)."""
    return re.compile(rf"^{PREFIX}-{re.escape(cluster)}-(?:h\d+|head)$")


def bridge_name(number: int) -> str:
    return f"{PREFIX}{number}br"


def veth_name(number: int, index: int) -> str:
    return f"{PREFIX}{number}h{index}"


def head_veth_name(number: int) -> str:
    return f"{PREFIX}{number}hd"


def link_alias(cluster: str) -> str:
    return f"cloudhpc cluster {cluster}"


def subnet_of(number: int) -> ipaddress.IPv4Network:
    if not 0 <= number < MAX_CLUSTERS:
        raise ValueError(number)
    return ipaddress.IPv4Network(f"10.{224 + number // 256}.{number % 256}.0/24")


@dataclass(frozen=True)
class ClusterHost:
    """One emulated machine."""

    name: str  # host name == network namespace
    index: int
    slots: int
    link_bps: int | None  # None: uncapped
    scratch: str  # its local disk
    address: str = ""  # set once the cluster has its subnet
    veth: str = ""  # the root namespace's end of its link (on the bridge)
    iface: str = IFACE  # its own end, inside the namespace
    # its size (shares.py): a CPU share (None: the whole machine's), given as whole cores
    # (cpuset) or a CFS quota per period; its memory (None: unlimited)
    cpus: float | None = None
    cpuset: str = ""
    cpu_period_us: int | None = None
    mem_bytes: int | None = None
    # the `cgroup.procs` files of its control groups: every process started on the host
    # writes its PID into them first (hook.host_argv)
    cgroups: tuple[str, ...] = ()

    @property
    def namespace(self) -> str:
        return self.name

    @property
    def link(self) -> str:
        return format_rate(self.link_bps)

    @property
    def limits(self) -> Limits:
        return Limits(self.cpus, self.cpuset, self.cpu_period_us, self.mem_bytes)

    @property
    def size(self) -> str:
        """ "1 CPU (cpuset 0), 512M", "0.5 CPU (CFS 50/100 ms)", "all CPUs" for tables."""
        lim = self.limits
        if self.cpus is None:
            cpu = "all CPUs"
        elif lim.cpuset:
            cpu = f"{self.cpus:g} CPU (core {lim.cpuset})"
        else:
            cpu = f"{self.cpus:g} CPU (CFS {lim.quota_us / 1000:g}/{lim.period_us / 1000:g} ms)"
        if self.mem_bytes is not None:
            cpu += f", {mem_text(self.mem_bytes)}"
        return cpu

    def share(self) -> dict[str, Any]:
        """Its CPU share and memory as a record states them."""
        lim = self.limits
        d: dict[str, Any] = {"cpus": self.cpus, "cpu_limit": lim.kind}
        if lim.cpuset:
            d["cpuset"] = lim.cpuset
        if lim.quota_us is not None:
            d.update(cfs_quota_us=lim.quota_us, cfs_period_us=lim.period_us)
        d["mem_bytes"] = self.mem_bytes
        return d


@dataclass(frozen=True)
class Cluster:
    name: str
    hosts: tuple[ClusterHost, ...]
    mtu: int
    state_dir: str
    created_at: str
    status: str = "creating"  # then "up"; a half-created cluster stays "creating"
    number: int | None = None  # K: bridge, links and subnet (None until claimed)
    ephemeral: bool = False  # brought up for one run (--env capped:RATE)
    owner: dict[str, Any] = field(default_factory=dict)  # pid + start time of its creator
    # how MPI ranks wait for messages on its hosts (mpi/base.py wait_modes): "auto" is each
    # implementation's best on a fractional CPU share, its default (spin) elsewhere
    mpi_wait: str = "auto"

    # ---- derived names --------------------------------------------------------------------
    @property
    def bridge(self) -> str:
        return bridge_name(self.number) if self.number is not None else ""

    @property
    def subnet(self) -> str:
        return str(subnet_of(self.number)) if self.number is not None else ""

    @property
    def gateway(self) -> str:
        """The head's address: where the proxies reach mpiexec."""
        return str(subnet_of(self.number)[1]) if self.number is not None else ""

    @property
    def head(self) -> str:
        """The head node's network namespace (mpiexec runs there, as on a login node)."""
        return head_name(self.name)

    @property
    def head_veth(self) -> str:
        return head_veth_name(self.number) if self.number is not None else ""

    @property
    def namespaces(self) -> list[str]:
        return [self.head, *(h.namespace for h in self.hosts)]

    def in_head(self, argv: list[str]) -> list[str]:
        """argv that runs `argv` on the head node: in its network namespace only (nsenter), not
        in the mount namespace `ip netns exec` makes, whose /sys hides /sys/fs/cgroup: the hook
        that mpiexec calls there puts each host's proxy into the host's control groups."""
        return ["nsenter", f"--net=/run/netns/{self.head}", "--", *argv]

    @property
    def hosts_file(self) -> str:
        return f"{self.state_dir}/{self.name}.hosts"

    @property
    def hook(self) -> str:
        return f"{self.state_dir}/hook"

    @property
    def state_file(self) -> str:
        return f"{self.state_dir}/cluster.json"

    @property
    def slots(self) -> int:
        return sum(h.slots for h in self.hosts)

    def host(self, name: str) -> ClusterHost:
        for h in self.hosts:
            if h.name == name:
                return h
        raise CloudhpcError(f"host {name} is not in cluster {self.name}")

    def with_number(self, number: int) -> Cluster:
        """The cluster once it owns bridge/subnet `number`: addresses and link names filled."""
        net = subnet_of(number)
        hosts = tuple(
            replace(h, address=str(net[h.index + 2]), veth=veth_name(number, h.index))
            for h in self.hosts
        )
        return replace(self, number=number, hosts=hosts)

    # ---- what the world reads -------------------------------------------------------------
    def hosts_text(self) -> str:
        links = sorted({h.link for h in self.hosts})
        lines = [
            f"# cloudhpc cluster {self.name}: {len(self.hosts)} hosts, links {', '.join(links)}",
            f"# state: {self.state_dir} (cloudhpc cluster status {self.name})",
        ]
        lines += [f"{h.name}:{h.slots}" for h in self.hosts]
        return "\n".join(lines) + "\n"

    def describe(self) -> dict[str, Any]:
        """The cluster as a run record stores it."""
        return {
            "name": self.name,
            "ephemeral": self.ephemeral,
            "subnet": self.subnet,
            "head": {"namespace": self.head, "address": self.gateway},
            "gateway": self.gateway,
            "mtu": self.mtu,
            "netem": False,  # no added delay: only bandwidth is capped (tbf)
            "mpi_wait": self.mpi_wait,
            "hosts": [
                {
                    "name": h.name,
                    "address": h.address,
                    "slots": h.slots,
                    "link": h.link,
                    "link_bps": h.link_bps,
                    "scratch": h.scratch,
                    **h.share(),
                }
                for h in self.hosts
            ],
        }

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Cluster:
        d = dict(d)
        d["hosts"] = tuple(
            ClusterHost(**{**h, "cgroups": tuple(h.get("cgroups", ()))}) for h in d["hosts"]
        )
        return cls(**d)

    @classmethod
    def from_json(cls, text: str) -> Cluster:
        return cls.from_dict(json.loads(text))

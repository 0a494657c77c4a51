"""Where each rank goes: seed 003's Algorithms 1 and 2, and OpenNebula's matchmaking baseline.

Pure functions of the hosts (in hosts-file order), their free slots now and their racks:

- Algorithm 1 (`data_aware_distribute`, a whole file on one host): find the host holding the
  file; fill it until it has no free slot or all N ranks are placed; then take the host *in the
  same rack* with the most free slots, fill it, and repeat until N ranks are placed.
- Algorithm 2 (`data_aware_stripe`, a striped file): rank i goes to the host holding its data
  (the seed: stripe i) if that host has a free slot, else to the host in the same rack as that
  data with the most free slots.
- Matchmaking (`matchmaking`, OpenNebula's default): each rank, in rank order, to the host with
  the most free slots, ignoring data and racks.

Ties between hosts with as many free slots go to the one listed first (the seed's servers are in
increasing address order). Beyond the seed, which does not say: when the data's rack has no free
slot left, the host with most free slots in any rack is taken (the plan notes it); with
`oversubscribe`, once every slot is taken the hosts' slots are counted again from the start (a
new round, as if each slot ran one more rank), and the same rules go on.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import CloudhpcError


@dataclass(frozen=True)
class SlotHost:
    """A host as placement sees it: its name, free slots now, and its rack ('' = no label)."""

    name: str
    free: int
    rack: str = ""


@dataclass(frozen=True)
class Placement:
    policy: str
    hosts: tuple[str, ...]  # rank -> host
    rounds: int = 1  # > 1: oversubscribed (slots counted again)
    notes: tuple[str, ...] = field(default_factory=tuple)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for h in self.hosts:
            out[h] = out.get(h, 0) + 1
        return out


class _Slots:
    """Free slots as ranks are placed, with oversubscription rounds."""

    def __init__(self, hosts: Sequence[SlotHost], nprocs: int, oversubscribe: bool) -> None:
        if nprocs < 1:
            raise CloudhpcError(f"the number of ranks must be at least 1, got {nprocs}")
        names = [h.name for h in hosts]
        if len(set(names)) != len(names):
            raise CloudhpcError("a host is listed twice in the hosts (or --slots) file")
        if any(h.free < 0 for h in hosts):
            raise CloudhpcError("free slots cannot be negative")
        total = sum(h.free for h in hosts)
        if total == 0:
            raise CloudhpcError("no host has a free slot")
        if nprocs > total and not oversubscribe:
            raise CloudhpcError(
                f"{nprocs} ranks need {nprocs} slots but the hosts have {total} free; "
                "pass --oversubscribe to place them anyway"
            )
        self.hosts = list(hosts)
        self.rack = {h.name: h.rack for h in hosts}
        self.free = {h.name: h.free for h in hosts}
        self.rounds = 1
        self.notes: list[str] = []

    def check_known(self, name: str, what: str) -> None:
        if name not in self.free:
            raise CloudhpcError(f"{what} {name} is not among the hosts to place ranks on")

    def take(self, name: str) -> None:
        self.free[name] -= 1

    def most_free(self, rack: str | None = None) -> str | None:
        """The host with most free slots (first listed on ties), in `rack` if given."""
        best = None
        for h in self.hosts:
            if rack is not None and h.rack != rack:
                continue
            if self.free[h.name] > 0 and (best is None or self.free[h.name] > self.free[best]):
                best = h.name
        return best

    def next_round(self) -> None:
        self.free = {h.name: h.free for h in self.hosts}
        self.rounds += 1

    def neighbour(self, data_host: str) -> str:
        """The host in `data_host`'s rack with most free slots; beyond the seed, any rack's
        when that rack is full, and a new round when every host is."""
        rack = self.rack[data_host]
        found = self.most_free(rack)
        if found is None:
            found = self.most_free()
            if found is not None:
                note = f"rack {rack or '(unlabelled)'} of {data_host} full: ranks placed off-rack"
                if note not in self.notes:
                    self.notes.append(note)
        if found is None:
            self.next_round()
            found = data_host if self.free[data_host] > 0 else self.most_free()
        return found

    def placement(self, policy: str, placed: list[str]) -> Placement:
        notes = list(self.notes)
        if self.rounds > 1:
            notes.append(f"oversubscribed: slots counted {self.rounds} times")
        return Placement(policy, tuple(placed), self.rounds, tuple(notes))


def data_aware_distribute(
    hosts: Sequence[SlotHost], data_host: str, nprocs: int, oversubscribe: bool = False
) -> Placement:
    """Algorithm 1: fill the host holding the file, then the host of its rack with most free
    slots, and so on until `nprocs` ranks are placed."""
    slots = _Slots(hosts, nprocs, oversubscribe)
    slots.check_known(data_host, "the data host")
    placed: list[str] = []
    current = data_host
    while len(placed) < nprocs:
        while slots.free[current] > 0 and len(placed) < nprocs:
            slots.take(current)
            placed.append(current)
        if len(placed) < nprocs:
            current = slots.neighbour(data_host)
    return slots.placement("data-aware", placed)


def data_aware_stripe(
    hosts: Sequence[SlotHost], rank_hosts: Sequence[str], oversubscribe: bool = False
) -> Placement:
    """Algorithm 2: rank i on `rank_hosts[i]`, the host holding its data, if it has a free slot,
    else on the host of that data's rack with most free slots."""
    slots = _Slots(hosts, len(rank_hosts), oversubscribe)
    for h in dict.fromkeys(rank_hosts):
        slots.check_known(h, "the data host")
    placed: list[str] = []
    for data_host in rank_hosts:
        host = data_host if slots.free[data_host] > 0 else slots.neighbour(data_host)
        slots.take(host)
        placed.append(host)
    return slots.placement("data-aware", placed)


def matchmaking(hosts: Sequence[SlotHost], nprocs: int, oversubscribe: bool = False) -> Placement:
    """OpenNebula's matchmaking: each rank on the host with most free slots, data ignored."""
    slots = _Slots(hosts, nprocs, oversubscribe)
    placed: list[str] = []
    for _ in range(nprocs):
        host = slots.most_free()
        if host is None:
            slots.next_round()
            host = slots.most_free()
        slots.take(host)
        placed.append(host)
    return slots.placement("matchmaking", placed)


# ---- which host holds each rank's data ---------------------------------------------------------
Extent = tuple[int, int]  # offset, length


def rank_extents(size: int, nprocs: int, block: int | None = None, segments: int = 1):
    """Each rank's byte ranges of a file read as IOR's segmented shared file: segment i of rank
    r at (i * P + r) * block. Default block: the file cut in P x segments equal parts (one
    segment: rank r reads the r-th P-th of the file, as the seed's process-to-block mapping)."""
    if block is None:
        block = size // (nprocs * segments)
    if block < 1:
        raise CloudhpcError(f"the file ({size} bytes) is too small for {nprocs} ranks")
    if block * nprocs * segments > size:
        raise CloudhpcError(
            f"{segments} segments of {nprocs} blocks of {block} bytes need "
            f"{block * nprocs * segments} bytes; the file has {size}"
        )
    return [[((i * nprocs + r) * block, block) for i in range(segments)] for r in range(nprocs)]


def bytes_by_host(extents: Sequence[Extent], chunks: Sequence[tuple[int, int, str]]):
    """How many bytes of `extents` each host holds; chunks are (offset, length, host), sorted
    by offset and covering the file. Hosts in the order the extents first meet them."""
    starts = [c[0] for c in chunks]
    out: dict[str, int] = {}
    for off, length in extents:
        end = off + length
        i = max(bisect.bisect_right(starts, off) - 1, 0)
        while i < len(chunks) and chunks[i][0] < end:
            c_off, c_len, host = chunks[i]
            n = min(end, c_off + c_len) - max(off, c_off)
            if n > 0:
                out[host] = out.get(host, 0) + n
            i += 1
    return out


def rank_data_hosts(chunks: Sequence[tuple[int, int, str]], extents_per_rank) -> list[str]:
    """For each rank r, the host holding most of its bytes. With one stripe per rank (the seed's
    assumption, "the number of processes equal to the number of blocks striped across") that
    is the host of stripe r, Algorithm 2's rule; when hosts hold as many of rank r's bytes
    (fewer ranks than stripes), the host of stripe r among them, as Algorithm 2 reads
    literally; else the first met."""
    hosts = []
    for r, extents in enumerate(extents_per_rank):
        held = bytes_by_host(extents, chunks)
        most = max(held.values())
        tied = [h for h, n in held.items() if n == most]
        if len(tied) > 1 and r < len(chunks) and chunks[r][2] in tied:
            hosts.append(chunks[r][2])
        else:
            hosts.append(tied[0])
    return hosts

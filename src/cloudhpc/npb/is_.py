"""IS, the integer sort kernel: bucket sort of uniformly-ish distributed integer keys.

Each rank generates its contiguous share of the key sequence (NPB's generator, jumped to the
rank's first number), counts keys per bucket, and the bucket counts are summed with Allreduce;
buckets are then assigned to ranks in contiguous runs holding about N/P keys each, the send
counts are exchanged with Alltoall and the keys with Alltoallv, and each rank ranks the keys of
its key range by counting. The five test keys' ranks are checked in every iteration (partial
verification) and, after the timed loop, the keys are sorted and the order checked across
ranks (full verification): 5 x 10 + 1 = 51 passed checks, as NPB counts them. A single rank
keeps its keys where they are (ranking by counting needs no bucket order) while its table of
counts fits the caches: it counts the buckets and skips the bucket-ordered copy and the exchange
with itself that the reference makes. A larger table (class B: 2^21 counts, 8 MiB) is counted
from the bucket-ordered copy, as the reference does: each bucket's increments then stay within
a few KiB of the table instead of landing anywhere in it.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from numba import njit

from .common import (
    RANK_OVERHEAD,
    Progress,
    check_class,
    check_exact,
    is_power_of_two,
    make_result,
    max_time,
    mops,
)
from .nprandom import R46, SEED, A, _mul, skip

KERNEL = "is"
PROCS_RULE = "a power of two number of processes (1, 2, 4, 8, ...)"
MAX_ITERATIONS = 10
TEST_ARRAY_SIZE = 5
#: a single rank counts its keys in bucket order when its table of counts is larger than this.
#: Measured on this machine's Zen 4 (1 MiB L2 per core; bucketing + counting against counting
#: alone, one core, best of 5, load ~12): class A (2 MiB) 16.9 against 13.2 ms, class B (8 MiB)
#: 69 against 83-92 ms; the random increments into 8 MiB were 5x slower than in bucket order.
DIRECT_COUNT_BYTES = 4 << 20

#: class -> (log2 total keys, log2 max key, log2 buckets, test indices, test ranks)
CLASSES: dict[str, tuple[int, int, int, tuple[int, ...], tuple[int, ...]]] = {
    "S": (16, 11, 9, (48427, 17148, 23627, 62548, 4431), (0, 18, 346, 64917, 65463)),
    "W": (
        20,
        16,
        10,
        (357773, 934767, 875723, 898999, 404505),
        (1249, 11698, 1039987, 1043896, 1048018),
    ),
    "A": (
        23,
        19,
        10,
        (2112377, 662041, 5336171, 3642833, 4250760),
        (104, 17523, 123928, 8288932, 8388264),
    ),
    "B": (
        25,
        21,
        10,
        (41869, 812306, 5102857, 18232239, 26860214),
        (33422937, 10244, 59149, 33135281, 99),
    ),
    "C": (
        27,
        23,
        10,
        (44172927, 72999161, 74326391, 129606274, 21736814),
        (61147, 882988, 266290, 133997595, 133525895),
    ),
}


def expected_rank(cls: str, i: int, base: int, iteration: int) -> int:
    """The rank test key i must have in `iteration`: the official values move by the iteration
    number because every iteration plants the keys `iteration` and `max_key - iteration`."""
    if cls == "S":
        return base + iteration if i <= 2 else base - iteration
    if cls == "W":
        return base + iteration - 2 if i < 2 else base - iteration
    if cls == "A":
        return base + iteration - 1 if i <= 2 else base - (iteration - 1)
    if cls == "B":
        return base + iteration if i in (1, 2, 4) else base - iteration
    return base + iteration if i <= 2 else base - iteration  # C


def allowed_procs(p: int) -> bool:
    return is_power_of_two(p)


def memory_estimate(cls: str, nprocs: int) -> int:
    total_log2, max_log2, _, _, _ = CLASSES[cls]
    num_keys = (1 << total_log2) // nprocs
    # keys + bucket-ordered copy + received keys (up to 1.5x the share, as the reference sizes
    # its buffers) + the per-key-value counts of this rank's key range, 4 bytes each
    return RANK_OVERHEAD + 4 * (num_keys * 4 + (1 << max_log2))


@njit(cache=True)
def create_seq(seed: float, num_keys: int, max_key: int) -> np.ndarray:
    """Keys = (max_key / 4) * (sum of 4 uniforms), four numbers of the stream per key."""
    keys = np.empty(num_keys, np.int32)
    k = max_key // 4
    x = seed
    for i in range(num_keys):
        x = _mul(x, A)
        s = R46 * x
        x = _mul(x, A)
        s += R46 * x
        x = _mul(x, A)
        s += R46 * x
        x = _mul(x, A)
        s += R46 * x
        keys[i] = int(k * s)
    return keys


@njit(cache=True)
def bucket_keys(keys: np.ndarray, shift: int, nbuckets: int, sizes: np.ndarray, out: np.ndarray):
    """Count keys per bucket into sizes[:nbuckets] and write them to `out` in bucket order.

    Bucket numbers and positions are unsigned so that numba emits no negative-index
    wrap-around on the scattered loads and stores (a quarter of the time here)."""
    for b in range(nbuckets):
        sizes[b] = 0
    sh = np.uint64(shift)
    for i in range(keys.shape[0]):
        sizes[np.uint64(keys[i]) >> sh] += 1
    ptr = np.empty(nbuckets, np.uint64)
    acc = np.uint64(0)
    for b in range(nbuckets):
        ptr[b] = acc
        acc += np.uint64(sizes[b])
    one = np.uint64(1)
    for i in range(keys.shape[0]):
        k = keys[i]
        b = np.uint64(k) >> sh
        out[ptr[b]] = k
        ptr[b] += one


@njit(cache=True)
def count_buckets(keys: np.ndarray, shift: int, nbuckets: int, sizes: np.ndarray) -> None:
    """Only the counts of bucket_keys (one rank keeps its keys where they are)."""
    for b in range(nbuckets):
        sizes[b] = 0
    sh = np.uint64(shift)
    for i in range(keys.shape[0]):
        sizes[np.uint64(keys[i]) >> sh] += 1


@njit(cache=True)
def distribute(
    totals: np.ndarray, local: np.ndarray, nbuckets: int, nprocs: int, num_keys: int
) -> tuple:
    """The reference's assignment of bucket runs to ranks: accumulate global bucket sizes until
    they pass (j+1) * num_keys. Returns send counts, send displacements, first and last bucket
    of every rank."""
    send_count = np.zeros(nprocs, np.int32)
    send_displ = np.zeros(nprocs, np.int32)
    first = np.zeros(nprocs, np.int64)
    last = np.zeros(nprocs, np.int64)
    acc = 0
    local_acc = 0
    j = 0
    for i in range(nbuckets):
        acc += totals[i]
        local_acc += local[i]
        if j < nprocs and acc >= (j + 1) * num_keys:
            send_count[j] = local_acc
            if j != 0:
                send_displ[j] = send_displ[j - 1] + send_count[j - 1]
                first[j] = last[j - 1] + 1
            last[j] = i
            j += 1
            local_acc = 0
    while j < nprocs:  # ranks that got no bucket: an empty key range
        send_count[j] = 0
        send_displ[j] = send_displ[j - 1] + send_count[j - 1] if j > 0 else 0
        first[j] = 1
        last[j] = 0
        j += 1
    return send_count, send_displ, first, last


@njit(cache=True)
def count_ranks_pair(
    own: np.ndarray, received: np.ndarray, min_key: int, counts: np.ndarray
) -> None:
    """counts[v - min_key] = number of this rank's keys <= v (the keys' ranks within this rank),
    over the keys it kept (`own`) and those it received: the keys a rank would send itself
    never go through MPI (Alltoallv's copy of them)."""
    for i in range(counts.shape[0]):
        counts[i] = 0
    for i in range(own.shape[0]):
        counts[np.uint64(own[i] - min_key)] += 1
    for i in range(received.shape[0]):
        counts[np.uint64(received[i] - min_key)] += 1
    for i in range(1, counts.shape[0]):
        counts[i] += counts[i - 1]


@njit(cache=True)
def sort_by_counts(received: np.ndarray, min_key: int, counts: np.ndarray) -> np.ndarray:
    """Place every key at its rank (what full_verify does), using and consuming `counts`."""
    out = np.empty_like(received)
    for i in range(received.shape[0]):
        v = received[i] - min_key
        counts[v] -= 1
        out[counts[v]] = received[i]
    return out


@njit(cache=True)
def count_out_of_order(keys: np.ndarray) -> int:
    bad = 0
    for i in range(1, keys.shape[0]):
        if keys[i - 1] > keys[i]:
            bad += 1
    return bad


class _Sorter:
    """The per-rank state of one IS run: the keys and the work buffers, allocated once."""

    def __init__(self, comm: Any, cls: str) -> None:
        self.comm = comm
        self.cls = cls
        self.nprocs, self.rank = comm.Get_size(), comm.Get_rank()
        total_log2, max_log2, buckets_log2, self.test_index, self.test_rank = CLASSES[cls]
        self.total_keys = 1 << total_log2
        self.max_key = 1 << max_log2
        self.nbuckets = 1 << buckets_log2
        self.shift = max_log2 - buckets_log2
        self.num_keys = self.total_keys // self.nprocs
        # each rank's keys are its contiguous piece of the one global sequence
        seed = skip(SEED, A, 4 * self.num_keys * self.rank)
        self.keys = create_seq(seed, self.num_keys, self.max_key)
        self.sizes = np.zeros(self.nbuckets + TEST_ARRAY_SIZE, np.int64)
        self.totals = np.zeros_like(self.sizes)
        # one rank counts straight from its keys while its counts fit the caches
        self.direct = self.nprocs == 1 and 4 * self.max_key <= DIRECT_COUNT_BYTES
        self.bucketed = np.empty(0 if self.direct else self.num_keys, np.int32)
        self.recv_count = np.zeros(self.nprocs, np.int32)
        self.received = np.empty(0, np.int32)
        self.own = self.received  # the keys this rank keeps, a view of `bucketed`
        self.counts = np.empty(0, np.int32)
        self.passed = 0

    def rank_keys(self, iteration: int) -> None:
        """One iteration of NPB's rank(): bucket, redistribute, count, check the test keys."""
        from mpi4py import MPI

        if self.rank == 0:
            self.keys[iteration] = iteration
            self.keys[iteration + MAX_ITERATIONS] = self.max_key - iteration
        nb = self.nbuckets
        alone = self.nprocs == 1
        if self.direct:  # all keys stay here: ranking by counts needs no bucket order
            count_buckets(self.keys, self.shift, nb, self.sizes)
        else:
            bucket_keys(self.keys, self.shift, nb, self.sizes, self.bucketed)
        # the test keys ride along in the bucket-count reduction, as in the reference
        for i, idx in enumerate(self.test_index):
            owner, pos = divmod(idx, self.num_keys)
            self.sizes[nb + i] = self.keys[pos] if owner == self.rank else 0
        if alone:
            self.totals[:] = self.sizes
        else:
            self.comm.Allreduce(self.sizes, self.totals, op=MPI.SUM)
        send_count, send_displ, first, last = distribute(
            self.totals, self.sizes, nb, self.nprocs, self.num_keys
        )
        me = self.rank
        if alone:  # no exchange with itself
            self.received = self.keys if self.direct else self.bucketed
            self.own = self.received[:0]
            nrecv = self.num_keys
        else:
            self.comm.Alltoall(send_count, self.recv_count)
            # the keys this rank keeps stay in `bucketed` (counted there): the exchange moves
            # only the others' (the reference's Alltoallv also copies a rank's own share, 8 MiB
            # per iteration and rank in class A at P = 2)
            start = int(send_displ[me])
            self.own = self.bucketed[start : start + int(send_count[me])]
            send_count[me] = 0
            self.recv_count[me] = 0
            recv_displ = np.zeros(self.nprocs, np.int32)
            recv_displ[1:] = np.cumsum(self.recv_count[:-1])
            nrecv = int(self.recv_count.sum())
            if self.received.shape[0] < nrecv:
                self.received = np.empty(max(nrecv, self.num_keys * 3 // 2), np.int32)
            self.comm.Alltoallv(
                [self.bucketed, (send_count, send_displ), MPI.INT],
                [self.received, (self.recv_count, recv_displ), MPI.INT],
            )
        self.min_key = int(first[me]) << self.shift
        max_key = ((int(last[me]) + 1) << self.shift) - 1
        nvalues = max(0, max_key - self.min_key + 1)
        if self.counts.shape[0] != nvalues:
            self.counts = np.empty(nvalues, np.int32)
        self.nlocal = nrecv
        count_ranks_pair(self.own, self.received[:nrecv], self.min_key, self.counts)
        # keys held by lower ranks: the buckets before this rank's first one
        lesser = int(self.totals[: int(first[me])].sum()) if nvalues else 0
        for i in range(TEST_ARRAY_SIZE):
            k = int(self.totals[nb + i])
            if self.min_key <= k <= max_key:
                below = int(self.counts[k - 1 - self.min_key]) if k > self.min_key else 0
                if below + lesser == expected_rank(self.cls, i, self.test_rank[i], iteration):
                    self.passed += 1

    def full_verify(self, corrupt: bool) -> int:
        """Sort the ranked keys and count keys out of order, across rank boundaries too."""
        from mpi4py import MPI

        mine = np.concatenate([self.own, self.received[: self.nlocal]])
        sorted_keys = sort_by_counts(mine, self.min_key, self.counts)
        if corrupt and self.rank == 0 and sorted_keys.shape[0] > 1:
            sorted_keys[0], sorted_keys[-1] = sorted_keys[-1], sorted_keys[0]
        bad = count_out_of_order(sorted_keys)
        # the largest key so far must not exceed this rank's smallest key
        last = np.array([sorted_keys[-1] if sorted_keys.shape[0] else -1], np.int64)
        prev = np.array([-1], np.int64)
        dest = self.rank + 1 if self.rank + 1 < self.nprocs else MPI.PROC_NULL
        src = self.rank - 1 if self.rank > 0 else MPI.PROC_NULL
        self.comm.Sendrecv(last, dest, 1000, prev, src, 1000)
        if self.rank > 0 and sorted_keys.shape[0] and prev[0] > sorted_keys[0]:
            bad += 1
        return bad


def run(comm: Any, cls: str, *, corrupt: bool = False, progress: Progress = None) -> dict:
    from mpi4py import MPI

    cls = check_class(KERNEL, cls, CLASSES)
    s = _Sorter(comm, cls)
    s.rank_keys(1)  # one untimed iteration, as the reference does, to warm everything up
    s.passed = 0
    comm.Barrier()
    t0 = time.perf_counter()
    for it in range(1, MAX_ITERATIONS + 1):
        s.rank_keys(it)
        if progress is not None:
            progress(it, MAX_ITERATIONS, f"is class {cls}")
    elapsed = max_time(comm, time.perf_counter() - t0)

    bad = s.full_verify(corrupt)
    partial = comm.allreduce(s.passed, op=MPI.SUM)
    bad_total = comm.allreduce(bad, op=MPI.SUM)
    passed = partial + (1 if bad_total == 0 else 0)
    checks = [
        check_exact("partial verifications", partial, TEST_ARRAY_SIZE * MAX_ITERATIONS),
        check_exact("keys out of order", bad_total, 0),
        check_exact("passed checks", passed, TEST_ARRAY_SIZE * MAX_ITERATIONS + 1),
    ]
    return make_result(
        kernel=KERNEL,
        cls=cls,
        size=str(s.total_keys),
        iterations=MAX_ITERATIONS,
        time_s=elapsed,
        mops_total=mops(MAX_ITERATIONS * s.total_keys, elapsed),
        nprocs=s.nprocs,
        verification=checks,
        optype="keys ranked",
    )

"""Ray's own per-call cost on this machine, the yardstick for the ray engine's per-task overhead.

The shapes of Ray's release microbenchmark (ray/_private/ray_perf.py): an actor method that
returns a small value, called "sync" (one call at a time: `ray.get(a.small_value.remote())`) and
"async" (1000 calls in flight on one actor), plus the dynamic schedule's shape without
cloudhpc's bookkeeping: 2 actors, one call in flight each, refilled as they finish (ray.wait).
Started with the engine's own private-instance settings (engines/ray_cluster.py).

    python benchmarks/_bare_ray_calls.py CALLS   -> one JSON line of microseconds per call
"""

import json
import sys
import time

import ray

from cloudhpc.engines import ray_cluster


@ray.remote(num_cpus=1)
class Actor:
    def small_value(self) -> bytes:
        return b"ok"


def main() -> None:
    n = int(sys.argv[1])
    temp = ray_cluster.start_private(2, {"OMP_NUM_THREADS": "1"})
    try:
        actors = [Actor.remote() for _ in range(2)]
        ray.get([a.small_value.remote() for a in actors])
        a = actors[0]
        out = {}

        t = time.perf_counter()
        for _ in range(n):
            ray.get(a.small_value.remote())
        out["1:1 actor calls sync"] = (time.perf_counter() - t) / n * 1e6

        t = time.perf_counter()
        for _ in range(max(1, n // 1000)):
            ray.get([a.small_value.remote() for _ in range(1000)])
        out["1:1 actor calls async"] = (time.perf_counter() - t) / (max(1, n // 1000) * 1000) * 1e6

        t = time.perf_counter()
        inflight = {act.small_value.remote(): act for act in actors}
        left = n - len(inflight)
        while inflight:
            (ready,), _ = ray.wait(list(inflight), num_returns=1)
            act = inflight.pop(ready)
            ray.get(ready)
            if left > 0:
                inflight[act.small_value.remote()] = act
                left -= 1
        out["2 actors, 1 call in flight each"] = (time.perf_counter() - t) / n * 1e6
    finally:
        ray_cluster.stop(temp)
    print(json.dumps(out))


if __name__ == "__main__":
    main()

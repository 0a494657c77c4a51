"""Starting, joining and stopping Ray for one cloudhpc job.

By default a job starts a private Ray instance on this machine (`ray.init(address="local")`) and
stops it at the end; `--ray-address ADDR` joins a running cluster instead (and only disconnects).

A private instance is sized for a shared 2-core, 24 GiB machine: `num_cpus` is exactly what the
job's workers need (P x threads), the object store is small (CLOUDHPC_RAY_OBJECT_STORE_MB,
default 256; Ray spills objects to disk beyond it), no dashboard, the node listens on 127.0.0.1
only, and Ray's usage statistics stay off (this machine reaches no other host).

Its processes (gcs_server, raylet, agents, workers) share the job's fate: Ray starts them with
PR_SET_PDEATHSIG and in the driver's process group, which the runner kills on Ctrl-C, SIGTERM,
SIGHUP and --timeout; worker processes exit when their raylet does. Ray keeps a session directory
(logs, sockets) per instance and never deletes old ones (/tmp/ray grows by one per `ray.init`), so
each private instance gets its own temporary directory, /tmp/cloudhpc-ray-<driver pid>-XXXX,
removed after `ray.shutdown()`; a directory left by a driver that was killed (SIGKILL leaves no
chance to clean up) is removed by the next job's start once its driver pid is gone.
"""

from __future__ import annotations

import glob
import logging
import os
import shutil
import tempfile
from typing import Any

from ..errors import CloudhpcError

OBJECT_STORE_VAR = "CLOUDHPC_RAY_OBJECT_STORE_MB"
DEFAULT_OBJECT_STORE_MB = 256
MIN_OBJECT_STORE_MB = 80  # Ray refuses less than 75 MiB
TEMP_PREFIX = "cloudhpc-ray-"
# Ray's unix sockets live under the temp dir; their paths must stay under 108 bytes
TEMP_ROOT = "/tmp"


def object_store_bytes() -> int:
    text = os.environ.get(OBJECT_STORE_VAR, "").strip()
    if not text:
        return DEFAULT_OBJECT_STORE_MB << 20
    if not text.isdigit() or int(text) < MIN_OBJECT_STORE_MB:
        raise CloudhpcError(
            f"{OBJECT_STORE_VAR}={text}: give whole MiB, at least {MIN_OBJECT_STORE_MB}"
        )
    return int(text) << 20


def _quiet_ray() -> None:
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"  # never report usage to Ray's servers
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")


def sweep_stale_dirs() -> list[str]:
    """Remove private-instance directories whose driver is gone; returns what was removed."""
    removed = []
    for path in glob.glob(os.path.join(TEMP_ROOT, TEMP_PREFIX + "*")):
        try:
            pid = int(os.path.basename(path)[len(TEMP_PREFIX) :].split("-")[0])
            if os.stat(path).st_uid != os.getuid():
                continue
        except (ValueError, OSError):
            continue
        if pid != os.getpid() and not _alive(pid):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has finished
    except (OSError, IndexError):
        return False


def start_private(num_cpus: int, env_vars: dict[str, str]) -> str:
    """Start a private Ray instance for this job; returns its temporary directory."""
    import ray

    _quiet_ray()
    sweep_stale_dirs()
    temp_dir = tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-", dir=TEMP_ROOT)
    try:
        ray.init(
            address="local",
            num_cpus=num_cpus,
            object_store_memory=object_store_bytes(),
            include_dashboard=False,
            _temp_dir=temp_dir,
            _node_ip_address="127.0.0.1",
            logging_level=logging.ERROR,
            log_to_driver=False,
            runtime_env={"env_vars": env_vars},
        )
    except BaseException:
        stop(temp_dir)
        raise
    return temp_dir


def join(address: str, env_vars: dict[str, str]) -> None:
    """Connect to the running cluster at `address` ('auto': Ray's discovery)."""
    import ray

    _quiet_ray()
    try:
        ray.init(
            address=address,
            logging_level=logging.ERROR,
            log_to_driver=False,
            runtime_env={"env_vars": env_vars},
        )
    except (ConnectionError, RuntimeError, ValueError) as e:
        text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CloudhpcError(f"cannot join the Ray cluster at {address}: {text}") from None


def describe() -> dict[str, Any]:
    import ray

    ctx = ray.get_runtime_context()
    return {
        "ray_version": ray.__version__,
        "gcs_address": ctx.gcs_address,
        "nodes": sorted({n["NodeManagerAddress"] for n in ray.nodes() if n.get("Alive")}),
        "cluster_cpus": ray.cluster_resources().get("CPU", 0.0),
    }


def stop(temp_dir: str | None) -> None:
    """Disconnect (a joined cluster) or shut down (a private instance) and remove its files."""
    import ray

    try:
        if ray.is_initialized():
            ray.shutdown()
    finally:
        if temp_dir:
            shutil.rmtree(temp_dir, ignore_errors=True)

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
removed after `ray.shutdown()`, and registered as one of the run's temporaries, which cloudhpc
removes when a run it ended (Ctrl-C, SIGTERM, SIGHUP, --timeout) is over; a directory left when
cloudhpc itself was SIGKILLed is removed by the next run's start once its driver pid is gone.

`--ray-address HOST:PORT` is tried with a plain TCP connection first (CONNECT_TIMEOUT_S): Ray
retries an unreachable head for minutes before it gives up.
"""

from __future__ import annotations

import glob
import logging
import os
import shutil
import socket
import tempfile
from typing import Any

from ..context import register_temporary
from ..errors import CloudhpcError, EnvironmentFailure

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
    # removed by cloudhpc itself when the run ends, however it ends: on Ctrl-C, SIGTERM, SIGHUP
    # and --timeout this driver is killed with its job before it can remove it
    register_temporary(temp_dir)
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


CONNECT_TIMEOUT_S = 5.0  # for the head's GCS port to accept a connection
GCS_PORT = 6379  # Ray's default, for an address without a port
CLIENT_PORT = 10001  # ray:// (Ray Client)


def endpoint(address: str) -> tuple[str, int] | None:
    """(host, port) of a --ray-address ('host:port', 'host', 'ray://host:port'); None for 'auto'
    (Ray's own discovery)."""
    if address == "auto":
        return None
    scheme, sep, rest = address.partition("://")
    text = rest if sep else address
    host, colon, port = text.rpartition(":")
    if not colon or "]" in port:  # no port (an IPv6 literal's colons are inside brackets)
        host, port = text, str(CLIENT_PORT if sep else GCS_PORT)
    host = host.strip("[]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise CloudhpcError(f"--ray-address {address!r}: expected host:port (or auto)")
    return host, int(port)


def probe(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Fail within `timeout` seconds, saying what was tried, when nothing accepts a connection
    at `address`: Ray itself retries for minutes before it gives up on an unreachable head."""
    where = endpoint(address)
    if where is None:
        return
    host, port = where
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return
    except TimeoutError:
        why = f"no answer within {timeout:g} s"
    except socket.gaierror as e:
        why = f"cannot resolve {host} ({e.strerror})"
    except OSError as e:
        why = e.strerror or str(e)
    raise EnvironmentFailure(
        f"cannot join the Ray cluster at {address}: tried TCP {host} port {port}: {why}"
    )


def join(address: str, env_vars: dict[str, str]) -> None:
    """Connect to the running cluster at `address` ('auto': Ray's discovery)."""
    import ray

    probe(address)
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

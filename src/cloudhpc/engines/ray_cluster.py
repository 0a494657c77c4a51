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

Token authentication (Ray >= 2.52; `ray start --head` turns it on by default since 2.59): a
cluster started with RAY_AUTH_MODE=token accepts only clients that send its token, which Ray takes
from RAY_AUTH_TOKEN, else the file RAY_AUTH_TOKEN_PATH names, else ~/.ray/auth_token (where `ray
start` and `ray get-auth-token --generate` put it). A driver sends it only when RAY_AUTH_MODE=token
is set in its own environment; for an explicit address Ray never sets that itself. So before
`ray.init` one GCS call asks whether the cluster accepts the driver; if it wants a token and
RAY_AUTH_MODE is not set, the driver switches token mode on (as Ray does for a local cluster) with
the token from `--ray-token-file FILE` or Ray's sources, and asks again. A missing or refused token
is one line naming where the token was looked for, not Ray's "Failed to connect" after 20 s of
retries. (Token mode is not switched on for a cluster without authentication: its workers then
fail.) The record's engine_info says where the token came from, never the token.

The raylet's messages to the driver (a worker that died, memory pressure) arrive coloured on the
driver's stdout; they become plain `cloudhpc: ray: ...` lines, and a worker's death is left to the
engine, which says in one line what it did about it.
"""

from __future__ import annotations

import logging
import os
import re
import socket
from typing import Any

from ..context import note, register_temporary
from ..errors import CloudhpcError, EnvironmentFailure
from ..owned import make_dir, orphans, remove_dir

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
    """Remove the private-instance directories whose driver is gone (those cloudhpc made and
    recorded: owned.py, never one merely named like them); returns what was removed."""
    removed = []
    for made in orphans("ray"):
        if remove_dir(made):
            removed.append(made.path)
    return removed


def start_private(num_cpus: int, env_vars: dict[str, str]) -> str:
    """Start a private Ray instance for this job; returns its temporary directory."""
    import ray

    _quiet_ray()
    sweep_stale_dirs()
    temp_dir = make_dir("ray", parent=TEMP_ROOT, prefix=f"{TEMP_PREFIX}{os.getpid()}-").path
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
    route_raylet_messages()
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


TOKEN_FILE = "~/.ray/auth_token"  # Ray's default token file


def token_source(environ: dict[str, str] | None = None) -> str | None:
    """Where Ray will find a cluster token, in Ray's order of precedence (RAY_AUTH_TOKEN,
    RAY_AUTH_TOKEN_PATH, ~/.ray/auth_token), or None: words for the user and the record."""
    environ = os.environ if environ is None else environ
    if environ.get("RAY_AUTH_TOKEN", "").strip():
        return "RAY_AUTH_TOKEN"
    if environ.get("RAY_AUTH_TOKEN_PATH"):
        return f"RAY_AUTH_TOKEN_PATH={environ['RAY_AUTH_TOKEN_PATH']}"
    if os.path.isfile(os.path.expanduser(TOKEN_FILE)):
        return TOKEN_FILE
    return None


def auth_env(token_file: str | None) -> dict[str, str]:
    """For the driver's environment: --ray-token-file as Ray's RAY_AUTH_TOKEN_PATH (and
    RAY_AUTH_TOKEN emptied, which would take precedence). Never the token itself: the launch
    environment is recorded."""
    if not token_file:
        return {}
    return {"RAY_AUTH_TOKEN_PATH": os.path.abspath(token_file), "RAY_AUTH_TOKEN": ""}


def admit(address: str, timeout: float = CONNECT_TIMEOUT_S) -> str | None:
    """Make sure the cluster at `address` accepts this driver, within `timeout`: one GCS call
    without a token; if the cluster requires one, token mode is switched on for this process
    (as Ray does for a local cluster) and the call is repeated with the token from Ray's
    sources. Returns where the token came from (None: none needed, or RAY_AUTH_MODE set by the
    user and left alone); a missing or refused token is one EnvironmentFailure. Any other
    trouble is left to ray.init, which says what it says."""
    try:
        from ray._private.services import canonicalize_bootstrap_address_or_die
        from ray._raylet import GcsClient
        from ray.exceptions import AuthenticationError
    except ImportError:  # another Ray version
        return None

    gcs = canonicalize_bootstrap_address_or_die(address)
    _check_rewritten(address, gcs, timeout)

    def accepted() -> bool:
        try:
            GcsClient(address=gcs).internal_kv_get(b"probe", b"cloudhpc", timeout=timeout)
        except AuthenticationError:
            return False
        return True

    user_mode = os.environ.get("RAY_AUTH_MODE")
    try:
        if accepted():
            return token_source() if (user_mode or "").lower() == "token" else None
        source = token_source()
        if user_mode is None and source is not None:
            _enable_token_mode()
            if accepted():
                return source
        if (os.environ.get("RAY_AUTH_MODE") or "").lower() != "token" or source is None:
            why = (
                "no token was found (RAY_AUTH_TOKEN and RAY_AUTH_TOKEN_PATH are not set and "
                f"{TOKEN_FILE} does not exist)"
                if source is None
                else f"RAY_AUTH_MODE={user_mode} sends no token"
            )
        else:
            why = f"it refused the token from {source}"
    except EnvironmentFailure:
        raise
    except Exception:
        return None
    raise EnvironmentFailure(
        f"cannot join the Ray cluster at {address}: it requires token authentication and {why}; "
        "give its token with --ray-token-file FILE or RAY_AUTH_TOKEN (`ray get-auth-token` on "
        "the head node prints it)"
    )


def _check_rewritten(address: str, gcs: str, timeout: float) -> None:
    """Ray replaces a loopback --ray-address with this machine's own address (so that workers on
    other machines could reach it); a head that listens on loopback only is then out of reach
    and Ray retries for minutes. Say so instead."""
    given, used = endpoint(address), endpoint(gcs)
    if given is None or used is None or given[0] == used[0]:
        return
    try:
        with socket.create_connection(used, timeout=timeout):
            return
    except OSError as e:
        why = "no answer" if isinstance(e, TimeoutError) else e.strerror or str(e)
    raise EnvironmentFailure(
        f"cannot join the Ray cluster at {address}: Ray connects to {gcs} instead (it replaces "
        f"a loopback address with this machine's), where {why}: the head listens on loopback "
        "only; start it with this machine's --node-ip-address, or set "
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 for cloudhpc to keep the loopback address"
    )


def _enable_token_mode() -> None:
    """RAY_AUTH_MODE=token for this process from now on (Ray's own switch, which also reloads
    its configuration), and the token read again."""
    from ray._private.authentication.authentication_token_setup import _enable_token_auth
    from ray._raylet import AuthenticationTokenLoader

    _enable_token_auth()
    AuthenticationTokenLoader.instance().reset_cache()


def join(address: str, env_vars: dict[str, str]) -> str | None:
    """Connect to the running cluster at `address` ('auto': Ray's discovery); returns where the
    token came from (None: none sent)."""
    import ray

    probe(address)
    _quiet_ray()
    token = admit(address)
    try:
        ray.init(
            address=address,
            logging_level=logging.ERROR,
            log_to_driver=False,
            runtime_env={"env_vars": env_vars},
        )
    except (ConnectionError, RuntimeError, ValueError) as e:
        text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        cause = e.__cause__  # Ray's "Failed to connect" hides why
        if cause is not None and str(cause).strip():
            text += f" ({str(cause).strip().splitlines()[0]})"
        raise CloudhpcError(f"cannot join the Ray cluster at {address}: {text}") from None
    route_raylet_messages()
    return token


# A raylet message about a worker's death: the engine reports what it did about it instead.
_WORKER_DEATH = re.compile(r"worker died|was killed|killed due to memory|out of memory|OOM", re.I)


def route_raylet_messages() -> None:
    """The raylet's messages to the driver as plain `cloudhpc: ray: ...` lines (its first
    sentence), without the ones about workers dying, which the engine reports itself. Ray prints
    them from its error-listener thread through worker.print_to_stdstream, coloured; a Ray
    without that function prints them its own way."""
    try:
        from ray._private import worker as ray_worker
    except ImportError:
        return
    original = getattr(ray_worker, "print_to_stdstream", None)
    if original is None or getattr(original, "_cloudhpc", False):
        return

    def routed(data: dict, ignore_prefix: bool) -> None:
        if data.get("pid") != "raylet":
            return original(data, ignore_prefix)
        for message in data.get("lines") or []:
            text = " ".join(str(message).split())
            if text and not _WORKER_DEATH.search(text):
                note(f"ray: {text.split('. ')[0].rstrip('.')}")

    routed._cloudhpc = True  # type: ignore[attr-defined]
    ray_worker.print_to_stdstream = routed


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
            remove_dir(temp_dir)

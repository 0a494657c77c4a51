"""Where clusters are remembered between commands, and the lock that serialises changes.

The state root is `$CLOUDHPC_CLUSTERS`, else `$XDG_STATE_HOME/cloudhpc/clusters`, else
`~/.local/state/cloudhpc/clusters`. Cluster NAME keeps there:

    NAME/cluster.json   its description (model.Cluster), written before anything is created
    NAME/NAME.hosts     the hosts file for --hosts
    NAME/hook           Hydra's launcher hook for this cluster
    NAME/scratch/HOST/  each host's local disk (unless --scratch put them elsewhere)
    NAME/volumes/       the manifests of the volumes on its hosts (volumes/manage.py)

NAME and each host's scratch directory are recorded as cloudhpc's (owned.py) when made; `down`
removes those entries alone, never a directory it did not make.

`.lock` (flock) is held while a cluster is created or removed, so two `cluster up NAME` cannot
both create NAME.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .. import owned
from ..atomic import write_text
from ..errors import CloudhpcError
from .hook import TAG_VAR
from .model import Cluster, check_name

ENV_VAR = "CLOUDHPC_CLUSTERS"


def state_root() -> Path:
    explicit = os.environ.get(ENV_VAR)
    if explicit:
        return Path(explicit).expanduser().absolute()
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local/state")
    return Path(base).absolute() / "cloudhpc" / "clusters"


def cluster_dir(name: str, root: Path | None = None) -> Path:
    return (root or state_root()) / check_name(name)


@contextmanager
def locked(root: Path | None = None) -> Iterator[Path]:
    root = root or state_root()
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd = os.open(root / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise CloudhpcError(
            f"cluster state directory {root} is not writable: {e.strerror}"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield root
    finally:
        os.close(fd)  # releases the lock


def save(cluster: Cluster) -> None:
    Path(cluster.state_dir).mkdir(parents=True, exist_ok=True)
    write_text(cluster.state_file, cluster.to_json())


def load(name: str, root: Path | None = None) -> Cluster | None:
    path = cluster_dir(name, root) / "cluster.json"
    try:
        return Cluster.from_json(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, KeyError) as e:
        raise CloudhpcError(
            f"cluster state {path} is damaged ({e}); remove that directory"
        ) from None


def names(root: Path | None = None) -> list[str]:
    root = root or state_root()
    try:
        entries = sorted(root.iterdir())
    except OSError:
        return []
    return [p.name for p in entries if (p / "cluster.json").is_file()]


def all_clusters(root: Path | None = None) -> list[Cluster]:
    found = []
    for name in names(root):
        try:
            c = load(name, root)
        except CloudhpcError:
            continue
        if c is not None:
            found.append(c)
    return found


def host_tag(cluster: Cluster) -> str | None:
    """The VAR=TOKEN entry every process cloudhpc starts on the cluster's hosts carries (the
    token of its state directory, owned.py), or None if that directory is not proved ours."""
    made = owned.find(cluster.state_dir, "cluster")
    return owned.token_entry(made, TAG_VAR) if made is not None else None

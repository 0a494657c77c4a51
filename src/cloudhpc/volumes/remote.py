"""Volumes on real machines: the hosts of a hosts file, reached over ssh.

The same volume as on an emulated cluster (volumes.py: layouts, manifest, CRC-32s, data
services), with the network in between: each host's bytes are laid out in a local staging
directory (sparse for stripes), then sent with `tar -S` through ssh into a hidden directory on
the host and renamed into place once every host has its part (tar and ssh are on every machine;
rsync need not be). Each host keeps the volume in REMOTE_DIR/NAME and runs its data service
(`python -m cloudhpc.volumes.dataserve serve REMOTE_DIR HOST PORT`, started over ssh with the
same Python path as here, as Hydra assumes for its proxies), which the ranks and this machine
reach by the host's name. The manifest is kept on this machine, in $CLOUDHPC_VOLUMES (else
STATE/cloudhpc/volumes, beside the clusters' state).

A failed or interrupted create removes the hidden directories and any part already renamed. While
it runs, a note beside the manifests names its hosts' hidden directories, so that the next volume
command removes them if the create was SIGKILLed (sweep_partials).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .. import signals
from ..atomic import write_json
from ..cluster import state
from ..errors import CloudhpcError
from ..job import Host
from . import dataserve
from .partial import orphaned, partial_name

ENV_VAR = "CLOUDHPC_VOLUMES"
DEFAULT_DIR = "/var/tmp/cloudhpc-volumes"


def volumes_root() -> Path:
    explicit = os.environ.get(ENV_VAR)
    if explicit:
        return Path(explicit).expanduser().absolute()
    return state.state_root().parent / "volumes"


def ssh(host: str, command: str, *, stdin=None, check: bool = True) -> subprocess.CompletedProcess:
    """Run a shell command on `host` (BatchMode: no password prompts)."""
    argv = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", host, command]
    try:
        r = subprocess.run(argv, stdin=stdin, capture_output=True, timeout=3600)
    except FileNotFoundError:
        raise CloudhpcError("volumes on real hosts need ssh, which is not installed") from None
    if check and r.returncode != 0:
        why = (r.stderr.decode(errors="replace").strip().splitlines() or ["ssh failed"])[-1]
        raise CloudhpcError(f"host {host}: {why}")
    return r


def host_entries(hosts: Sequence[Host], remote_dir: str) -> list[dict[str, Any]]:
    if not os.path.isabs(remote_dir) or not set(remote_dir) <= dataserve._NAME_OK | {"/"}:
        raise CloudhpcError(f"--remote-dir must be an absolute plain path, not {remote_dir!r}")
    seen: dict[str, dict] = {}
    for h in hosts:
        seen.setdefault(
            h.name,
            {
                "name": h.name,
                "address": h.name,
                "rack": h.rack,
                "root": remote_dir,
                "scratch": remote_dir,
            },  # fmt: skip
        )
    return list(seen.values())


def probe(hosts: Sequence[dict], port: int) -> dict[str, str]:
    answers = dataserve.probe([f"http://{h['address']}:{port}" for h in hosts])
    return {h["name"]: a for h, a in zip(hosts, answers.values(), strict=True)}


def start_services(hosts: Sequence[dict], port: int, wait_s: float = 60.0) -> None:
    """Start the data service of each host whose service does not answer; wait for all."""
    todo = [h for h, a in zip(hosts, probe(hosts, port).values(), strict=True) if a != "ok"]
    for h in todo:
        root = shlex.quote(h["root"])
        ssh(h["name"], f"mkdir -p {root} && nohup {shlex.quote(sys.executable)} -m "
            f"cloudhpc.volumes.dataserve serve {root} {shlex.quote(h['name'])} {port} "
            f"> {root}/.dataserve.log 2>&1 < /dev/null &")  # fmt: skip
    deadline = time.monotonic() + wait_s
    while todo:
        answers = probe(todo, port)
        if all(a == "ok" for a in answers.values()):
            return
        if time.monotonic() > deadline:
            bad = next(n for n, a in answers.items() if a != "ok")
            raise CloudhpcError(f"the data service of host {bad} did not start ({answers[bad]})")
        time.sleep(0.2)


def stop_idle_services(hosts: Sequence[dict]) -> None:
    """Stop the service of each host whose REMOTE_DIR holds no volume any more."""
    code = (
        "import json, os, signal, sys\n"
        "root = sys.argv[1]\n"
        "if not any(not n.startswith('.') for n in os.listdir(root)):\n"
        "    try:\n"
        "        os.kill(json.load(open(os.path.join(root, '.dataserve.json')))['pid'], 15)\n"
        "    except (OSError, ValueError, KeyError):\n"
        "        pass\n"
    )
    for h in hosts:
        ssh(h["name"], f"{shlex.quote(sys.executable)} -c {shlex.quote(code)} "
            f"{shlex.quote(h['root'])}", check=False)  # fmt: skip


def free_bytes(host: dict) -> int:
    r = ssh(host["name"], f"mkdir -p {shlex.quote(host['root'])} && df -Pk {host['root']}")
    return int(r.stdout.decode().splitlines()[-1].split()[3]) * 1024


def send(stage: Path, host: dict, partial: str) -> None:
    """The staged part of `host` into REMOTE_DIR/partial (tar -S keeps stripes sparse)."""
    target = shlex.quote(f"{host['root']}/{partial}")
    tar = subprocess.Popen(["tar", "-C", str(stage), "-cSf", "-", "."], stdout=subprocess.PIPE)
    try:
        ssh(host["name"], f"mkdir -p {target} && tar -C {target} -xSf - && sync", stdin=tar.stdout)
    finally:
        tar.stdout.close()
        tar.wait()
    if tar.returncode != 0:
        raise CloudhpcError(f"could not pack the part of host {host['name']}")


def create(
    name: str,
    hosts: Sequence[Host],
    layout: str,
    sources: Sequence[tuple[str, str, int]],
    plan_chunks: Callable[[list[dict]], list[dict]],
    copy: Callable[[dict, dict[str, Path]], str],
    manifest_of: Callable[[list[dict], list[dict]], dict],
    *,
    remote_dir: str = DEFAULT_DIR,
    port: int = dataserve.PORT,
) -> dict[str, Any]:
    """Create volume `name` on real `hosts`; volumes.create hands over its layout functions."""
    entries_hosts = host_entries(hosts, remote_dir)
    path = volumes_root() / f"{name}.json"
    partial, placed = partial_name(name), []
    stage = Path(tempfile.mkdtemp(prefix=f"cloudhpc-volume-{name}-"))
    # what a SIGKILL would leave, for the next volume command to remove (sweep_partials)
    note = volumes_root() / f"{partial}.json"
    try:
        note.parent.mkdir(parents=True, exist_ok=True)
        write_json(note, {"partial": partial, "stage": str(stage), "hosts": entries_hosts})
        start_services(entries_hosts, port)
        entries = plan_chunks(entries_hosts)
        local = {h["name"]: stage / h["name"] for h in entries_hosts}
        for d in local.values():
            d.mkdir()
        for e in entries:
            e["crc32"] = copy(e, local)
        for h in entries_hosts:
            send(local[h["name"]], h, partial)
        with signals.held():
            for h in entries_hosts:
                root = h["root"]
                ssh(h["name"], f"mv {shlex.quote(f'{root}/{partial}')} "
                    f"{shlex.quote(f'{root}/{name}')}")  # fmt: skip
                placed.append(h)
            manifest = manifest_of(entries_hosts, entries)
            manifest["port"] = port
            path.parent.mkdir(parents=True, exist_ok=True)
            write_json(path, manifest, fsync=True, replace=False)
        return manifest
    except BaseException:
        with signals.held():
            for h in entries_hosts:
                root = h["root"]
                gone = [f"{root}/{partial}"] + ([f"{root}/{name}"] if h in placed else [])
                ssh(h["name"], "rm -rf " + " ".join(map(shlex.quote, gone)), check=False)
            stop_idle_services(entries_hosts)
        raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        note.unlink(missing_ok=True)


def sweep_partials() -> list[str]:
    """Remove what SIGKILLed creates on real machines left (their hosts' hidden directories,
    named in a note beside the manifests, and the local staging directory); returns the
    hosts' directories removed."""
    removed = []
    for note in volumes_root().glob(".*.partial-*.json"):
        if not orphaned(note.name.removesuffix(".json")):
            continue
        try:
            left = json.loads(note.read_text())
            partial, hosts = left["partial"], left["hosts"]
        except (OSError, ValueError, KeyError, TypeError):
            note.unlink(missing_ok=True)
            continue
        for h in hosts:
            target = f"{h['root']}/{partial}"
            ssh(h["name"], f"rm -rf {shlex.quote(target)}", check=False)
            removed.append(f"{h['name']}:{target}")
        stop_idle_services(hosts)
        shutil.rmtree(left.get("stage") or "/nonexistent", ignore_errors=True)
        note.unlink(missing_ok=True)
    return removed


def remove(manifest: dict[str, Any]) -> None:
    with signals.held():
        (volumes_root() / f"{manifest['name']}.json").unlink(missing_ok=True)
        for h in manifest["hosts"]:
            target = shlex.quote(f"{h['root']}/{manifest['name']}")
            ssh(h["name"], f"rm -rf {target}", check=False)
        stop_idle_services(manifest["hosts"])

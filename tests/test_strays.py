"""procs.StrayWatch: what a job's ranks left running, seen once the ranks have ended, however
the launcher's proxy treated them (kept as zombies, or reaped at once)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import uuid

from cloudhpc.procs import StrayWatch, tagged

# root -> "fakeproxy" (comm set by prctl) -> rank -> background child carrying the token.
# The rank waits for GO, starts its child and exits; the proxy reaps it at once (as Hydra's
# proxy sometimes does) and lives on, childless, as a proxy waiting for its output would.
TREE = textwrap.dedent(
    """
    import ctypes, os, subprocess, sys, time
    go = sys.argv[1]
    pid = os.fork()
    if pid == 0:  # the proxy
        ctypes.CDLL(None).prctl(15, b"fakeproxy", 0, 0, 0)  # PR_SET_NAME
        rank = os.fork()
        if rank == 0:  # the rank (fork copied the proxy's name)
            ctypes.CDLL(None).prctl(15, b"fakerank", 0, 0, 0)
            while not os.path.exists(go):
                time.sleep(0.02)
            subprocess.Popen(["sleep", "3000"])
            os._exit(0)
        os.waitpid(rank, 0)
        time.sleep(3000)
    os.waitpid(pid, 0)
    """
)


def _ranks_named(root: int, name: str) -> set[int]:
    from cloudhpc.procs import _comm, descendants

    return {pid for pid in descendants(root) if _comm(pid) == name}


def _child_sleeps(token: str) -> set[int]:
    return {p for p in tagged(token) if open(f"/proc/{p}/comm").read().strip() == "sleep"}


def test_a_reaped_ranks_background_child_is_found(tmp_path):
    token = f"CLOUDHPC_TEST_TOKEN={uuid.uuid4().hex}"
    name, value = token.split("=", 1)
    go = tmp_path / "go"
    root = subprocess.Popen([sys.executable, "-c", TREE, str(go)], env={**os.environ, name: value})
    try:
        watch = StrayWatch(root.pid, token, ["fakeproxy"])
        deadline = time.monotonic() + 30
        while not _ranks_named(root.pid, "fakerank") and time.monotonic() < deadline:
            time.sleep(0.05)  # until the rank runs
        assert watch.poll() == set()  # the rank still runs: nothing is a stray yet
        go.touch()
        deadline, left = time.monotonic() + 30, set()
        while not left and time.monotonic() < deadline:
            left = watch.poll()
            time.sleep(0.05)
        assert left and left == _child_sleeps(token)
    finally:
        for pid in tagged(token):  # the tree and the child
            os.kill(pid, 9)
        root.wait()


def test_nothing_is_a_stray_before_the_ranks_start():
    token = f"CLOUDHPC_TEST_TOKEN={uuid.uuid4().hex}"
    root = subprocess.Popen(["sleep", "30"])
    try:
        assert StrayWatch(root.pid, token, ["fakeproxy"]).poll() == set()
    finally:
        root.kill()
        root.wait()


def test_ranks_that_ended_before_the_first_look_still_release_their_child(tmp_path):
    """A short job: its ranks ran and were reaped between two looks of the watch."""
    token = f"CLOUDHPC_TEST_TOKEN={uuid.uuid4().hex}"
    name, value = token.split("=", 1)
    go = tmp_path / "go"
    go.touch()  # the rank does not wait
    root = subprocess.Popen([sys.executable, "-c", TREE, str(go)], env={**os.environ, name: value})
    try:
        deadline = time.monotonic() + 30
        while not _child_sleeps(token) and time.monotonic() < deadline:
            time.sleep(0.05)
        while _ranks_named(root.pid, "fakerank") and time.monotonic() < deadline:
            time.sleep(0.05)  # reaped by the proxy
        assert StrayWatch(root.pid, token, ["fakeproxy"]).poll() == _child_sleeps(token) != set()
    finally:
        for pid in tagged(token):
            os.kill(pid, 9)
        root.wait()


def test_a_single_rank_root_keeps_its_workers_until_it_ends():
    """The serial engine's or Ray's driver is the rank itself: the Ray workers it has started
    carry the token outside its tree by design and are no strays while it runs."""
    token = f"CLOUDHPC_TEST_TOKEN={uuid.uuid4().hex}"
    name, value = token.split("=", 1)
    env = {**os.environ, name: value}
    worker = subprocess.Popen(["sleep", "3000"], env=env)  # outside the driver's tree
    driver = subprocess.Popen(["sleep", "3000"], env=env)
    try:
        watch = StrayWatch(driver.pid, token, ["fakeproxy"], root_is_rank=True)
        assert watch.poll() == set()
        driver.kill()
        driver.wait()
        assert watch.poll() == {worker.pid}
    finally:
        for proc in (worker, driver):
            proc.kill()
            proc.wait()

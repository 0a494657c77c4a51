"""Issue 31, rule 1: cloudhpc removes only what it made and kills only what it started.

A directory is cloudhpc's when its marker file holds a random token that cloudhpc's own state
records for that very directory (cloudhpc.owned); a file named `owner`, `slurm.conf` or a marker
with any other token proves nothing. Processes are ended by the PIDs cloudhpc recorded (with
their start times), the trees below them and a random token of cloudhpc's in their environment,
never by a variable a user's shell carries (SLURM_CONF after `eval "$(cloudhpc slurm up)"`).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import BIN, needs_slurm, run_cli

from cloudhpc import owned
from cloudhpc.procs import start_time


@pytest.fixture(autouse=True)
def own_state(tmp_path, monkeypatch):
    """cloudhpc's state (its registry of what it made) private to each test."""
    state = tmp_path / "state"
    monkeypatch.setenv(owned.STATE_VAR, str(state))
    return state


def _tree(d: Path) -> dict[str, str]:
    return {
        str(p.relative_to(d)): p.read_text() if p.is_file() else "<dir>"
        for p in sorted(d.rglob("*"))
    }


def _dead_pid() -> tuple[int, str]:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    started = start_time(p.pid)
    p.wait()
    return p.pid, started


# ---- the proof ---------------------------------------------------------------------------------


def test_a_made_directory_is_proved_by_its_token_and_nothing_else(tmp_path):
    made = owned.make_dir("test", parent=tmp_path, prefix="x-")
    assert owned.find(made.path) == made
    mark = (Path(made.path) / owned.MARK).read_text()
    forms = {}
    # a marker with a token cloudhpc never recorded
    d = forms["unknown token"] = tmp_path / "unknown"
    d.mkdir()
    (d / owned.MARK).write_text(secrets.token_hex(16))
    # a real token copied into another directory (the state records another path)
    d = forms["copied token"] = tmp_path / "copied"
    d.mkdir()
    (d / owned.MARK).write_text(mark)
    # a marker that is a symbolic link to the real one
    d = forms["linked marker"] = tmp_path / "linked"
    d.mkdir()
    (d / owned.MARK).symlink_to(Path(made.path) / owned.MARK)
    # a symbolic link to the made directory itself
    forms["link to it"] = tmp_path / "link"
    forms["link to it"].symlink_to(made.path)
    # a path, not a token; a directory as the marker; the old `owner` file of a dead process
    d = forms["path as token"] = tmp_path / "pathtoken"
    d.mkdir()
    (d / owned.MARK).write_text("../../etc")
    d = forms["marker is a directory"] = tmp_path / "markdir"
    (d / owned.MARK).mkdir(parents=True)
    d = forms["owner file"] = tmp_path / "cloudhpc-run-old"
    d.mkdir()
    (d / "owner").write_text(" ".join(map(str, _dead_pid())))
    for what, d in forms.items():
        if not d.is_symlink():
            (d / "keep.txt").write_text(what)
        before = _tree(d)
        assert owned.find(d) is None, what
        assert owned.remove_dir(d) is False, what
        assert d.exists() and _tree(d) == before, what
    assert owned.find(made.path) == made


def test_a_made_directory_is_found_by_any_spelling_of_its_parent(tmp_path, monkeypatch):
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    monkeypatch.chdir(tmp_path)
    made = owned.make_dir("test", path="alias/x")  # relative, through a linked parent
    for spelling in ("alias/x", "real/x", str(tmp_path / "real" / "." / "x"), "real/../alias/x"):
        assert owned.find(spelling) == made, spelling
    assert owned.remove_dir("real/x") and not (tmp_path / "real" / "x").exists()


def test_a_directory_replaced_under_the_same_name_is_not_the_one_made(tmp_path):
    made = owned.make_dir("test", parent=tmp_path, prefix="x-")
    aside = tmp_path / "aside"
    os.rename(made.path, aside)
    os.mkdir(made.path)  # another directory where it was, the marker copied into it
    (Path(made.path) / owned.MARK).write_text((aside / owned.MARK).read_text())
    (Path(made.path) / "theirs.txt").write_text("data")
    if os.stat(made.path).st_ino == os.stat(aside).st_ino:
        pytest.skip("the file system gave the new directory the old one's inode")
    assert owned.find(made.path) is None
    assert not owned.remove_dir(made.path)
    assert (Path(made.path) / "theirs.txt").read_text() == "data"


def test_removal_takes_only_the_parts_it_made(tmp_path):
    user = tmp_path / "mine"
    user.mkdir()  # an empty directory of the user's, lent to cloudhpc
    made = owned.make_dir("test", path=user, whole=False)
    assert not made.made_dir
    owned.add_part(made, "conf")
    (user / "conf").write_text("cloudhpc's")
    owned.add_part(made, "log")
    (user / "log").mkdir()
    (user / "log" / "a.log").write_text("x")
    (user / "notes.txt").write_text("the user's")  # written meanwhile
    assert owned.remove_dir(user)
    assert _tree(user) == {"notes.txt": "the user's"}
    # one it made itself is removed whole once only its own parts are left...
    made = owned.make_dir("test", path=tmp_path / "new", whole=False)
    owned.add_part(made, "conf")
    (tmp_path / "new" / "conf").write_text("x")
    assert owned.remove_dir(made.path) and not (tmp_path / "new").exists()
    # ...and kept, with the user's file, otherwise
    made = owned.make_dir("test", path=tmp_path / "new2", whole=False)
    (tmp_path / "new2" / "theirs").write_text("y")
    assert owned.remove_dir(made.path)
    assert _tree(tmp_path / "new2") == {"theirs": "y"}
    assert owned.find(tmp_path / "new2") is None  # forgotten: never cloudhpc's again


def test_a_non_empty_directory_is_never_taken(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    (d / "slurm.conf").write_text("mine")
    with pytest.raises(owned.CloudhpcError, match="not empty"):
        owned.make_dir("test", path=d, whole=False)
    assert _tree(d) == {"slurm.conf": "mine"}


def test_orphans_are_the_made_directories_of_dead_owners(tmp_path):
    pid, started = _dead_pid()
    dead = owned.make_dir("test", parent=tmp_path, prefix="a-", owner=pid)
    alive = owned.make_dir("test", parent=tmp_path, prefix="b-")
    kept = owned.make_dir("test", parent=tmp_path, prefix="c-", owner=None)
    other = owned.make_dir("other", parent=tmp_path, prefix="d-", owner=pid)
    assert [m.path for m in owned.orphans("test")] == [dead.path]
    assert {alive.path, kept.path, other.path} <= {str(p) for p in tmp_path.iterdir()}


def test_the_run_sweep_removes_only_what_a_run_made(tmp_path):
    """A user's directory named like a run's control directory, with the old `owner` file of a
    dead process, is not a run's: the sweep leaves it."""
    from cloudhpc.launch.runner import CONTROL_DIR_PREFIX, sweep_orphaned_runs

    pid, started = _dead_pid()
    fake = tmp_path / f"{CONTROL_DIR_PREFIX}mine"
    fake.mkdir()
    (fake / "owner").write_text(f"{pid} {started}")
    (fake / "results.csv").write_text("precious")
    real = owned.make_dir("run", parent=tmp_path, prefix=CONTROL_DIR_PREFIX, owner=pid)
    assert sweep_orphaned_runs() == [real.path]
    assert not Path(real.path).exists()
    assert _tree(fake) == {"owner": f"{pid} {started}", "results.csv": "precious"}


def test_processes_are_ended_by_record_and_token_never_by_a_users_variable(tmp_path):
    made = owned.make_dir("test", parent=tmp_path, prefix="p-")
    var = "CLOUDHPC_TEST_MADE"
    ours = subprocess.Popen(
        ["sh", "-c", "sleep 300 & wait"], env={**os.environ, var: made.token},
        start_new_session=True,
    )  # fmt: skip
    recorded = subprocess.Popen(["sleep", "300"], start_new_session=True)
    owned.add_process(made, recorded.pid, "sleeper")
    path_var = subprocess.Popen(  # the directory's path in a variable: a user's, not a token
        ["sleep", "300"], env={**os.environ, var: made.path}, start_new_session=True
    )
    try:
        time.sleep(0.2)
        children = _children(ours.pid)
        assert children
        owned.end_processes(made, var)
        for p in (ours, recorded):
            assert p.wait(timeout=10) == -9
        assert not any(_not_zombie(c) for c in children)
        assert path_var.poll() is None
    finally:
        for p in (ours, recorded, path_var):
            p.kill()
            p.wait()


def test_a_recorded_pid_reused_by_another_process_is_not_killed(tmp_path):
    made = owned.make_dir("test", parent=tmp_path, prefix="p-")
    other = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        owned.add_process(made, other.pid, "sleeper")
        m = owned.find(made.path)
        m.processes["sleeper"] = [other.pid, str(int(start_time(other.pid)) - 5)]  # another's
        owned._save(m)
        owned.end_processes(m)
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_a_recorded_process_that_has_ended_is_not_live_though_not_reaped_yet(tmp_path):
    """A daemon's zombie waits for init to reap it (here a second or more): it has ended, and
    whoever waits for it to end (local.stop, per daemon) need not wait for the reaping."""
    made = owned.make_dir("test", parent=tmp_path, prefix="p-")
    child = subprocess.Popen(["sleep", "300"])
    try:
        owned.add_process(made, child.pid, "daemon")
        assert owned.live_processes(made) == {"daemon": child.pid}
        child.kill()
        deadline = time.monotonic() + 30
        while _not_zombie(child.pid) and time.monotonic() < deadline:
            time.sleep(0.01)  # dead, and left unreaped (a zombie) until wait() below
        assert Path(f"/proc/{child.pid}").exists()
        assert owned.live_processes(made) == {}
    finally:
        child.kill()
        child.wait()


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(x) for x in text.split()]


# ---- Slurm ---------------------------------------------------------------------------------------


def _not_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@needs_slurm
def test_slurm_up_and_down_leave_a_users_directory_alone(tmp_path, own_state):
    forms = {
        "slurm.conf": "# my own cluster's\nClusterName=mine\n",
        "owner": "none",
        owned.MARK: secrets.token_hex(16),
        "state/x": "my state",
    }
    env = {owned.STATE_VAR: str(own_state)}
    for i, (name, text) in enumerate(forms.items()):
        d = Path(f"/tmp/cloudhpc-i31-user-{os.getpid()}-{i}")
        try:
            (d / name).parent.mkdir(parents=True)
            (d / name).write_text(text)
            before = _tree(d)
            for action in ("up", "down"):
                r = run_cli("slurm", action, "--dir", str(d), env=env)
                assert r.returncode == 2, (name, action, r.stderr)
                assert len(r.stderr.strip().splitlines()) == 1, r.stderr
                assert _tree(d) == before, (name, action)
        finally:
            subprocess.run(["rm", "-rf", str(d)], check=False)


@needs_slurm
def test_slurm_down_in_a_users_script_kills_neither_it_nor_its_children(tmp_path, own_state):
    """The README's `eval "$(cloudhpc slurm up)"`, then a script with a background job of its
    own calls `slurm down`: the daemons and the jobs' tasks end, the script and its child do
    not; the user's file written into the directory stays, with the directory."""
    d = Path(f"/tmp/cloudhpc-i31-up-{os.getpid()}")
    d.mkdir()  # an empty directory of the user's
    env = {**os.environ, owned.STATE_VAR: str(own_state), "PATH": f"{BIN}:{os.environ['PATH']}"}
    marker = f"{300 + secrets.randbelow(1000)}.{secrets.randbelow(1000)}"
    script = tmp_path / "script.sh"
    script.write_text(
        f"""set -e
eval "$(cloudhpc slurm up --dir {d})"
echo notes > {d}/notes.txt
sbatch -Q -o /dev/null --wrap 'exec sleep {marker}' > /dev/null
for i in $(seq 100); do
  [ "$(squeue -h -o %T)" = RUNNING ] && break; sleep 0.2
done
CLOUDHPC_SLURM_INSTANCE={d} sleep 301 > /dev/null 2>&1 &
echo $! > {tmp_path}/child.pid
cloudhpc slurm down --dir {d}
echo alive
"""
    )
    r = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=240)
    try:
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "alive"
        child = int((tmp_path / "child.pid").read_text())
        assert _not_zombie(child)  # the script's own child lives on
        assert _tree(d) == {"notes.txt": "notes\n"}
        tasks = [p for p in os.listdir("/proc") if p.isdigit() and _cmd(p) == f"sleep {marker}"]
        assert not tasks  # the job's task went with its Slurm
    finally:
        subprocess.run(["rm", "-rf", str(d)], check=False)
        try:
            os.kill(int((tmp_path / "child.pid").read_text()), 9)
        except (OSError, ValueError):
            pass


def _cmd(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


# ---- the emulated cluster --------------------------------------------------------------------


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")
def test_cluster_up_never_takes_a_users_directory(tmp_path):
    """A cluster's state directory or a host's scratch directory that exists with files in it
    is refused, untouched; `cluster down` of a cluster whose state cloudhpc did not make
    removes none of its files."""
    state = tmp_path / "clusters"
    name = f"i31o{os.getpid() % 10000}"
    (state / name).mkdir(parents=True)
    (state / name / "notes.txt").write_text("mine")
    env = {"CLOUDHPC_CLUSTERS": str(state)}
    r = run_cli("cluster", "up", name, "--hosts", "1", env=env)
    assert r.returncode == 2 and "not empty" in r.stderr, r.stderr
    assert _tree(state / name) == {"notes.txt": "mine"}
    # a hand-made cluster.json: `down` leaves it and says so
    from cloudhpc.cluster import manage

    c = manage.plan(name, 1, root=state)
    (state / name / "cluster.json").write_text(c.to_json())
    before = _tree(state / name)
    r = run_cli("cluster", "down", name, env=env)
    assert r.returncode == 2 and "not made by cloudhpc" in r.stderr, r.stderr
    assert _tree(state / name) == before


def test_a_home_where_no_state_can_be_kept_falls_back_to_a_private_directory(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.delenv(owned.STATE_VAR)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.setenv("HOME", "/proc/no-home-here")  # nothing can be made under it
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    made = owned.make_dir("test", parent=tmp_path, prefix="x-")
    private = tmp_path / f"cloudhpc-state-{os.getuid()}"
    assert (private / "made" / f"{made.token}.json").is_file()
    assert owned.find(made.path) == made and owned.remove_dir(made)
    # a fallback directory others may write into is never trusted: nothing is recorded there
    private.chmod(0o777)
    with pytest.raises(owned.CloudhpcError, match="cannot record"):
        owned.make_dir("test", parent=tmp_path, prefix="y-")

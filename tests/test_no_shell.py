"""Issue 31, rule 2: nothing a user writes becomes shell, and names shown are data.

Every value of every --submit path (`--account`, `--partition`, `--time`, `files --cmd`, the
directory it is submitted from, a campaign's name, its workloads' names and its matrix values)
is fed a newline, `$()`, backticks, `;`, quotes, a backslash-newline and terminal escapes: either
it is refused (one line, exit 2) or the batch script holds it as data. The scripts are run with
`exec` replaced by a function that writes its argv down, and a marker file must not appear.
Names with rich markup (`[/]`, `[red]`) and ESC are printed as they are, escaped, by every
command that shows them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import cli_in_process, run_cli

from cloudhpc.launch import script as batch_script
from cloudhpc.launch.script import SBATCH_OPTIONS
from cloudhpc.visible import visible

ESC = "\x1b"


def forms(marker: Path) -> list[str]:
    m = str(marker)
    return [
        f"x\ntouch {m}",
        f"x\n#SBATCH --wrap=touch {m}",
        f"x\r\ntouch {m}",
        f"$(touch {m})",
        f"`touch {m}`",
        f"x; touch {m}",
        f"x' ; touch {m} ; '",
        f'x" ; touch {m} ; "',
        f"x\\\ntouch {m}",
        f"x{ESC}]0;t\x07{ESC}[31m\ntouch {m}",
        f"x\u2028touch {m}\u202e",
        f"x # y\ttouch {m}",
    ]


_cli = cli_in_process

_SBATCH = re.compile(r"#SBATCH --([a-z-]+)(?:=(.*))?")


def assert_safe(text: str, cwd: Path, marker: Path) -> list[str]:
    """The script's head is comments and known #SBATCH options only; run with `exec` as a
    function, nothing but that function runs (no marker). Returns the argv it would exec."""
    head, _, _ = text.partition("\nexport ")
    for line in head.splitlines()[1:]:
        if line and not line.startswith("# ") and line != "#":
            m = _SBATCH.fullmatch(line)
            assert m and m.group(1) in SBATCH_OPTIONS, line
            kind = SBATCH_OPTIONS[m.group(1)]
            assert (m.group(2) is None) == (kind is None), line
    assert ESC not in head and "\r" not in head
    path = cwd / "job-under-test.sh"
    path.write_text(text)
    args = cwd / "argv"
    r = subprocess.run(
        ["bash", "-c", f'exec() {{ printf "%s\\0" "$@" > {args}; }}; . {path}'],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert not marker.exists(), (text, r.stderr)
    assert r.returncode == 0, r.stderr
    return args.read_bytes().decode().split("\0")[:-1]


# ---- the writer itself ----------------------------------------------------------------------


def test_the_writer_keeps_every_form_in_its_word_and_line(tmp_path):
    marker = tmp_path / "MARK"
    for form in forms(marker):
        text = batch_script.script(
            [f"submitted with {form}", form],
            [("job-name", batch_script.job_name(form)), ("chdir", str(tmp_path) + " x#'\"")],
            [("CLOUDHPC_BATCH_JOB", form)],
            ["echo", form, "--cmd", form],
            array_runs=[3, 1],
        )
        argv = assert_safe(text, tmp_path, marker)
        assert argv == ["echo", form, "--cmd", form, "3"], form  # task 0 outside Slurm
        for kind_option in ("account", "partition", "time", "chdir", "nodelist", "ntasks"):
            if kind_option == "chdir" and not any(c in form for c in "\n\r\x07\x1b\u2028"):
                continue  # a path on one line is written, escaped
            with pytest.raises(batch_script.CloudhpcError):
                batch_script.sbatch(kind_option, form)


def test_sbatch_reads_an_escaped_value_back_whole(slurm_or_skip, tmp_path):
    """sbatch's own reader of #SBATCH lines gives back the value cloudhpc escaped."""
    slurm = slurm_or_skip
    odd = tmp_path / "a b#c'd\"e$(f)`g`;h"
    odd.mkdir()
    text = batch_script.script(
        [],
        [("job-name", "odd"), ("chdir", str(odd)), ("output", str(odd / "out-%j.txt"))],
        [],
        ["pwd"],
    )
    (tmp_path / "j.sh").write_text(text)
    env = {**os.environ, **slurm.env}
    r = subprocess.run(["sbatch", "--parsable", "--wait", str(tmp_path / "j.sh")], env=env,
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    job = r.stdout.strip().split(";")[0]
    assert (odd / f"out-{job}.txt").read_text().strip() == str(odd)
    with pytest.raises(batch_script.CloudhpcError, match="backslash"):
        batch_script.sbatch("chdir", str(tmp_path / "a\\b"))


@pytest.fixture
def slurm_or_skip(request):
    from helpers import _slurm_missing

    if _slurm_missing():
        pytest.skip("needs root and Debian's slurm-wlm and munge")
    return request.getfixturevalue("slurm")


# ---- every --submit path --------------------------------------------------------------------

SUBMIT_PATHS = {
    "run files": ["run", "files", "--cmd", "wc -l {input}", "--out", "o", "in.txt"],
    "bench": ["bench", "pingpong", "-n", "2", "--sizes", "0:8"],
    "npb": ["npb", "ep", "--class", "S"],
    "profile": ["profile", "-n", "1", "--", "true"],
}
CAMPAIGN = """\
name = {name}
[[workload]]
name = {workload}
command = "run files --out o in.txt"
[matrix]
cmd = [{cmd}]
"""


def _campaign(tmp_path: Path, name: str = "c", workload: str = "w", cmd: str = "wc {input}"):
    path = tmp_path / "c.toml"
    path.write_text(
        CAMPAIGN.format(name=json.dumps(name), workload=json.dumps(workload), cmd=json.dumps(cmd))
    )
    return ["campaign", "run", str(path)]


def _submit_dry(argv: list[str], cwd: Path, *extra: str) -> tuple[int, str, str]:
    """ARGV --submit --dry-run EXTRA (before a `--` that starts a profiled program's argv)."""
    cut = argv.index("--") if "--" in argv else len(argv)
    return _cli([*argv[:cut], "--submit", "--dry-run", *extra, *argv[cut:]], cwd)


@pytest.fixture
def here(tmp_path):
    (tmp_path / "in.txt").write_text("a\n")
    return tmp_path


def test_every_submit_option_refuses_or_carries_every_form(here):
    marker = here / "MARK"
    paths = {**SUBMIT_PATHS, "campaign": _campaign(here)}
    for what, argv in paths.items():
        code, out, err = _submit_dry(argv, here)
        assert code == 0, (what, err)
        assert_safe(out if what != "campaign" else _one_script(out), here, marker)
        for option in ("--account", "--partition", "--time"):
            for form in forms(marker):
                code, out, err = _submit_dry(argv, here, option, form)
                assert code == 2, (what, option, form, out)
                assert len(err.strip().splitlines()) == 1 and option in err, err
                assert ESC not in err
    assert not marker.exists()


def _one_script(out: str) -> str:
    """The script a campaign's --submit --dry-run prints (one array job here)."""
    start = out.index("#!/bin/bash")
    return out[start:]


def test_files_cmd_and_campaign_values_are_carried_as_data(here):
    marker = here / "MARK"
    for form in forms(marker):
        cmd = f"echo {form} {{input}}"  # files runs it per input
        code, out, err = _submit_dry(["run", "files", "--cmd", cmd, "--out", "o", "in.txt"], here)
        assert code == 0, (form, err)
        argv = assert_safe(out, here, marker)
        assert argv[argv.index("--cmd") + 1] == cmd
        # the campaign's name, a workload's name and a matrix value
        for field, value in (("name", form), ("workload", form), ("cmd", cmd)):
            code, out, err = _submit_dry(_campaign(here, **{field: value}), here)
            if code == 2:  # a name is one line of printable text
                assert field != "cmd" and len(err.strip().splitlines()) == 1, err
                assert any(c in form for c in "\n\r\x1b\x07\t\u2028"), (field, form)
                continue
            assert code == 0, (field, form, err)
            assert_safe(_one_script(out), here, marker)
    assert not marker.exists()


def test_a_directory_whose_path_breaks_a_line_is_refused(tmp_path):
    for bad in ("a\nb", "a\rb", f"a{ESC}[31m"):
        d = tmp_path / bad
        d.mkdir()
        (d / "in.txt").write_text("a\n")
        code, out, err = _submit_dry(SUBMIT_PATHS["run files"], d)
        assert code == 2 and "#SBATCH --chdir" in err, err
        code, out, err = _submit_dry([*SUBMIT_PATHS["bench"], "--results", str(d / "r")], tmp_path)
        assert code == 2 and "#SBATCH --output" in err, err


def test_a_real_submission_runs_no_injected_command(slurm_or_skip, here):
    """The same through Slurm: the job runs the files app with the odd --cmd (echo of the odd
    words) and nothing else."""
    slurm = slurm_or_skip
    marker = here / "MARK"
    form = f"echo x\ntouch {marker} ;$(touch {marker})`touch {marker}` {{input}}"
    env = {**slurm.env, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    r = run_cli("run", "files", "--cmd", form, "--out", "o", "in.txt", "--submit",
                "--time", "5", cwd=here, env=env)  # fmt: skip
    assert r.returncode == 0, r.stderr
    w = run_cli("jobs", "--wait", "--wait-timeout", "200", "--json", cwd=here, env=env,
                timeout=260)  # fmt: skip
    assert w.returncode == 0, w.stderr
    (row,) = json.loads(w.stdout)
    assert row["state"] in ("COMPLETED", "FAILED"), row
    assert not marker.exists()


# ---- names on the terminal are data -----------------------------------------------------------

NAME = "c[/]x[red]y[bold]z"
WORKLOAD = "w[/][link=x]q"
VALUE = f"echo {ESC}[31m[/]{ESC}]0;t\x07 {{input}}"  # a matrix value: any text


def test_names_with_markup_and_escapes_are_shown_as_they_are(tmp_path):
    (tmp_path / "in.txt").write_text("a\n")
    path = tmp_path / "c.toml"
    path.write_text(
        f"name = {json.dumps(NAME)}\n[[workload]]\nname = {json.dumps(WORKLOAD)}\n"
        f'command = "run files --out o in.txt"\n[matrix]\ncmd = [{json.dumps(VALUE)}, "[/]"]\n'
        "[[exclude]]\ncmd = '[/]'\n"
    )
    results = str(tmp_path / "r")
    commands = [
        ["campaign", "run", str(path), "--results", results, "--dry-run"],
        ["campaign", "run", str(path), "--results", results],
        ["campaign", "status", str(path), "--results", results],
        ["results", "compare", "--results", results, "--campaign", NAME],
        ["results", "list", "--results", results],
        ["jobs", "--results", results],
    ]
    for argv in commands:
        r = run_cli(*argv, cwd=tmp_path)
        shown = r.stdout + r.stderr
        assert r.returncode in (0, 2), (argv, shown)
        assert "Traceback" not in shown and "internal error" not in shown, (argv, shown)
        assert ESC not in shown and "\x07" not in shown, (argv, shown)
        if argv[:2] in (["campaign", "run"], ["campaign", "status"]):
            assert r.returncode == 0, (argv, shown)
            assert NAME in shown and visible(VALUE) in shown, (argv, shown)


def test_an_error_naming_a_value_shows_it_escaped(tmp_path):
    r = run_cli("run", "kmeans", "--generate", "--n", f"1{ESC}[2J", cwd=tmp_path)
    assert r.returncode == 2 and ESC not in r.stderr, r.stderr
    r = run_cli("bench", f"x{ESC}[2J[/]", cwd=tmp_path)
    assert r.returncode == 2 and ESC not in r.stderr, r.stderr

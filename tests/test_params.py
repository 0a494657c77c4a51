"""Issue 32: a job's parameters declared once (params.py), and the command line, `--app
KEY=VALUE`, the campaign file's values and the Python signature made from that one declaration,
with one check and one message for a wrong type or a value out of range."""

from __future__ import annotations

import argparse
import inspect

import pytest
from helpers import assert_one_line_error, run_cli

from cloudhpc.apps.registry import job_spec
from cloudhpc.params import PATH, Param, ParamError, Params

DEMO = Params(
    Param("n", int, 10, "points", min=1),
    Param("tol", float, 0.0, "tolerance", min=0.0),
    Param("model", str, "a", "model", choices=("a", "b")),
    Param("generate", bool, False, "generate"),
    Param("memory_check", bool, True, "check memory"),
    Param("out", PATH, None, "output"),
    Param("bins", int, None, "bins", nargs="+", min=1),
    Param("ranges", float, None, "ranges", nargs=2, repeat=True, flags=("--range",)),
    Param("inputs", PATH, None, "inputs", nargs="*", positional=True),
    Param("class", str, "S", "class", choices=("S", "A")),
    what="demo",
)


def test_check_fills_defaults_and_converts(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    got = DEMO.check({"n": "5", "out": "o.npy", "bins": [3, "4"], "class_": "A"})
    assert got["n"] == 5 and got["tol"] == 0.0 and got["model"] == "a"
    assert got["out"] == str(tmp_path / "o.npy") and got["bins"] == [3, 4]
    assert got["class"] == "A" and got["memory_check"] is True and got["inputs"] is None
    assert list(got) == DEMO.names


@pytest.mark.parametrize(
    "values, message",
    [
        ({"n": 0}, "demo: n must be an integer >= 1, not 0"),
        ({"n": "0"}, "demo: n must be an integer >= 1, not 0"),  # a word reads as its value
        ({"n": "x"}, "demo: n must be an integer >= 1, not 'x'"),
        ({"n": True}, "demo: n must be an integer >= 1, not True"),
        ({"n": 2.5}, "demo: n must be an integer >= 1, not 2.5"),
        ({"tol": "nan"}, "demo: tol must be a number >= 0, not 'nan'"),
        ({"model": "c"}, "demo: model must be one of a, b, not 'c'"),
        ({"generate": "maybe"}, "demo: generate must be true or false, not 'maybe'"),
        ({"bins": [1, 0]}, "demo: bins must be an integer >= 1, not 0"),
        ({"bins": []}, "demo: bins takes at least one value"),
        ({"ranges": [[0, 1, 2]]}, "demo: ranges (--range) takes 2 values, not 3"),
        ({"nn": 1}, "demo has no parameter 'nn'; known: n, tol, model, generate"),
    ],
)
def test_one_message_per_problem(values, message):
    with pytest.raises(ParamError) as e:
        DEMO.check(values)
    assert str(e.value).startswith(message)


def test_the_command_line_collects_words_and_check_reads_them():
    p = argparse.ArgumentParser()
    DEMO.add_arguments(p)
    ns = p.parse_args(["--n", "7", "--no-memory-check", "--bins", "2", "3", "--range", "0", "1",
                       "--range", "2", "3", "--class", "A", "a.txt", "b.txt"])  # fmt: skip
    got = DEMO.check(DEMO.from_namespace(ns))
    assert got["n"] == 7 and got["memory_check"] is False and got["bins"] == [2, 3]
    assert got["ranges"] == [[0.0, 1.0], [2.0, 3.0]] and got["class"] == "A"
    assert [x.rsplit("/", 1)[1] for x in got["inputs"]] == ["a.txt", "b.txt"]
    # and back to words that give the same values
    again = DEMO.check(DEMO.from_namespace(p.parse_args(DEMO.to_words(got))))
    assert again == got
    ns = p.parse_args(["--n", "0"])
    with pytest.raises(ParamError, match="^demo: n must be an integer >= 1, not 0$"):
        DEMO.check(DEMO.from_namespace(ns))


def test_key_value_words():
    got = DEMO.check(DEMO.assignments(["n=3", "bins=4,5", "range=0,1", "ranges=2,3",
                                       "generate=yes", "class=A"]))  # fmt: skip
    assert got["n"] == 3 and got["bins"] == [4, 5] and got["generate"] is True
    assert got["ranges"] == [[0.0, 1.0], [2.0, 3.0]] and got["class"] == "A"
    with pytest.raises(ParamError, match="has no parameter 'nope'"):
        DEMO.assignments(["nope=1"])


def test_python_signature():
    sig = DEMO.signature()
    assert list(sig.parameters)[:3] == ["n", "tol", "model"]
    assert sig.parameters["n"].default == 10 and sig.parameters["n"].annotation is int
    assert sig.parameters["class_"].default == "S"  # a keyword: class_
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in sig.parameters.values())


def test_kmeans_is_declared_once(tmp_path):
    """kmeans' declaration makes its options, its Python signature and its check."""
    spec = job_spec("kmeans")
    assert not spec.legacy and "check" in spec.params
    sig = spec.params.signature()
    assert sig.parameters["k"].default is None and sig.parameters["iterations"].default == 20
    r = run_cli("run", "kmeans", "--help")
    assert "--iterations N" in r.stdout and "--reread-static" in r.stdout
    needle = "kmeans: iterations must be an integer >= 1, not 0"
    for words in (["--iterations", "0"], ["--iterations=0"]):
        r = run_cli("run", "kmeans", "--generate", "--k", "2", *words,
                    "--results", str(tmp_path / "r"))  # fmt: skip
        assert_one_line_error(r, needle)
    with pytest.raises(ParamError, match=needle):
        spec.job_params({"generate": True, "k": 2, "iterations": 0})
    r = run_cli("profile", "--results", str(tmp_path / "r"), "--app", "kmeans", "generate=true",
                "k=2", "iterations=0")  # fmt: skip
    assert_one_line_error(r, needle)


def test_a_plugin_on_the_argparse_hooks_is_read_through_its_own_hooks():
    """The older contract (add_arguments / params_from_args) still gives declared parameters:
    its options become values checked as declared ones are, and its params_from_args makes the
    job's params."""
    import types

    from cloudhpc.apps.spec import from_module

    def add_arguments(p):
        p.add_argument("--upto", type=int, default=100, metavar="N", help="the last N")
        p.add_argument("--fast", action="store_true")
        p.add_argument("names", nargs="*")

    module = types.SimpleNamespace(
        HELP="a plugin", MAIN="x:main", add_arguments=add_arguments,
        params_from_args=lambda a: {"upto": a.upto, "fast": a.fast, "names": a.names or []},
    )  # fmt: skip
    spec = from_module("sumsq", module)
    assert spec.legacy and spec.params.names == ["upto", "fast", "names", "check"]
    assert spec.job_params({"upto": "7", "check": True}) == {
        "upto": 7, "fast": False, "names": [], "check": True
    }  # fmt: skip
    with pytest.raises(ParamError, match="^sumsq: upto must be an integer, not 'x'$"):
        spec.job_params({"upto": "x"})
    assert list(spec.params.signature().parameters) == ["upto", "fast", "names", "check"]

"""cloudhpc's scaling-model search (analysis/pmnf.py) against Extra-P 4.2.5 itself, term by term,
on the same fit inputs (issue 33).

Extra-P pins numpy < 2 and PySide6, so it runs in a venv of its own, benchmarks/.venv-extrap
(`make bench` makes it); benchmarks/_extrap_fit.py runs there: it writes each quantity in
Extra-P's text input format and models it with Extra-P's model generator (default modeler, P
with negative exponents as cloudhpc gives it). Inputs:

- synthetic quantities with known formulas, on Extra-P's kind of grid (P = 1, 2, 4, 8 x three
  sizes) and on cloudhpc's usual 2 x 2 (P = 1, 2 x two sizes);
- the real fit inputs of `cloudhpc model fit` (analysis/scaling.fit_inputs: start-up, per role
  compute time, per call site calls, bytes and messages per call) of NPB CG, FT, IS, MG
  (classes S and W at P = 1, 2) and k-means at five sizes (P = 1, 2), profiled here on native
  (or read from --profiles-from DIR, a results directory that holds such profiles).

Per quantity: both formulas, whether they have the same terms (exponents and logs per
parameter; a constant below 1e-6 of the values counts as none), the largest relative difference
of matching coefficients, and both models' value at the target (class A at P = 2; k-means at 10x
its largest size), where a profile there gives the measured value too.

Run:  .venv/bin/python benchmarks/scaling_models.py [--profiles-from DIR] [--out DIR | --save]
      .venv/bin/python benchmarks/scaling_models.py --quick     # synthetic only (seconds)
Writes scaling_models.{json,md}; --save also its section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

import numpy as np
from common import (
    ROOT,
    cli_record,
    machine,
    parse_args,
    update_results_md,
    write_json,
    write_markdown,
)

from cloudhpc.analysis import pmnf

EXTRAP_PY = ROOT / "benchmarks" / ".venv-extrap" / "bin" / "python"
KERNELS = ("cg", "ft", "is", "mg")
KMEANS = ["d=4", "k=16", "iterations=20", "tol=0", "model=spmd", "generate=true"]


def synthetic() -> list[dict]:
    """Known formulas on Extra-P's kind of grid and on the 2 x 2 cloudhpc usually has."""
    P4 = np.array([1, 2, 4, 8] * 3, float)
    N3 = np.repeat([1e4, 1e5, 1e6], 4).astype(float)
    P2 = np.array([1, 2, 1, 2], float)
    N2 = np.array([2.0**16, 2**16, 2**20, 2**20])
    cases = [
        ("grid 4x3: 3.1e-9 N / P", P4, N3, 3.1e-9 * N3 / P4),
        ("grid 4x3: 1.2 N^(2/3) P^-(2/3)", P4, N3, 1.2 * N3 ** (2 / 3) * P4 ** (-2 / 3)),
        ("grid 4x3: 5 + 2 log2 P", P4, N3, 5 + 2 * np.log2(P4)),
        ("grid 4x3: 3 + 1e-3 N log2 N", P4, N3, 3 + 1e-3 * N3 * np.log2(N3)),
        ("grid 2x2: 0.01 + 3e-8 N / P", P2, N2, 0.01 + 3e-8 * N2 / P2),
        ("grid 2x2: 7 N^(2/3)", P2, N2, 7 * N2 ** (2 / 3)),
        ("grid 2x2: 11 (a count)", P2, N2, np.full(4, 11.0)),
    ]
    target = {"P": 2, "N": 2.0**23}
    return [{"name": n, "workload": "synthetic", "P": p.tolist(), "N": x.tolist(),
             "values": v.tolist(), "target": target} for n, p, x, v in cases]  # fmt: skip


def profiled(args: argparse.Namespace) -> list[dict]:
    """The fit inputs of real models: from --profiles-from DIR, or profiled now."""
    from cloudhpc.analysis.profile_points import observe
    from cloudhpc.analysis.scaling import fit_inputs
    from cloudhpc.npb.sizes import problem_sizes
    from cloudhpc.profile import load_profile
    from cloudhpc.results.store import files_dir

    wanted = {k: [(p, ["npb", f"kernel={k}", f"class={c}"]) for c in "SW" for p in (1, 2)]
              for k in args.kernels}  # fmt: skip
    sizes = [args.kmeans_n * 2**i for i in range(5)]
    if args.kmeans:
        wanted["kmeans"] = [(p, ["kmeans", f"n={n}", *KMEANS]) for n in sizes for p in (1, 2)]
    out = []
    for name, points in wanted.items():
        obs = []
        for p, words in points:
            rec = _find(args.profiles_from, p, words) if args.profiles_from else None
            if rec is None:
                rec = cli_record("profile", "-n", str(p), tail=("--app", *words))
                prof = load_profile(rec["outputs"][0])
            else:
                prof = load_profile(files_dir(args.profiles_from, rec["id"]))
            obs.append(observe(prof, rec))
            print(f"{name}: P = {p} {' '.join(words[1:3])} ({rec['id']})", flush=True)
        target_n = problem_sizes(name).n["A"] if name != "kmeans" else 10.0 * sizes[-1]
        measured = _measured_target(args, name, obs)
        for fi in fit_inputs(obs):
            label = f"{fi.role}: {fi.quantity}" + (f" @ {fi.site}" if fi.site else "")
            out.append({"name": label, "workload": name, "P": fi.P.tolist(), "N": fi.N.tolist(),
                        "values": fi.values.tolist(), "target": {"P": 2, "N": target_n},
                        "measured": measured.get((fi.role, fi.site, fi.quantity))})  # fmt: skip
    return out


def _find(results: str, p: int, words: list[str]) -> dict | None:
    """The newest ok profile record of `cloudhpc profile -n P --app WORDS` in `results`."""
    from cloudhpc.results.store import load_records

    app, kv = words[0], dict(w.split("=", 1) for w in words[1:])
    for r in reversed(load_records(results)):
        params = r.get("params") or {}
        if r.get("app") != "profile" or r.get("status") != "ok" or r.get("nprocs") != p:
            continue
        if params.get("app") != app:
            continue
        got = {k: str(v).lower() for k, v in (params.get("params") or {}).items()}
        if all(got.get(k) == v.lower() for k, v in kv.items()):
            if ((r.get("extra") or {}).get("app_jit") or {}).get("cache") != "cold":
                return r
    return None


def _measured_target(args: argparse.Namespace, name: str, obs) -> dict:
    """With --profiles-from, the target's own profile (class A at P = 2) if there is one:
    its quantities, to see which model came closer."""
    if not args.profiles_from or name == "kmeans":
        return {}
    from cloudhpc.analysis.profile_points import observe
    from cloudhpc.analysis.scaling import fit_inputs
    from cloudhpc.profile import load_profile
    from cloudhpc.results.store import files_dir

    rec = _find(args.profiles_from, 2, ["npb", f"kernel={name}", "class=A"])
    if rec is None:
        return {}
    target = observe(load_profile(files_dir(args.profiles_from, rec["id"])), rec)
    out = {}
    for fi in fit_inputs([*obs, target]):
        sel = (fi.P == 2) & (fi.N == fi.N.max())
        if sel.any():
            out[(fi.role, fi.site, fi.quantity)] = float(fi.values[sel][-1])
    return out


def run_extrap(quantities: list[dict]) -> list[dict]:
    """Extra-P's models of the quantities (only the parameters that vary are given to it)."""
    req = {"dir": tempfile.mkdtemp(prefix="extrap-inputs-"), "inputs": []}
    for q in quantities:
        params = [k for k in ("P", "N") if len(set(q[k])) > 1]
        q["varied"] = params
        req["inputs"].append({"name": q["name"], "params": params or ["P"],
                              "points": [[q[k][i] for k in (params or ["P"])]
                                         for i in range(len(q["values"]))],
                              "values": q["values"]})  # fmt: skip
    r = subprocess.run([str(EXTRAP_PY), str(ROOT / "benchmarks" / "_extrap_fit.py")],
                       input=json.dumps(req), capture_output=True, text=True)  # fmt: skip
    if r.returncode != 0:
        raise SystemExit(f"Extra-P failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout)


def signature_ours(m: pmnf.Model) -> dict:
    return {frozenset((f.param, Fraction(f.exponent), f.log) for f in t): c
            for c, t in zip(m.coefficients, m.terms, strict=True)}  # fmt: skip


def signature_extrap(e: dict) -> dict:
    sig = {}
    for t in e["terms"]:
        key = frozenset((e["params"][i], Fraction(x), lg) for i, x, lg in t["factors"]
                        if Fraction(x) != 0 or lg)  # fmt: skip
        sig[key] = sig.get(key, 0.0) + t["coefficient"]
    return sig


def eval_extrap(e: dict, point: dict) -> float:
    v = e["constant"]
    for t in e["terms"]:
        term = t["coefficient"]
        for i, x, lg in t["factors"]:
            val = float(point[e["params"][i]])
            term *= val ** float(Fraction(x)) * (np.log2(val) ** lg if lg else 1.0)
        v += term
    return float(v)


def compare(q: dict, e: dict) -> dict:
    ours = pmnf.fit({"P": q["P"], "N": q["N"]}, q["values"])
    scale = max(abs(v) for v in q["values"]) or 1.0
    a, b = signature_ours(ours), signature_extrap(e)
    const_a = abs(ours.constant) > 1e-6 * scale
    const_b = abs(e["constant"]) > 1e-6 * scale
    same = set(a) == set(b) and const_a == const_b
    coef = max((abs(b[k] / a[k] - 1) for k in a if k in b and a[k]), default=0.0)
    if const_a and const_b:
        coef = max(coef, abs(e["constant"] / ours.constant - 1))
    t = q["target"]
    p_ours = float(ours.evaluate({"P": t["P"], "N": t["N"]}))
    p_ex = eval_extrap(e, t)
    row = {
        "workload": q["workload"],
        "quantity": q["name"],
        "points": len(q["values"]),
        "cloudhpc": ours.formula(),
        "cloudhpc_cv_smape": ours.cv_smape,
        "extrap": _fmt_extrap(e),
        "extrap_smape": e["smape"],
        "same_terms": same,
        "coefficient_difference": coef if same else None,
        "target": t,
        "cloudhpc_at_target": p_ours,
        "extrap_at_target": p_ex,
        "measured_at_target": q.get("measured"),
        "constant_both": not a and not b,
        "extrap_warnings": e["warnings"],
    }
    row["same_growth"] = set(a) == set(b)
    m = q.get("measured")
    if m and abs(p_ours - p_ex) > 1e-9 * max(abs(p_ours), abs(p_ex), 1e-300):
        row["closer"] = "cloudhpc" if abs(p_ours - m) < abs(p_ex - m) else "Extra-P"
    return row


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def _fmt_extrap(e: dict) -> str:
    parts = [] if abs(e["constant"]) < 1e-12 else [f"{e['constant']:.3g}"]
    for t in e["terms"]:
        fs = []
        for i, x, lg in t["factors"]:
            p = e["params"][i]
            if Fraction(x) != 0:
                fs.append(p + ("" if Fraction(x) == 1 else f"^({x})"))
            if lg:
                fs.append(f"log2({p})" + ("" if lg == 1 else f"^{lg}"))
        parts.append(" * ".join([f"{t['coefficient']:.3g}", *fs]))
    return " + ".join(parts) or "0"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument(
        "--profiles-from",
        metavar="DIR",
        help="a results directory with the profiles (else they are made now)",
    )
    ap.add_argument("--kernels", default=",".join(KERNELS), help="NPB kernels (default: all)")
    ap.add_argument(
        "--no-kmeans",
        dest="kmeans",
        action="store_false",
        help="leave k-means (five sizes x P = 1, 2) out",
    )
    ap.add_argument(
        "--kmeans-n",
        type=int,
        default=50_000,
        metavar="N",
        help="k-means sizes N, 2N, 4N, 8N, 16N (default 50000)",
    )
    ap.add_argument("--quick", action="store_true", help="the synthetic quantities only")
    args = parse_args(ap)  # fmt: skip
    if not EXTRAP_PY.exists():
        print(f"{Path(sys.argv[0]).name}: needs Extra-P 4.2.5 in benchmarks/.venv-extrap: run "
              "`make bench` first", file=sys.stderr)  # fmt: skip
        raise SystemExit(2)
    args.kernels = [k for k in args.kernels.split(",") if k]
    for k in args.kernels:
        if k not in KERNELS:
            ap.error(f"unknown kernel {k!r}")
    start = machine()
    load0 = os.getloadavg()[0]
    quantities = synthetic()
    if not args.quick:
        quantities += profiled(args)
    rows = [compare(q, e) for q, e in zip(quantities, run_extrap(quantities), strict=True)]
    varying = [r for r in rows if not r["constant_both"]]
    same = [r for r in varying if r["same_terms"]]
    same_growth = [r for r in varying if r["same_growth"]]
    diffs = [r["coefficient_difference"] for r in same]
    closer = [r["closer"] for r in varying if r.get("closer")]
    summary = {
        "quantities": len(rows),
        "constant_in_both": len(rows) - len(varying),
        "varying": len(varying),
        "same_terms": len(same),
        "same_growth_terms": len(same_growth),
        "median_coefficient_difference": statistics.median(diffs) if diffs else None,
        "synthetic_recovered": {
            "cloudhpc": sum(r["same_terms"] or False for r in rows if r["workload"] == "synthetic")
        },  # fmt: skip
        "closer_to_measured": {k: closer.count(k) for k in ("cloudhpc", "Extra-P")},
    }
    write_json("scaling_models", {"machine": start, "summary": summary, "rows": rows})
    headline = (
        f"{len(varying)} quantities that vary in at least one model: the same terms in "
        f"{len(same)}, the same non-constant terms (one with a constant the other lacks) in "
        f"{len(same_growth)}; matching coefficients differ by "
        f"{_pct(summary['median_coefficient_difference'])} (median); "
        f"{len(rows) - len(varying)} constant in both."
    )
    if closer:
        headline += (f" At the target, closer to the measured value: cloudhpc "
                     f"{closer.count('cloudhpc')}, Extra-P {closer.count('Extra-P')}.")  # fmt: skip
    notes = [
        f"Machine: {start}. Load average (1 min) {load0:.2f} at the start.",
        "Extra-P 4.2.5 (its default modeler; P with negative exponents; only the parameters "
        "that vary), cloudhpc's analysis/pmnf.py, on the same points. Rows: the quantities "
        "that are not constant in both.",
        headline,
    ]
    header = ["workload", "quantity", "points", "cloudhpc", "Extra-P", "same terms",
              "coef. diff", "cloudhpc at target", "Extra-P at target", "measured"]  # fmt: skip
    table = [[r["workload"], r["quantity"][:60], r["points"], r["cloudhpc"], r["extrap"],
              "yes" if r["same_terms"] else "no",
              "" if r["coefficient_difference"] is None else f"{r['coefficient_difference']:.1%}",
              f"{r['cloudhpc_at_target']:.4g}", f"{r['extrap_at_target']:.4g}",
              "" if r["measured_at_target"] is None else f"{r['measured_at_target']:.4g}"]
             for r in varying]  # fmt: skip
    md = write_markdown("scaling_models", "Scaling models: cloudhpc's search vs Extra-P 4.2.5",
                        header, table, notes)  # fmt: skip
    update_results_md("scaling_models", "Scaling models vs Extra-P (issue 33)",
                      md.read_text().split("\n", 1)[1])  # fmt: skip
    print(headline)


if __name__ == "__main__":
    main()

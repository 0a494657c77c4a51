"""Run by benchmarks/scaling_models.py with Extra-P's own venv (benchmarks/.venv-extrap, made by
`make bench`): read the fit inputs as JSON on stdin, write each as an Extra-P text input file
(PARAMETER / POINTS / REGION / METRIC / DATA, docs/file-formats.md of Extra-P), model it with
Extra-P's model generator (its default modeler; P takes negative exponents, as cloudhpc's), and
print the chosen functions as JSON: per input, the constant and the terms with their
coefficients and (parameter, exponent, log exponent) factors, and Extra-P's RSS, SMAPE, AR2.

Input: {"inputs": [{"name": ..., "params": ["P", "N"], "points": [[p, n], ...],
"values": [...]}], "dir": "where the text files go"}. Only the parameters that vary are given.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from fractions import Fraction


def text_input(params: list[str], points: list[list[float]], values: list[float]) -> str:
    """Extra-P's text format; repetitions of a point become one DATA line of several values."""
    coords: dict[tuple, list[float]] = {}
    for pt, v in zip(points, values, strict=True):
        coords.setdefault(tuple(pt), []).append(v)
    lines = [f"PARAMETER {p}" for p in params]
    lines.append("POINTS " + " ".join("(" + " ".join(f"{c:g}" for c in k) + ")" for k in coords))
    lines += ["REGION quantity", "METRIC value"]
    lines += ["DATA " + " ".join(repr(float(v)) for v in vs) for vs in coords.values()]
    return "\n".join(lines) + "\n"


def terms_of(function) -> dict:
    """The function as {"constant": c0, "terms": [{"coefficient": c, "factors": [[param index,
    exponent as a fraction string, log exponent], ...]}]} for single- and multi-parameter
    functions alike."""
    out = {"constant": float(function.constant_coefficient), "terms": []}
    for t in function.compound_terms:
        coefficient = float(t.coefficient)
        if hasattr(t, "parameter_term_pairs"):  # a multi-parameter term: each part has its own
            pairs = t.parameter_term_pairs
            for _, compound in pairs:
                coefficient *= float(compound.coefficient)
        else:
            pairs = [(0, t)]
        factors = []
        for param, compound in pairs:
            poly, log = Fraction(0), 0
            for st in compound.simple_terms:
                if st.term_type == "polynomial":
                    poly = Fraction(st.exponent).limit_denominator(12)
                else:
                    log = int(st.exponent)
            factors.append([int(param), str(poly), log])
        out["terms"].append({"coefficient": coefficient, "factors": factors})
    return out


def main() -> None:
    from extrap.fileio.file_reader.text_file_reader import TextFileReader
    from extrap.modelers.model_generator import ModelGenerator

    req = json.load(sys.stdin)
    out = []
    for i, q in enumerate(req["inputs"]):
        path = os.path.join(req["dir"], f"input-{i:03d}.txt")
        with open(path, "w") as fh:
            fh.write(text_input(q["params"], q["points"], q["values"]))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            exp = TextFileReader().read_experiment(path)
            gen = ModelGenerator(exp)
            modeler = gen.modeler
            single = getattr(modeler, "single_parameter_modeler", modeler)
            if "P" in q["params"]:  # negative exponents, as cloudhpc gives P
                single.allow_negative_exponents = True
            gen.model_all()
        model = next(iter(gen.models.values()))
        h = model.hypothesis
        out.append({
            "name": q["name"],
            "file": path,
            "function": h.function.to_string(*exp.parameters),
            **terms_of(h.function),
            "params": q["params"],
            "rss": float(h.RSS),
            "smape": float(h.SMAPE),
            "ar2": float(h.AR2),
            "warnings": sorted({str(w.message)[:160] for w in caught}),
        })  # fmt: skip
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()

"""Determinism as a finding (issue #41): the same seed run twice on one machine,
do the losses come out bit-identical, and if not, by how much do they differ?

Two runs are a same-seed pair when both finished, their parameters are equal
(the output folder aside) and they ran on the same CPU (model, cores,
instruction sets and the caps in effect). The repeats of one output folder
are such pairs; so are a report and its reproduction on the same machine.

The finding per pair: every recorded loss of every epoch (the keys the recorder
checks for finiteness: "loss" or "mse" in their name) compared exactly, and the
largest absolute and relative difference where they differ; and the quality
figure's difference, the run-to-run difference a reproduction is held to.
"""
from __future__ import annotations

from ..result import COMPLETED, Result, as_dict, number
from . import fmt
from .cells import cell

# What the run's folder and place say, not what it computed.
NOT_PARAMS = ("out_dir",)
MACHINE_KEYS = ("cpu", "cores", "isa", "isa_caps", "machine")


def losses(r: Result) -> dict:
    """{(epoch index, key): the recorded loss} of a run."""
    out = {}
    for i, e in enumerate(r.epochs):
        for k, v in as_dict(e).items():
            if "loss" in k or "mse" in k:
                out[(i, k)] = v
    return out


def machine(r: Result) -> tuple:
    m = as_dict(r.environment.get("machine"))
    return tuple(repr(m.get(k)) for k in MACHINE_KEYS)


def same_seed(a: Result, b: Result) -> bool:
    """Whether a and b are the same seed's run twice on one machine (the module doc)."""
    pa = {k: v for k, v in a.params.items() if k not in NOT_PARAMS}
    pb = {k: v for k, v in b.params.items() if k not in NOT_PARAMS}
    return (a.status in COMPLETED and b.status in COMPLETED and pa == pb and "seed" in pa
            and machine(a) == machine(b) and (a.framework_version == b.framework_version))


def pair(a: Result, b: Result) -> dict | None:
    """The finding of one same-seed pair, or None where a and b are not one:
    {"identical", "max_abs", "max_rel", "n", "quality_diff"}."""
    if not same_seed(a, b):
        return None
    la, lb = losses(a), losses(b)
    keys = sorted(set(la) & set(lb))
    if not keys or set(la) != set(lb):
        return None
    diffs, rels = [], []
    for k in keys:
        x, y = number(la[k]), number(lb[k])
        if x is None or y is None:
            if la[k] != lb[k]:
                return None  # a non-finite loss on one side only: no measure of the difference
            continue
        diffs.append(abs(x - y))
        rels.append(abs(x - y) / abs(y) if y else (0.0 if x == y else float("inf")))
    qa, qb = number(a.quality()), number(b.quality())
    return {"identical": all(la[k] == lb[k] for k in keys), "max_abs": max(diffs, default=0.0),
            "max_rel": max(rels, default=0.0), "n": len(keys),
            "quality_diff": abs(qa - qb) if qa is not None and qb is not None else None}


def finding(runs) -> dict | None:
    """Over every same-seed pair among `runs` (a run and its repeats):
    {"identical": all pairs bit-identical, "max_abs", "max_rel", "quality_diff": the largest,
    "pairs": how many}; None where no pair exists (no repeats)."""
    runs = list(runs)
    found = [p for i, a in enumerate(runs) for b in runs[i + 1:] for p in [pair(a, b)] if p is not None]
    return merge(found)


def merge(found) -> dict | None:
    found = [p for p in found if p is not None]
    if not found:
        return None
    q = [p["quality_diff"] for p in found if p["quality_diff"] is not None]
    return {"identical": all(p["identical"] for p in found), "max_abs": max(p["max_abs"] for p in found),
            "max_rel": max(p["max_rel"] for p in found), "quality_diff": max(q) if q else None,
            "pairs": len(found)}


def text(f, S) -> str:
    """A finding in words: "bit-identical (2 pairs)", "differs: loss Δ ≤ 3.1e-07 (rel 2.0e-07)"."""
    if f is None:
        return fmt.NA
    if f["identical"]:
        return S("det_identical", n=f["pairs"])
    return S("det_differs", abs=f"{f['max_abs']:.1e}", rel=f"{f['max_rel']:.1e}", n=f["pairs"])


def column_cell(w, S):
    """The default report's "Same seed twice" cell of a row: its repeats' finding."""
    f = finding([w.result, *w.extra])
    if f is None:
        return cell(fmt.NA, None, "na", S("tip_det_none"))
    return cell(text(f, S), 0.0 if f["identical"] else f["max_abs"], "ok" if f["identical"] else "warn",
                S("tip_det_switches", switches=switches_text(w.result)))


def switches_text(r: Result) -> str:
    """The determinism switches as the run had them (frameval/nb/determinism.py), one line."""
    sw = r.determinism
    return "; ".join(f"{k} = {fmt.NA if v is None else v}" for k, v in sw.items()) or fmt.NA

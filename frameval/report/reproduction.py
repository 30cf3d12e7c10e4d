"""`run_all.py reproduce`'s comparison: a report's runs against their
reproduction, per run (issue #41), and the one verdict line.

A run agrees when
- it finished the same way (its status) and the check's verdict is the same;
- its quality figure is equal to the printed precision (the report's own
  format, tables.QUALITY_FORMAT) where the framework is found deterministic
  (report/determinism.py: every same-seed pair bit-identical), else within the
  run-to-run difference its repeats measured, else (nothing measured) to the
  printed precision, and the line says that no difference was measured;
- its speed shows no significant change by compare's statistics
  (report/comparison.py's compare_pair); on another CPU speed is "another
  machine: not comparable", and the rest still counts.

Runs in the runner environment (scipy).
"""
from __future__ import annotations

import json
from pathlib import Path

from .. import provenance
from ..catalog import WORKLOAD_BY_KEY
from . import determinism as det
from . import fmt
from .comparison import compare_pair, verdict_text
from .folders import rows_by_run
from .i18n import Strings
from .tables import QUALITY_FORMAT


def same_cpu(orig, repro) -> bool | None:
    """Whether the two folders ran on the same CPU (its identity and the caps in
    effect, as provenance.json records them); None where either has no record."""
    pa, pb = provenance.read(orig), provenance.read(repro)
    if not pa or not pb:
        return None
    ma, mb = pa.get("machine") or {}, pb.get("machine") or {}
    return ma.get("cpu") == mb.get("cpu") and ma.get("caps") == mb.get("caps")


def _quality_format(workload):
    wl = WORKLOAD_BY_KEY.get(workload)
    return QUALITY_FORMAT.get(wl.quality.key, fmt.sig) if wl else fmt.sig


def judge_quality(a, b, found, tolerance, S) -> tuple:
    """(agrees, what the line says) for the quality figures of runs a and b."""
    f = _quality_format(a.workload)
    qa, qb = a.quality(), b.quality()
    shown = f"{f(qa)} → {f(qb)}"
    if fmt.num(qa) is None or fmt.num(qb) is None:
        return (qa is None) == (qb is None) and f(qa) == f(qb), shown
    printed = f(qa) == f(qb)
    delta = abs(fmt.num(qa) - fmt.num(qb))
    if found is not None and found["identical"]:
        return printed, shown + " · " + S("rep_q_printed")
    if tolerance is not None:
        ok = printed or delta <= tolerance
        return ok, shown + " · " + S("rep_q_within" if ok else "rep_q_beyond", d=f(delta), tol=f(tolerance))
    return printed, shown + " · " + S("rep_q_unmeasured")


def judge_speed(runs_a, runs_b, cpu_same, threshold, S) -> tuple:
    if not cpu_same:
        return True, S("rep_speed_other_machine"), None
    c = compare_pair(runs_a, runs_b, threshold)
    said = f"{fmt.rate(c['sps_a'])} → {fmt.rate(c['sps_b'])} ({fmt.ratio(c['ratio'])}; {verdict_text(c, S, threshold)})"
    return c["verdict"] not in ("faster", "slower"), said, c


def judge(run, wa, wb, cpu_same, threshold, S) -> dict:
    """One run's line: what agrees, what differs (in words), and the figures."""
    if wa is None or wb is None:
        why = S("rep_missing_b" if wb is None else "rep_missing_a")
        return {"run": run, "agree": False, "differs": [why], "cells": [run, why] + [fmt.NA] * 5}
    a, b = wa.result, wb.result
    runs_a, runs_b = [a, *wa.extra], [b, *wb.extra]
    repeats = det.merge([det.finding(runs_a), det.finding(runs_b)])
    across = det.pair(a, b) if cpu_same else None
    found = det.merge([repeats, across])
    differs = []
    if a.status != b.status:
        differs.append(S("rep_d_status", a=a.status, b=b.status))
    ca, cb = (a.check or {}).get("ok"), (b.check or {}).get("ok")
    if ca != cb:
        differs.append(S("rep_d_check", a=_check_word(ca, S), b=_check_word(cb, S)))
    q_ok, q_said = judge_quality(a, b, found, repeats["quality_diff"] if repeats else None, S)
    if not q_ok:
        differs.append(S("rep_d_quality", what=q_said))
    s_ok, s_said, s_fig = judge_speed(runs_a, runs_b, cpu_same, threshold, S)
    if not s_ok:
        differs.append(S("rep_d_speed", what=s_said))
    cells = [run, f"{a.status} → {b.status}", f"{_check_word(ca, S)} → {_check_word(cb, S)}", q_said,
             det.text(found, S), s_said, S("rep_agree") if not differs else S("rep_differs")]
    return {"run": run, "agree": not differs, "differs": differs, "cells": cells,
            "quality": [fmt.num(a.quality()), fmt.num(b.quality())], "determinism": found,
            "speed": {k: s_fig.get(k) for k in ("sps_a", "sps_b", "ratio", "p", "verdict")} if s_fig else None,
            "check": [ca, cb], "status": [a.status, b.status]}


def _check_word(ok, S) -> str:
    return fmt.NA if ok is None else S("rep_check_pass" if ok else "rep_check_fail")


def said(n, S) -> str:
    """A note of frameval/reproduce.py or frameval/envs/recorded.py ({"key", values}) in S's language."""
    if not isinstance(n, dict):
        return str(n)
    return S(n["key"], **n) + (S("rep_n_dirty_too") if n.get("dirty") else "")


def verdict_line(lines, S) -> str:
    n, good = len(lines), sum(1 for ln in lines if ln["agree"])
    head = S("rep_verdict", k=good, n=n)
    bad = [f"{ln['run']}: {S.join(ln['differs'])}" for ln in lines if not ln["agree"]]
    return head if not bad else head + S("rep_verdict_differs", what="; ".join(bad))


def compare_reproduction(orig, repro, threshold=0.10, lang="en", notes=()) -> dict:
    """{"markdown", "data", "verdict"}: every run of `orig` against `repro`."""
    S = Strings(lang)
    ra, rb = rows_by_run(orig, S), rows_by_run(repro, S)
    cpu_same = same_cpu(orig, repro)
    if cpu_same is None:  # no record on one side: the runs' own machine record decides
        some_a, some_b = next(iter(ra.values()), None), next(iter(rb.values()), None)
        cpu_same = bool(some_a and some_b and det.machine(some_a.result) == det.machine(some_b.result))
    keys = list(ra) + [k for k in rb if k not in ra]
    lines = [judge(k, ra.get(k), rb.get(k), cpu_same, threshold, S) for k in keys]
    verdict = verdict_line(lines, S)
    intro = S("rep_intro", a=str(Path(orig).resolve()), b=str(Path(repro).resolve()))
    md = [f"# {S('rep_title')}", "", intro.replace("\n", "  \n"), ""]  # one line each
    md += [f"- {said(n, S)}" for n in notes] + ([""] if notes else [])
    if not cpu_same:
        md += [S("rep_other_machine"), ""]
    heads = [S(k) for k in ("rep_col_run", "rep_col_status", "rep_col_check", "rep_col_quality",
                            "rep_col_determinism", "rep_col_speed", "rep_col_verdict")]
    esc = lambda x: str(x).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    md += ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    md += ["| " + " | ".join(esc(c) for c in ln["cells"]) + " |" for ln in lines]
    md += ["", S("rep_det_note"), "", f"**{verdict}**", ""]
    data = {"original": str(orig), "reproduction": str(repro), "same_cpu": cpu_same, "threshold": threshold,
            "agree": sum(1 for ln in lines if ln["agree"]), "runs": len(lines), "verdict": verdict,
            "notes": [said(n, S) for n in notes], "lines": [{k: v for k, v in ln.items() if k != "cells"} for ln in lines]}
    return {"markdown": "\n".join(md), "data": json.loads(json.dumps(data, default=str)), "verdict": verdict}

"""Save, load and serve (#70; frameval/nb/serving.py): per workload, each run's
model saved in its framework's deployment format (its size and save time),
loaded in a fresh process (the framework's import and the model's load, apart),
whether the reloaded model predicts exactly what the trained one did in memory,
and its prediction latency at batch 1 and at the workload's evaluation batch.

A median's interval is distribution-free, from the order statistics of the run's
own calls (one process; between-process noise is not in it): a "fastest" that
overlaps the runner-up's interval is said to be indistinguishable from it, not
ranked. p99 is "not available" below 100 calls (the quick profile's 20: --serve).
The section ends with the resume table (report/resume.py) where -p resume_check ran.
"""
from __future__ import annotations

from scipy import stats

from ..catalog import WORKLOADS
from ..nb.serving import P99_CALLS
from . import fmt
from .cells import cell, header, mode_cell
from .finding import Finding
from .media import wl_name
from .resume import resume_findings, resume_part, small  # noqa: F401 - small: this module's name for it too

# Reloaded predictions within this relative difference of the in-memory ones differ by float32
# rounding only (a few units in the last place over the workloads' depths); beyond it, a fault.
ROUNDING = 1e-5


def served(w) -> dict | None:
    s = w.result.serving
    return s if isinstance(s, dict) and s.get("status") != "off" else None


def median_interval(ms, level: float = 0.95):
    """(lo, hi) of the median from the calls' order statistics (binomial ranks), or None below 6 calls."""
    xs = sorted(v for v in (ms or []) if isinstance(v, (int, float)))
    n = len(xs)
    if n < 6:
        return None
    # the j-th and (n - j + 1)-th smallest (1-based), j the largest rank with P(B < j) <= (1 - level) / 2,
    # B ~ Binomial(n, 1/2): the median lies between them with at least `level`'s probability
    j = max(int(stats.binom.ppf((1 - level) / 2, n, 0.5)), 1)
    return xs[j - 1], xs[n - j]


def _lat(s, batch) -> dict:
    return ((s.get("latency_ms") or {}).get(str(batch))) or {}


def reload_verdict(s) -> tuple:
    """(mark, words key, css class): bit-exact, within float32 rounding, or different."""
    if s.get("exact"):
        return "✓", "serve_exact", "ok"
    rel = fmt.num(s.get("max_rel_diff"))
    if rel is not None and rel <= ROUNDING and s.get("finite", True):
        return "≈", "serve_rounding", "warn"
    return "✗", "serve_differs", "bad"


def _p50_p99(s, batch) -> str:
    lat = _lat(s, batch)
    if not lat:
        return fmt.NA
    p99 = lat.get("p99")
    return f"{fmt.millis(lat.get('p50'))} / {fmt.millis(p99) if p99 is not None else fmt.NA}"


def _row(w, s, S) -> list:
    name = cell(w.fw_name, w.fw)
    if s.get("status") != "ok":
        why = S("serve_status_" + ("not_offered" if s.get("status") == "not_offered" else "failed"),
                stage=s.get("stage", "?"), error=s.get("error", ""))
        return [name, mode_cell(w), cell(why, cls="bad")] + [cell(fmt.NA, cls="na")] * 8
    mark, key, cls = reload_verdict(s)
    diff = small(s.get("max_abs_diff"))
    batch = s.get("batch")
    return [name, mode_cell(w), cell(str(s.get("format", "")).split(" (")[0], title=s.get("format", "")),
            cell(fmt.kib(s.get("bytes")), s.get("bytes")), cell(fmt.seconds(s.get("save_s")), s.get("save_s")),
            cell(fmt.seconds(s.get("import_s")), s.get("import_s")), cell(fmt.seconds(s.get("load_s")), s.get("load_s")),
            cell(mark if s.get("exact") else f"{mark} {diff}", s.get("max_abs_diff"), cls, S(key)),
            cell(_p50_p99(s, 1), _lat(s, 1).get("p50")), cell(_p50_p99(s, batch), _lat(s, batch).get("p50")),
            cell(fmt.rate(s.get("throughput")), s.get("throughput"))]


def _notes(rows, S) -> list:
    """One line per reload that is not bit-exact: its difference and why."""
    out = []
    for w, s in rows:
        if s.get("status") != "ok" or s.get("exact"):
            continue
        mark, key, _ = reload_verdict(s)
        out.append(S(key + "_note", run=w.label, diff=small(s.get("max_abs_diff")), rel=small(s.get("max_rel_diff")),
                     mode=w.mode, format=s.get("format", "")))
    return out


def _table(wl, got, S) -> dict:
    batch = next((s.get("batch") for _, s in got if s.get("batch")), "N")
    heads = [header(S("col_framework")), header(S("col_mode")), header(S("col_serve_format")),
             header(S("col_serve_size"), True), header(S("col_serve_save"), True), header(S("col_serve_import"), True),
             header(S("col_serve_load"), True), header(S("col_serve_reload"), False, S("tip_serve_reload")),
             header(S("col_serve_b1"), True, S("tip_serve_latency")),
             header(S("col_serve_bn", batch=batch), True, S("tip_serve_latency")),
             header(S("col_serve_throughput", batch=batch), True)]
    return {"id": f"table-serve-{wl}", "headers": heads, "rows": [_row(w, s, S) for w, s in got], "sortable": True}


def serving_section(rows, S) -> dict | None:
    """The "Save, load and serve" section: one table per workload; None where no run served."""
    parts = []
    for wl in WORKLOADS:
        got = [(w, s) for w in rows if w.workload == wl for s in [served(w)] if s]
        if not got:
            continue
        s0 = got[0][1]
        parts.append({"workload": wl, "name": wl_name(S, wl), "inputs": S("serve_inputs", what=s0.get("inputs", ""), n=s0.get("n", "?")),
                      "table": _table(wl, got, S), "notes": _notes(got, S), "best": best_lines(got, S)})
    resume = resume_part(rows, S)
    if not parts and not resume:
        return None
    calls = [int(_lat(s, 1).get("calls") or 0) for w in rows for s in [served(w)] if s and s.get("status") == "ok"]
    few = bool(calls) and min(calls) < P99_CALLS
    return {"intro": S("serve_intro") if parts else S("serve_intro_none"), "parts": parts, "resume": resume,
            "few_calls": S("serve_few_calls", n=min(calls)) if few else ""}


def _fastest(got, value, S, show, interval=None) -> str | None:
    """The run with the least `value`, and whether its interval clears the runner-up's."""
    have = sorted(((value(s), w, s) for w, s in got if s.get("status") == "ok" and value(s) is not None),
                  key=lambda t: t[0])
    if not have:
        return None
    v, w, s = have[0]
    text = f"{w.label} ({show(v)}"
    iv = interval(s) if interval else None
    if iv:
        text += f", {S('serve_interval')} {show(iv[0])}–{show(iv[1])}"
    text += ")"
    if interval and len(have) > 1:
        v2, w2, s2 = have[1]
        iv2 = interval(s2)
        if iv and iv2 and iv[1] >= iv2[0]:
            text += " " + S("serve_tied", run=w2.label)
    return text


def best_lines(got, S) -> list:
    """The smallest file, the fastest load, the fastest batch-1 prediction (with its interval)."""
    ms = lambda v: f"{fmt.millis(v)} ms"  # noqa: E731
    out = []
    small = _fastest(got, lambda s: s.get("bytes"), S, fmt.kib)
    load = _fastest(got, lambda s: s.get("load_s"), S, lambda v: f"{fmt.seconds(v)} s")
    b1 = _fastest(got, lambda s: _lat(s, 1).get("p50"), S, ms, lambda s: median_interval(_lat(s, 1).get("ms")))
    for key, text in (("serve_best_size", small), ("serve_best_load", load), ("serve_best_b1", b1)):
        if text:
            out.append(S(key, run=text))
    return out


def serving_findings(rows, S) -> list:
    """The summary's lines: per workload its best three, and every reload that differs (flagged)."""
    sec = serving_section(rows, S)
    out = []
    for part in (sec or {}).get("parts", []):
        if part["best"]:
            out.append(Finding(kind="serving", text=S("serve_finding", workload=wl_name(S, part["workload"])),
                               anchor="serving", details=tuple(part["best"])))
    for w in rows:
        s = served(w)
        if s and s.get("status") == "ok" and reload_verdict(s)[0] == "✗":
            out.append(Finding(kind="serving", flag=True, alert=True, anchor="serving",
                               text=S("serve_differs_finding", run=w.label, diff=small(s.get("max_abs_diff")))))
        elif s and s.get("status") == "failed":
            out.append(Finding(kind="serving", flag=True, anchor="serving",
                               text=S("serve_failed_finding", run=w.label, stage=s.get("stage", "?"),
                                      error=s.get("error", ""))))
    return out + resume_findings(rows, S)

"""The verdict table of two sets of runs of the same workload: per framework,
workload, mode and device, the ratios of samples/s, peak memory and final
quality, the check's change and the verdict (the rules: frameval/stats.py).

Used by the report's "Version comparison" section (report/versions.py) and by
`run_all.py compare A B` (frameval/report/folders.py).
"""
from __future__ import annotations

from .. import stats
from ..catalog import WORKLOAD_BY_KEY
from ..result import Result, counts
from . import fmt
from .cells import cell, header

VERDICT_CLS = {"faster": "ok", "slower": "flag", "same": "", "too_few": "warn", "na": "na"}


# ------------------------------------------------------------------ figures per run
def samples_per_s(r: Result):
    """The run's rate as the ranking reads it: what its recorder wrote
    (speed.run_rate), so this verdict and the ranking's never point opposite ways."""
    return fmt.num(r.samples_per_s) if counts(r) else None


def peak_memory(r: Result):
    """The training peak: device memory on a GPU run where measured, else the process RSS."""
    if not counts(r):
        return None
    dev = fmt.num(r.peak_device_mb) if r.device == "gpu" else None
    return dev if dev is not None else fmt.num(r.peak_rss_mb)


def quality(r: Result):
    """The run's final quality figure (the catalog's metric of its workload); a
    check-failed run counts here as in speed: not at all (result.counts)."""
    return fmt.num(r.quality()) if counts(r) else None


# ------------------------------------------------------------------ the table
def _side(runs) -> dict:
    return {"sps": [samples_per_s(r) for r in runs], "mem": [peak_memory(r) for r in runs],
            "quality": [quality(r) for r in runs]}


def compare_pair(runs_a, runs_b, threshold=stats.DEFAULT_THRESHOLD) -> dict:
    """Everything one line of the verdict table says, as numbers (runs: Results, the first repeat first)."""
    a, b = _side(runs_a), _side(runs_b)
    v = stats.verdict(a["sps"], b["sps"], threshold)
    check_a = runs_a[0].check if runs_a else None
    check_b = runs_b[0].check if runs_b else None
    return dict(v, sps_a=stats.median(a["sps"]), sps_b=stats.median(b["sps"]),
                mem_ratio=stats.ratio(b["mem"], a["mem"]), quality_ratio=stats.ratio(b["quality"], a["quality"]),
                check=stats.check_change(check_a, check_b))


def _check_cell(chk, S):
    w = chk["worst"]
    if chk["different"] is None:
        return cell(fmt.NA, None, "na", S("tip_cmp_check_na"))
    if chk["different"]:
        what = (S("cmp_check_status") if w[0] == "ok" else
                f"{w[0]} {w[1]} Δ {w[2]:.1e}" + (f" > {w[3]:.0e}" if w[3] is not None else ""))
        return cell("⚠ " + S("cmp_check_different") + f" ({what})", True, "flag", S("tip_cmp_check_different"))
    return cell(S("cmp_check_same") + (f" (Δ ≤ {w[2]:.1e})" if w else ""), False, "ok", S("tip_cmp_check_same"))


def verdict_text(c, S, threshold) -> str:
    key = "cmp_verdict_" + c["verdict"]
    return S(key, pct=f"{threshold * 100:g}%", n=c["n_a"], m=c["n_b"], needed=c["needed"],
             p=f"{stats.P_THRESHOLD:g}")


def _headers(S, label_a, label_b) -> list:
    return [header(S("col_framework")), header(S("col_workload")), header(S("col_mode")),
            header(label_a or S("col_cmp_a")), header(label_b or S("col_cmp_b")),
            header(S("col_cmp_sps"), True, S("tip_cmp_sps")), header(S("col_cmp_speed"), True, S("tip_cmp_speed")),
            header(S("col_cmp_p"), True, S("tip_cmp_p")), header(S("col_cmp_mem"), True, S("tip_cmp_mem")),
            header(S("col_cmp_quality"), True, S("tip_cmp_quality")), header(S("col_cmp_check")),
            header(S("col_cmp_verdict"))]


def _ratio_cell(x, title=""):
    return cell(fmt.ratio(x), x, "na" if x is None else "", title)


def _line(ln, c, S, threshold) -> list:
    """One line of the table: the pair `ln`, its figures `c` (compare_pair)."""
    wl = WORKLOAD_BY_KEY.get(ln["workload"])
    qname = S(wl.quality.label) if wl else ""
    mode = ln["mode"] + (f" ({ln['device'].upper()})" if ln["device"] != "cpu" else "")
    return [
        cell(ln["framework"]), cell(S("wl_" + ln["workload"]) if ("wl_" + ln["workload"]) in S.raw else ln["workload"]),
        cell(mode), cell(f"{ln['a']} · n={c['n_a']}", ln["a"]), cell(f"{ln['b']} · n={c['n_b']}", ln["b"]),
        cell(f"{fmt.rate(c['sps_a'])} → {fmt.rate(c['sps_b'])}", c["sps_b"]),
        _ratio_cell(c["ratio"]),
        cell(f"{c['p']:.2g}" if c["p"] is not None else S("cmp_p_none"), c["p"], "na" if c["p"] is None else ""),
        _ratio_cell(c["mem_ratio"]), _ratio_cell(c["quality_ratio"], qname),
        _check_cell(c["check"], S),
        cell(verdict_text(c, S, threshold), c["verdict"], VERDICT_CLS[c["verdict"]]),
    ]


def comparison_table(lines, S, threshold=stats.DEFAULT_THRESHOLD, table_id="table-versions", label_a="",
                     label_b="") -> dict:
    """lines: [{"framework", "workload", "mode", "device", "a": label, "b": label,
    "runs_a": [Result], "runs_b": [Result]}] -> a report table (cells carry the
    raw numbers), with "lines": each pair's figures as numbers."""
    body, computed = [], []
    for ln in lines:
        c = compare_pair(ln["runs_a"], ln["runs_b"], threshold)
        computed.append(dict(c, **{k: ln[k] for k in ("framework", "workload", "mode", "device", "a", "b")}))
        body.append(_line(ln, c, S, threshold))
    return {"id": table_id, "headers": _headers(S, label_a, label_b), "rows": body, "sortable": True,
            "lines": computed}


def notes(computed, S, threshold=stats.DEFAULT_THRESHOLD) -> list:
    """What the reader must know below the table: too few repeats, a different function."""
    out = []
    few = [c for c in computed if stats.min_p(c["n_a"], c["n_b"]) >= stats.P_THRESHOLD]
    if few:
        worst = min(few, key=lambda c: min(c["n_a"], c["n_b"]))
        out.append(S("cmp_note_too_few", n=worst["n_a"], m=worst["n_b"], p=f"{stats.P_THRESHOLD:g}",
                     min_p=f"{stats.min_p(worst['n_a'], worst['n_b']):.2g}", needed=stats.repeats_needed()))
    for c in computed:
        if c["check"]["different"]:
            out.append(S("cmp_note_different", framework=c["framework"], version=c["b"], base=c["a"],
                         workload=S("wl_" + c["workload"]), mode=c["mode"]))
    return out

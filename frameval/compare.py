"""Did it get faster? Two sets of runs of the same workload compared, with a
verdict that survives noise (runner environment: scipy).

A change in steady samples/s is called *faster* or *slower* only when both
  - it is larger than a threshold (default 10%, `--threshold`), as asv's `--factor`, and
  - it is significant across repeats: a two-sided Mann-Whitney U test over
    the repeats' samples/s gives p < 0.002, asv's threshold.
Otherwise it is *no significant change*. Where the repeats are too few for
the test ever to reach p < 0.002 (5 against 5: the smallest two-sided p is
2/252 = 0.008), a change beyond the threshold is not called, and the table
says how many repeats would do. Peak memory and final quality are shown as
ratios beside it. The numerical check is compared too: a version whose check
errors against the same float64 reference differ by more than the check's
tolerance computes a different function, and is flagged.

Used by the report's "Version comparison" section (frameval/report/versions.py)
and by `run_all.py compare A B` (frameval/compare_cli.py).
"""
from __future__ import annotations

import math
import statistics

from .report import fmt
from .result import CHECK_SECTIONS_READ
from .report.model import cell, d_, final, header

P_THRESHOLD = 0.002  # asv's p threshold (asv/_stats.py is_different)
DEFAULT_THRESHOLD = 0.10
VERDICTS = ("faster", "slower", "same", "too_few", "na")
VERDICT_CLS = {"faster": "ok", "slower": "flag", "same": "", "too_few": "warn", "na": "na"}


# ------------------------------------------------------------------ figures per run
def samples_per_s(r):
    return fmt.num(r.get("samples_per_s")) if isinstance(r, dict) and r.get("status") == "ok" else None


def peak_memory(r):
    """The training peak: device memory on a GPU run where measured, else the process RSS."""
    if not isinstance(r, dict) or r.get("status") not in ("ok", "check_failed"):
        return None
    dev = fmt.num(r.get("peak_device_mb")) if r.get("device") == "gpu" else None
    return dev if dev is not None else fmt.num(r.get("peak_rss_mb"))


QUALITY = {"lenet": ("col_test_acc", lambda r: final(r, "test_acc")),
           "lstm": ("col_val_r2", lambda r: r.get("val_r2")),
           "dcgan": ("col_gen_loss", lambda r: next((e.get("gen_loss") for e in reversed(r.get("epochs") or [])
                                                     if isinstance(e, dict) and "gen_loss" in e), None))}


def quality(r, workload):
    if not isinstance(r, dict) or r.get("status") not in ("ok", "check_failed") or workload not in QUALITY:
        return None
    return fmt.num(QUALITY[workload][1](r))


def median(values):
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def ratio(b, a):
    """median(b) / median(a): above 1 means B has more (of samples/s: B is faster)."""
    mb, ma = median(b), median(a)
    if mb is None or ma is None or ma == 0:
        return None
    x = mb / ma
    return x if math.isfinite(x) else None


# ------------------------------------------------------------------ significance
def min_p(n: int, m: int) -> float:
    """The smallest two-sided exact Mann-Whitney p that n against m samples can give."""
    return 2 / math.comb(n + m, n) if n and m else 1.0


def repeats_needed(p_threshold: float = P_THRESHOLD) -> int:
    """The fewest repeats per side with which the test can reach p < p_threshold."""
    k = 1
    while min_p(k, k) >= p_threshold:
        k += 1
    return k


def mann_whitney(a, b):
    """Two-sided p of scipy's Mann-Whitney U (exact without ties up to 20 a side,
    else the normal approximation with tie correction)."""
    from scipy.stats import mannwhitneyu
    ties = len(set(a) | set(b)) < len(a) + len(b)
    method = "exact" if not ties and max(len(a), len(b)) <= 20 else "asymptotic"
    p = float(mannwhitneyu(a, b, alternative="two-sided", method=method).pvalue)
    return p if math.isfinite(p) else 1.0  # all values equal: no evidence of a change


def verdict(a, b, threshold: float = DEFAULT_THRESHOLD, p_threshold: float = P_THRESHOLD) -> dict:
    """{"verdict", "ratio" (B/A samples/s), "p", "n_a", "n_b", "needed"} for the
    samples/s of A's repeats against B's."""
    a = [x for x in a if x is not None]
    b = [x for x in b if x is not None]
    out = {"ratio": ratio(b, a), "p": None, "n_a": len(a), "n_b": len(b), "needed": repeats_needed(p_threshold)}
    if out["ratio"] is None:
        return dict(out, verdict="na")
    beyond = out["ratio"] > 1 + threshold or out["ratio"] < 1 / (1 + threshold)
    if min_p(len(a), len(b)) < p_threshold:
        out["p"] = mann_whitney(a, b)
    if not beyond:
        return dict(out, verdict="same")
    if out["p"] is None:
        return dict(out, verdict="too_few")
    if out["p"] >= p_threshold:
        return dict(out, verdict="same")
    return dict(out, verdict="faster" if out["ratio"] > 1 else "slower")


# ------------------------------------------------------------------ the check
def check_change(ra, rb) -> dict:
    """Whether B computes the function A does: each tensor's error against the
    shared float64 reference, A's against B's, within the check's tolerance.
    {"different": True/False/None (not known), "worst": (section, name, delta, tol) or None}"""
    ca, cb = d_(d_(ra).get("check")), d_(d_(rb).get("check"))
    if not ca or not cb:
        return {"different": None, "worst": None}
    tol = {**d_(ca.get("tolerances")), **d_(cb.get("tolerances"))}
    worst, over = None, []
    for section in CHECK_SECTIONS_READ:
        t = fmt.num(tol.get(section))
        ea, eb = d_(ca.get(section)), d_(cb.get(section))
        for name in set(ea) & set(eb):
            x, y = fmt.num(ea[name]), fmt.num(eb[name])
            if x is None or y is None:
                if (x is None) != (y is None):
                    over.append((section, str(name), float("inf"), t))
                continue
            delta = abs(y - x)
            if worst is None or delta > worst[2]:
                worst = (section, str(name), delta, t)
            if t is not None and delta > t:
                over.append((section, str(name), delta, t))
    if (ca.get("ok") is True) != (cb.get("ok") is True) and ca.get("ok") in (True, False) and cb.get("ok") in (True, False):
        over.append(("ok", "check", float("inf"), None))
    over.sort(key=lambda x: -x[2])
    return {"different": bool(over), "worst": over[0] if over else worst}


# ------------------------------------------------------------------ the table
def _side(runs, workload) -> dict:
    return {"sps": [samples_per_s(r) for r in runs], "mem": [peak_memory(r) for r in runs],
            "quality": [quality(r, workload) for r in runs]}


def compare_pair(runs_a, runs_b, workload, threshold=DEFAULT_THRESHOLD) -> dict:
    """Everything one line of the verdict table says, as numbers."""
    a, b = _side(runs_a, workload), _side(runs_b, workload)
    v = verdict(a["sps"], b["sps"], threshold)
    return dict(v, sps_a=median(a["sps"]), sps_b=median(b["sps"]), mem_ratio=ratio(b["mem"], a["mem"]),
                quality_ratio=ratio(b["quality"], a["quality"]), check=check_change(runs_a[0] if runs_a else {},
                                                                                    runs_b[0] if runs_b else {}))


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
             p=f"{P_THRESHOLD:g}")


def comparison_table(lines, S, threshold=DEFAULT_THRESHOLD, table_id="table-versions", label_a="", label_b="") -> dict:
    """lines: [{"framework", "workload", "mode", "device", "a": label, "b": label,
    "runs_a": [results], "runs_b": [results]}] -> a report table (cells carry the raw numbers)."""
    heads = [header(S("col_framework")), header(S("col_workload")), header(S("col_mode")),
             header(label_a or S("col_cmp_a")), header(label_b or S("col_cmp_b")),
             header(S("col_cmp_sps"), True, S("tip_cmp_sps")), header(S("col_cmp_speed"), True, S("tip_cmp_speed")),
             header(S("col_cmp_p"), True, S("tip_cmp_p")), header(S("col_cmp_mem"), True, S("tip_cmp_mem")),
             header(S("col_cmp_quality"), True, S("tip_cmp_quality")), header(S("col_cmp_check")),
             header(S("col_cmp_verdict"))]
    body, computed = [], []
    for ln in lines:
        c = compare_pair(ln["runs_a"], ln["runs_b"], ln["workload"], threshold)
        computed.append(dict(c, **{k: ln[k] for k in ("framework", "workload", "mode", "device", "a", "b")}))
        qname = S(QUALITY[ln["workload"]][0]) if ln["workload"] in QUALITY else ""
        mode = ln["mode"] + (f" ({ln['device'].upper()})" if ln["device"] != "cpu" else "")
        body.append([
            cell(ln["framework"]), cell(S("wl_" + ln["workload"]) if ("wl_" + ln["workload"]) in S.raw else ln["workload"]),
            cell(mode), cell(f"{ln['a']} · n={c['n_a']}", ln["a"]), cell(f"{ln['b']} · n={c['n_b']}", ln["b"]),
            cell(f"{fmt.rate(c['sps_a'])} → {fmt.rate(c['sps_b'])}", c["sps_b"]),
            cell(fmt.ratio(c["ratio"]), c["ratio"], "na" if c["ratio"] is None else ""),
            cell(f"{c['p']:.2g}" if c["p"] is not None else S("cmp_p_none"), c["p"], "na" if c["p"] is None else ""),
            cell(fmt.ratio(c["mem_ratio"]), c["mem_ratio"], "na" if c["mem_ratio"] is None else ""),
            cell(fmt.ratio(c["quality_ratio"]), c["quality_ratio"], "na" if c["quality_ratio"] is None else "", qname),
            _check_cell(c["check"], S),
            cell(verdict_text(c, S, threshold), c["verdict"], VERDICT_CLS[c["verdict"]]),
        ])
    return {"id": table_id, "headers": heads, "rows": body, "sortable": True, "lines": computed}


def notes(computed, S, threshold=DEFAULT_THRESHOLD) -> list:
    """What the reader must know below the table: too few repeats, a different function."""
    out = []
    few = [c for c in computed if min_p(c["n_a"], c["n_b"]) >= P_THRESHOLD]
    if few:
        worst = min(few, key=lambda c: min(c["n_a"], c["n_b"]))
        out.append(S("cmp_note_too_few", n=worst["n_a"], m=worst["n_b"], p=f"{P_THRESHOLD:g}",
                     min_p=f"{min_p(worst['n_a'], worst['n_b']):.2g}", needed=repeats_needed()))
    for c in computed:
        if c["check"]["different"]:
            out.append(S("cmp_note_different", framework=c["framework"], version=c["b"], base=c["a"],
                         workload=S("wl_" + c["workload"]), mode=c["mode"]))
    return out

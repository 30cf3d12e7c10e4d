"""How cost grows (#28): each run's share of the limit is report/peak.py's. Where a sweep ran (several batch
sizes or thread counts of one framework, mode and workload), a section shows
samples/s and peak memory against batch size, and the speedup from the fewest
threads to the most, with 95% intervals (stats); a value that failed is a
"failed" cell, never dropped."""
from __future__ import annotations

from .. import speed
from . import fmt
from .cells import cell, header
from .finding import Finding
from .media import figure, wl_name
from .model import run_windows

FLAT_GAIN = 1.10        # less than 10% more samples/s from one batch size to the next: the curve has flattened
OVERHEAD_RISE = 1.5     # a share of peak that rises this much with batch size: per-step overhead, not arithmetic


# ------------------------------------------------------------------ overhead-bound series
def overhead_bound(wrows, an) -> list:
    """[(series, share at its smallest batch, share at its largest)]: the batch
    series whose share of peak rises at least OVERHEAD_RISE-fold from the
    smallest batch size to the largest. Per-step costs (kernel launches, Python,
    the framework's dispatch), not arithmetic, set their speed at small batches;
    a series whose share stays flat is as far from the limit at every size."""
    out = []
    for g in batch_series(wrows):
        a, b = an.peak(g["points"][0][1]).peak_share, an.peak(g["points"][-1][1]).peak_share
        if a and b and b / a >= OVERHEAD_RISE:
            out.append((g, a, b))
    return out


# ------------------------------------------------------------------ the sweeps
def _p(w, key):
    return fmt.num(w.result.params.get(key))


def _series(wrows, axis, fixed) -> list:
    """[{"key", "label", "fw", "mode", "points": [(x, row)] by x}]: one per
    framework, version, mode, device, machine and value of `fixed`; only where
    `axis` took more than one value."""
    if len({_p(w, axis) for w in wrows if _p(w, axis) is not None}) < 2:
        return []
    many = len({_p(w, fixed) for w in wrows}) > 1
    groups: dict = {}
    for w in wrows:
        x = _p(w, axis)
        if x is None:
            continue
        k = (w.fw, w.version, w.mode, w.device, w.host, _p(w, fixed), w.size[0])
        g = groups.setdefault(k, {"key": k, "fw": w.fw, "mode": w.mode, "points": [],
                                  "label": f"{w.fw_name} {w.mode}" + (f" ({w.device.upper()})" if w.device != "cpu" else "")
                                  + (f", {fixed}={fmt.integer(_p(w, fixed))}" if many and _p(w, fixed) is not None else "")})
        g["points"].append((x, w))
    out = [g for g in groups.values() if len(g["points"]) > 1]
    for g in out:
        g["points"].sort(key=lambda p: (p[0] == 0, p[0]))  # threads=0 (all cores) last
    first = list(dict.fromkeys(k[:5] for k in groups))  # the rows' framework order, then the fixed value by number
    out.sort(key=lambda g: (first.index(g["key"][:5]), g["key"][5] is None, g["key"][5] or 0))
    return out


def batch_series(wrows):
    return _series(wrows, "batch_size", "threads")


def thread_series(wrows):
    return _series(wrows, "threads", "batch_size")


def failed_text(w, S) -> str:
    """"OOM" for a value that ran out of memory, else the error's type: a failed value keeps its cell."""
    err = w.result.error or {}
    words = f"{err.get('type', '')} {err.get('message', '')}".lower()
    if any(k in words for k in ("memoryerror", "out of memory", "oom", "resourceexhausted", "cannot allocate")):
        return S("scaling_oom")
    return S("scaling_failed", type=err.get("type") or w.status)


def _value_cell(w, S, what, an, rate_ivs):
    if not (w.ok and w.samples_per_s is not None):
        return cell(failed_text(w, S), None, "flag", (w.result.error or {}).get("message", "")[:300])
    if what == "memory":
        v = fmt.num(w.result.peak_rss_mb)
        return cell(fmt.mb(v), v, "na" if v is None else "")
    iv, p = rate_ivs.get(w), an.peak(w)
    share = f" · {fmt.sig(p.peak_share * 100, 2)}%" if p.peak_share is not None else ""
    title = S("tip_rate_interval", lo=fmt.rate(iv["lo"]), hi=fmt.rate(iv["hi"])) if iv else ""
    return cell(fmt.rate(w.samples_per_s) + share, w.samples_per_s, "", title)


def _axis_label(x, S):
    return S("scaling_all_cores") if x == 0 else fmt.integer(x)


def _grid_table(tid, series, S, first, what, an, rate_ivs):
    xs = sorted({x for s in series for x, _ in s["points"]}, key=lambda x: (x == 0, x))
    heads = [header(first)] + [header(_axis_label(x, S), True) for x in xs]
    body = []
    for s in series:
        at = dict(s["points"])
        body.append([cell(s["label"], s["fw"])] + [_value_cell(at[x], S, what, an, rate_ivs) if x in at else cell("—", None, "na")
                                                    for x in xs])
    return {"id": tid, "headers": heads, "rows": body, "sortable": True, "row_ids": [str(s["key"]) for s in series]}


def speedup(s):
    """From the series' first point to its last (fewest threads to most, smallest batch to largest):
    (ratio, interval dict or None); None where either end has no speed."""
    (_, a), (_, b) = s["points"][0], s["points"][-1]
    if not (a.ok and b.ok and a.samples_per_s and b.samples_per_s):
        return None
    ratio = b.samples_per_s / a.samples_per_s
    return ratio, speed.ratio_interval(run_windows(b), run_windows(a))


def _threads_of(x, w):
    """A thread count as a number: 0 (all cores) is the run's own recorded count."""
    return x if x else fmt.num((w.result.machine or {}).get("cores")) or fmt.num(w.result.threads)


def thread_table(wl, series, S, an, rate_ivs):
    t = _grid_table(f"scaling-threads-{wl}", series, S, S("col_threads_axis"), "speed", an, rate_ivs)
    t["headers"] += [header(S("col_thread_speedup"), True, S("tip_thread_speedup")),
                     header(S("col_efficiency"), True, S("tip_efficiency"))]
    for s, line in zip(series, t["rows"]):
        got = speedup(s)
        if got is None:
            line += [cell(fmt.NA, None, "na"), cell(fmt.NA, None, "na")]
            continue
        ratio, iv = got
        n0, n1 = _threads_of(*s["points"][0]), _threads_of(*s["points"][-1])
        eff = ratio / (n1 / n0) if n0 and n1 and n1 != n0 else None
        s["speedup"], s["efficiency"], s["interval"] = ratio, eff, iv
        line.append(cell(fmt.ratio(ratio) + (f" ({fmt.interval(iv['lo'], iv['hi'])})" if iv else ""), ratio))
        line.append(cell(f"{eff * 100:.0f}%" if eff is not None else fmt.NA, eff, "" if eff is not None else "na"))
    return t


def rate_intervals(series) -> dict:
    """{row: its samples/s's own 95% interval (speed.rate_interval)} for the swept points."""
    return {w: speed.rate_interval(run_windows(w)) for s in series for _, w in s["points"] if w.ok and w.samples_per_s}


def _batch_panels(series, S, rate_ivs):
    def pts(s, get, iv):
        return [(x, get(w), *((rate_ivs[w]["lo"], rate_ivs[w]["hi"]) if iv and rate_ivs.get(w) else (None, None)))
                for x, w in s["points"] if w.ok and get(w) is not None]
    speed = [(s["label"], s["fw"], s["mode"], pts(s, lambda w: w.samples_per_s, True)) for s in series]
    mem = [(s["label"], s["fw"], s["mode"], pts(s, lambda w: fmt.num(w.result.peak_rss_mb), False)) for s in series]
    return [(S("chart_scaling_speed"), S("axis_batch"), S("axis_samples_per_s"), speed),
            (S("chart_scaling_memory"), S("axis_batch"), S("axis_mb"), mem)]


def workload_scaling(wl, wrows, S, charts, problems, an) -> dict | None:
    """One workload's scaling part, or None where it swept nothing."""
    bs, ts = batch_series(wrows), thread_series(wrows)
    if not bs and not ts:
        return None
    ivs = rate_intervals(bs + ts)
    name = wl_name(S, wl)
    out = {"id": wl, "name": name, "batch": None, "memory": None, "threads": None, "charts": []}
    if bs:
        out["batch"] = _grid_table(f"scaling-batch-{wl}", bs, S, S("col_batch_axis"), "speed", an, ivs)
        out["memory"] = _grid_table(f"scaling-memory-{wl}", bs, S, S("col_batch_memory"), "memory", an, ivs)
        cap = S("fig_scaling_batch", workload=name)
        out["charts"].append(figure(problems, S, cap, charts.scaling, f"{wl}-scaling-batch", _batch_panels(bs, S, ivs),
                                    S("chart_scaling_note")))
    if ts:
        out["threads"] = thread_table(wl, ts, S, an, ivs)
        items = [(s["label"], s["speedup"], s["fw"], False, (s["interval"]["lo"], s["interval"]["hi"]) if s.get("interval") else None)
                 for s in ts if s.get("speedup") is not None]
        cap = S("fig_scaling_threads", workload=name)
        if items:
            out["charts"].append(figure(problems, S, cap, lambda: charts.hbar_panels(
                f"{wl}-scaling-threads", [(name, S("axis_thread_speedup"), items)], note=S("chart_modes_note"), line=1.0, log=True)))
    out["charts"] = [c for c in out["charts"] if c]
    out["findings"] = scaling_findings(wl, bs, ts, S)
    return out


def scaling_section(rows, wls, S, charts, problems, an) -> dict | None:
    parts = []
    for wl in wls:
        wrows = [w for w in rows if w.workload == wl]
        got = problems.run(S("what_section", name=S("h_scaling") + " · " + wl_name(S, wl)), workload_scaling, wl, wrows,
                           S, charts, problems, an, default=lambda it, wl=wl: {"id": wl, "name": wl_name(S, wl), "error": it["text"]})
        if got:
            parts.append(got)
    return {"intro": S("scaling_intro"), "parts": parts} if parts else None


# ------------------------------------------------------------------ summary lines
def _flattens(s):
    """The batch size after which the next one adds less than FLAT_GAIN; None if it never does."""
    pts = [(x, w) for x, w in s["points"] if w.ok and w.samples_per_s]
    for (x0, a), (_, b) in zip(pts, pts[1:]):
        if b.samples_per_s / a.samples_per_s < FLAT_GAIN:
            return x0
    return None


def scaling_findings(wl, bs, ts, S) -> list:
    out, name = [], wl_name(S, wl)
    gains = [(s, speedup(s)) for s in bs]
    gains = [(s, g) for s, g in gains if g]
    if gains:
        s, (ratio, _) = max(gains, key=lambda x: x[1][0])
        flat = [(t, _flattens(t)) for t, _ in gains]
        flat = S.join(S("flat_item", run=t["label"], batch=fmt.integer(x)) for t, x in flat if x is not None)
        out.append(Finding(kind="speed", anchor=f"scaling-{wl}", text=S(
            "finding_batch_scaling", workload=name, run=s["label"], ratio=fmt.ratio(ratio),
            b0=fmt.integer(s["points"][0][0]), b1=fmt.integer(s["points"][-1][0]))
            + (" " + S("finding_flattens", items=flat) if flat else " " + S("finding_no_flat"))))
    ths = [s for s in ts if s.get("speedup") is not None]
    if ths:
        s = max(ths, key=lambda t: t["speedup"])
        eff = f"{s['efficiency'] * 100:.0f}%" if s.get("efficiency") is not None else fmt.NA
        out.append(Finding(kind="speed", anchor=f"scaling-{wl}", text=S(
            "finding_thread_scaling", workload=name, run=s["label"], ratio=fmt.ratio(s["speedup"]), eff=eff,
            items=S.join(f"{t['label']} {fmt.ratio(t['speedup'])}" for t in ths if t is not s))))
    return out

"""Time to a target quality, by MLPerf's and AlgoPerf's rules, and the
convergence-parity check, as the report shows them (docs/time-to-target.md):
the table per workload, the summary's ranking beside samples/s, the parity
note and alert.

Each run's time to target is recomputed from the evaluation points its result
records (result["evaluation"]["points"]) with frameval/target.py, the function
the notebooks' recorder uses, in report/analysis.py (`an.target(w)`): the
report never shows a figure it cannot derive, and the target is the workload
record's (`Workload.target(params)`). The scores and their intervals are
frameval/stats.py's: AlgoPerf's median (a missed target counts as infinite
time) and MLPerf's mean without the fastest and the slowest run (5 runs or
more). Evaluation seconds are shown on their own: the training clock
(train_s) excludes them.
"""
from __future__ import annotations

import math

from .. import stats
from ..result import as_dict
from ..catalog import WORKLOAD_BY_KEY
from . import fmt
from .analysis import TargetTime, has_evaluation
from .cells import cell, header
from .finding import Finding
from .media import wl_name
from .model import rank_group


# ------------------------------------------------------------------ groups and ranks
def target_groups(wrows, an) -> dict:
    """{(device, size, target): [rows]}: the rows whose times are compared;
    only rows with a target and at least one run with evaluation points."""
    out: dict = {}
    for w in wrows:
        t = an.target(w)
        if w.counted and t.target is not None and t.runs:
            out.setdefault((*rank_group(w), t.target), []).append(w)
    return out


def _bounds(t: TargetTime):
    a = t.algoperf or {}
    return (a.get("lo"), a.get("hi")) if a.get("lo") is not None else (None, None)


def rank_ranges(grows, an) -> dict:
    """{row: (best rank, worst rank)} by AlgoPerf's median: a row is placed
    behind only the rows whose interval lies wholly below its own, and ahead
    only of those wholly above, so two rows whose intervals overlap share
    ranks and are not ordered. Rows without an interval get no rank."""
    ivs = {w: _bounds(an.target(w)) for w in grows}
    # a row whose every seed missed has nothing to rank: "not reached" says it all
    ivs = {w: b for w, b in ivs.items() if b[0] is not None and not math.isinf(b[0])}
    out = {}
    for w, (lo, hi) in ivs.items():
        ahead = sum(1 for x, (_, xhi) in ivs.items() if x is not w and xhi < lo)
        behind = sum(1 for x, (xlo, _) in ivs.items() if x is not w and xlo > hi)
        out[w] = (1 + ahead, len(ivs) - behind)
    return out


def parity(grows, an) -> dict:
    """stats.convergence_parity of the group's rows' samples to target, keyed by row label."""
    return stats.convergence_parity({w.label: [r.got["samples"] for r in an.target(w).runs] for w in grows})


# ------------------------------------------------------------------ text
def _seconds(v, S) -> str:
    if v is None:
        return fmt.NA
    return S("ttt_not_reached") if math.isinf(v) else fmt.seconds(v) + " s"


def _samples(v, S) -> str:
    if v is None:
        return fmt.NA
    return S("ttt_not_reached") if math.isinf(v) else fmt.integer(v)


def scored(d, S, show=_seconds) -> str:
    """A score with its interval, "41.2 s (39.0 s–43.1 s)"; an infinite bound reads "not reached"."""
    if not d or d.get("value") is None:
        return fmt.NA
    text = show(d["value"], S)
    if math.isinf(d["value"]) and d.get("lo") is not None and math.isinf(d["lo"]):
        return text  # every draw missed: "not reached (not reached–not reached)" says nothing more
    if d.get("lo") is not None:
        text += f" ({show(d['lo'], S)}–{show(d['hi'], S)})"
    return text


def target_text(target, S, rows=()) -> str:
    """"Test accuracy ≥ 98.50%": the metric as the workload names it, the direction, the value;
    then the workload's note on it for these rows' results (the LSTM's: below persistence)."""
    from .tables import QUALITY_FORMAT
    metric, value, higher = target
    wl = next((wl for wl in WORKLOAD_BY_KEY.values() if wl.quality.key == metric), None)
    name = S(wl.quality.label) if wl else metric
    key = wl.target_note(target, [w.result.raw for w in rows]) if wl and wl.target_note else ""
    note = f" {S(key)}" if key else ""  # the LSTM's: below persistence (#67)
    return f"{name} {'≥' if higher else '≤'} {QUALITY_FORMAT.get(metric, fmt.sig)(value)}{note}"


def _mlperf_cell(t: TargetTime, S):
    m = t.mlperf or {}
    if m.get("reason") == "too_few":
        return cell(S("ttt_mlperf_too_few", n=m["n"], need=stats.MLPERF_MIN_RUNS), None, "na")
    return cell(scored(m, S), m.get("value"), "warn" if m.get("value") == math.inf else "")


def _eval_cell(t: TargetTime, S):
    """Evaluation seconds per run, kept out of the training clock: their median and range."""
    vals = sorted(t.eval_s)
    if not vals:
        return cell(fmt.NA, None, "na", S("tip_ttt_eval_none"))
    mid = stats.median(vals)
    text = fmt.seconds(mid) + (f" ({fmt.seconds(vals[0])}–{fmt.seconds(vals[-1])})" if len(vals) > 1 else "")
    return cell(text, mid, "", S("tip_ttt_eval", n=len(vals), values=", ".join(fmt.seconds(v) for v in t.eval_s)))


def _line(w, t: TargetTime, rank, S) -> list:
    a = t.algoperf or {}
    mismatch = [str(r.seed) for r in t.runs if not r.agrees]
    reached = cell(f"{t.reached}/{len(t.runs)}" if t.runs else fmt.NA, t.reached if t.runs else None,
                   "na" if not t.runs else ("warn" if t.reached < len(t.runs) else ""))
    if mismatch:  # the recorder's figure differs from the points it recorded: say so, never hide it
        reached = dict(reached, cls="flag", title=S("tip_ttt_mismatch", seeds=", ".join(mismatch)))
    rank_text = fmt.NA if rank is None else (str(rank[0]) if rank[0] == rank[1] else f"{rank[0]}–{rank[1]}")
    return [cell(w.label, w.id), cell(target_text(t.target, S, [w])), reached,
            cell(scored(a, S), a.get("value"), "na" if not t.runs else ("warn" if a.get("value") == math.inf else "")),
            _mlperf_cell(t, S), cell(scored(t.samples, S, _samples), (t.samples or {}).get("value")),
            cell(rank_text, rank[0] if rank else None, "na" if rank is None else ""), _eval_cell(t, S)]


def target_section(wl, wrows, S, an) -> dict | None:
    """The workload's "Time to target" table, its notes (no target at this
    size, the parity check), or None where no run evaluated during training
    and the workload has no target at its size (results from before evaluation points)."""
    shown = [w for w in wrows if w.ok and (an.target(w).target is not None or has_evaluation(w))]
    if not shown:
        return None
    ranks = {w: r for g in target_groups(wrows, an).values() for w, r in rank_ranges(g, an).items()}
    heads = [header(S("col_run")), header(S("col_ttt_target")), header(S("col_ttt_reached"), True, S("tip_ttt_reached")),
             header(S("col_ttt_algoperf"), True, S("tip_ttt_algoperf")),
             header(S("col_ttt_mlperf"), True, S("tip_ttt_mlperf", n=stats.MLPERF_MIN_RUNS)),
             header(S("col_ttt_samples"), True, S("tip_ttt_samples")), header(S("col_ttt_rank"), True, S("tip_ttt_rank")),
             header(S("col_ttt_eval"), True, S("tip_ttt_eval_col"))]
    body = []
    for w in shown:
        t = an.target(w)
        if t.target is None:
            body.append([cell(w.label, w.id), cell(S("ttt_no_target"), None, "na")]
                        + [cell(fmt.NA, None, "na")] * 5 + [_eval_cell(t, S)])
        else:
            body.append(_line(w, t, ranks.get(w), S))
    notes = [parity_text(g, key[-1], S, an) for key, g in target_groups(wrows, an).items()]
    return {"table": {"id": f"table-ttt-{wl}", "headers": heads, "rows": body, "sortable": True,
                      "row_ids": [w.id for w in shown]},
            "intro": S("ttt_intro", how=eval_frequency(wl, shown, S)), "notes": notes, "anchor": f"ttt-{wl}"}


def eval_frequency(wl, rows, S) -> str:
    """How often these runs evaluated, as their results record it (the
    workload's own schedule where none does): "once an epoch" for the DCGAN,
    never a figure fixed in the sentence."""
    got = {int(v) for v in (fmt.num(as_dict(w.result.raw.get("evaluation")).get("per_epoch")) for w in rows)
           if v is not None and v > 0}
    record = WORKLOAD_BY_KEY.get(wl)
    if not got and record is not None:
        got = {record.eval_per_epoch}
    if not got:
        return S("ttt_eval_unknown")
    return S.join(S("ttt_eval_once") if n == 1 else S("ttt_eval_times", n=n) for n in sorted(got))


def parity_text(grows, target, S, an) -> str:
    """That the parity check ran: which test, which correction, over how many
    runs, and what it found; or why it could not run."""
    got = parity(grows, an)
    kw = dict(target=target_text(target, S, grows), n=len(grows), runs=got["runs"], min=stats.PARITY_MIN_RUNS)
    if not got["ok"]:
        return S("ttt_parity_too_few", **kw)
    flagged = [k for k, ln in got["lines"].items() if ln["flagged"]]
    found = S.join(flagged) if flagged else S("ttt_parity_none")
    return S("ttt_parity_ran", found=found, alpha=f"{stats.PARITY_ALPHA:g}", **kw)


def _median_of(w, an):
    v = (an.target(w).algoperf or {}).get("value")
    return math.inf if v is None else v


def _item(w, an, S) -> str:
    return S("ttt_item", run=w.label, time=scored(an.target(w).algoperf, S), sps=fmt.rate(w.samples_per_s))


def _ranking(wl, grows, target, S, an) -> Finding | None:
    """The group's time to target in one sentence, beside each run's samples/s:
    the quickest, the runs whose interval overlaps its own (not ordered against
    it), the slower ones, the ones that did not reach the target."""
    order = sorted([w for w in grows if (an.target(w).algoperf or {}).get("value") is not None],
                   key=lambda w: _median_of(w, an))  # a time not available is neither ranked nor a miss
    if not order:
        return None
    kw = dict(workload=wl_name(S, wl), target=target_text(target, S, grows), n=max(len(an.target(w).runs) for w in grows))
    missed = [w for w in order if math.isinf(_median_of(w, an))]
    reached = [w for w in order if w not in missed]
    tail = " " + S("ttt_finding_missed", items=S.join(w.label for w in missed)) if missed else ""
    if not reached:
        return Finding(kind="speed", anchor=f"ttt-{wl}", text=S("ttt_finding_none", **kw))
    best, others = reached[0], reached[1:]
    lo, hi = _bounds(an.target(best))
    if hi is None:  # no interval for the quickest: nothing is ordered
        # in the table's order, never sorted by time: one seed's times read as a ranking they are not (#67)
        return Finding(kind="speed", anchor=f"ttt-{wl}", text=S("ttt_finding_unranked", min=stats.MIN_SEEDS,
                       items=S.join(_item(w, an, S) for w in grows if w in reached), **kw) + tail)
    slower = [w for w in others if _bounds(an.target(w))[0] is not None and _bounds(an.target(w))[0] > hi]
    ties = [w for w in others if w not in slower]
    parts = [S("ttt_finding_best", best=_item(best, an, S), **kw)]
    if ties:
        parts.append(S("ttt_finding_ties", items=S.join(_item(w, an, S) for w in ties)))
    if slower:
        parts.append(S("ttt_finding_slower", items=S.join(_item(w, an, S) for w in slower)))
    return Finding(kind="speed", anchor=f"ttt-{wl}", text=" ".join(parts) + tail)


def target_findings(wl, wrows, S, an) -> list:
    """The summary's time-to-target sentence per compared group, and an alert
    for every run the parity check flags."""
    out = []
    for key, grows in target_groups(wrows, an).items():
        ranking = _ranking(wl, grows, key[-1], S, an)
        out += [ranking] if ranking else []
        got = parity(grows, an)
        for label, ln in got["lines"].items():
            if ln["flagged"]:
                out.append(Finding(kind="parity", flag=True, alert=True, anchor=f"ttt-{wl}",
                                   text=S("alert_parity", run=label, workload=wl_name(S, wl),
                                          median=_samples(ln["median"], S), pooled=_samples(ln["pooled_median"], S),
                                          p=f"{ln['p_holm']:.2g}", n=len(got["lines"]), runs=got["runs"])))
    return out

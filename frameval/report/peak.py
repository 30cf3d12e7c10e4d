"""How far each run is from the limit (#28, #35).

Every row gets its achieved GFLOP/s (samples/s x the workload's required FLOPs
per training sample, frameval/flops.py) and two shares: of this machine's peak
(the best float32 GEMM of numpy's BLAS, uncapped, and every framework's own)
and of its own framework's GEMM ceiling as its runs see it
(`<out>/machine.json`: frameval/probe.py, frameval/ceilings.py), each at the
run's thread count. The environment section shows both figures, how they were
measured and the instruction-set caps that were set; the summary names the
run closest to the limit, says per slower framework whether its gap to the
fastest lies in its kernels or around them, and raises an alert for any share
above 100% (the probe under-measured), which is never printed silently.

A figure the probe could not measure idle (machine.json's "busy", each
framework entry's "busy") is a lower bound: no share, alert or gap diagnosis
is built on it; the cell reads "not available (probe measured at ...)" and
the environment section says once which figures were busy (#49).
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import ceilings, cpu, flops, probe
from ..catalog import framework_name
from . import fmt
from .cells import cell, header
from .finding import Finding
from .media import wl_name
from .model import at_faster_mode, best_of, fastest_by_group


def machines(sources) -> dict:
    """{source folder: its machine.json, or None}."""
    return {str(s): probe.read(s) for s in sources}


def _all_threads(threads) -> bool:
    return threads != 1


def busy(m) -> str | None:
    """Why the machine's peak is not an idle figure (any of its candidates
    measured busy could have been the best), or None."""
    return (m or {}).get("busy") or None


def peak_for(m, threads):
    """The machine's peak a run is set against: 1 thread's for a run asked for 1,
    else the machine's best; None where the probe was not idle."""
    if not m or busy(m):
        return None
    one, every = fmt.num(m.get("peak_gflops_1")), fmt.num(m.get("peak_gflops_all"))
    if not _all_threads(threads):
        return one
    got = [v for v in (one, every) if v]
    return max(got) if got else None


def ceiling_entry(m, fw: str, version) -> dict | None:
    """The run's framework's entry of machine.json's "frameworks": the pinned
    version's where several versions ran, else the framework's own."""
    fws = (m or {}).get("frameworks") or {}
    same = [e for e in fws.values() if isinstance(e, dict) and e.get("framework") == fw]
    exact = [e for e in same if version and e.get("version") == version]
    if exact:
        return exact[0]
    if isinstance(fws.get(fw), dict):
        return fws[fw]
    return same[0] if same else None


def ceiling_for(m, fw: str, version, threads):
    """The framework's GEMM ceiling for a run: its 1-thread figure for a run on
    1 thread, else its best over thread counts; None where not measured or
    measured busy (never a ceiling: `ceiling_busy` says why)."""
    e = ceiling_entry(m, fw, version)
    if not e or e.get("busy"):
        return None
    if not _all_threads(threads):
        return fmt.num(e.get("gflops_1"))
    got = [v for v in (fmt.num(e.get(k)) for k in ("gflops_best", "gflops_1", "gflops_all")) if v]
    return max(got) if got else None


def ceiling_busy(m, fw: str, version) -> str | None:
    e = ceiling_entry(m, fw, version)
    return (e or {}).get("busy") or None


@dataclass(frozen=True)
class Peak:
    """A run's training FLOPs per sample, its GFLOP/s and its shares of the
    machine's peak and of its framework's own GEMM ceiling; None where not measured."""
    flops: float | None = None
    gflops: float | None = None
    peak: float | None = None
    peak_share: float | None = None
    ceiling: float | None = None
    ceiling_share: float | None = None
    peak_busy: str | None = None     # why the peak is not available: the probe was not idle
    ceiling_busy: str | None = None  # why the framework's ceiling is not available

    @property
    def over_limit(self) -> bool:
        """Above 100% of a limit: a figure to distrust (the summary's alert says why)."""
        return any((v or 0) > 1 for v in (self.peak_share, self.ceiling_share))


NO_PEAK = Peak()


def peak_of(w, by_source) -> Peak:
    """Row w's Peak from its source folder's machine record (`machines`)."""
    r = w.result
    f = flops.training_flops(w.workload, r.params)
    sps = w.samples_per_s if w.ok else None
    m, threads = by_source.get(str(r.source)), fmt.num(r.params.get("threads"))
    if w.device != "cpu":
        m = None  # the probe measured this machine's CPU; a GPU's own figures are not built yet
    gflops = sps * f / 1e9 if sps and f else None
    peak, ceiling = peak_for(m, threads), ceiling_for(m, w.fw, r.framework_version, threads)
    return Peak(f, gflops, peak, gflops / peak if gflops and peak else None,
                ceiling, gflops / ceiling if gflops and ceiling else None,
                busy(m), ceiling_busy(m, w.fw, r.framework_version) if m else None)


def gflops_cell(p: Peak, S):
    if p.gflops is None:
        return cell(fmt.NA, None, "na")
    shares = [f"{fmt.sig(v * 100, 2)}%" if v is not None else fmt.NA for v in (p.peak_share, p.ceiling_share)]
    text = fmt.sig(p.gflops) + f" ({shares[0]} · {shares[1]})"
    limit = lambda v, why: f"{fmt.sig(v)} GFLOP/s" if v else S("na_busy", why=why) if why else fmt.NA  # noqa: E731
    return cell(text, p.gflops, "flag" if p.over_limit else "",  # flagged: the summary's alert says why
                S("tip_gflops", flops=fmt.integer(p.flops), peak=limit(p.peak, p.peak_busy),
                  ceiling=limit(p.ceiling, p.ceiling_busy)))


# ------------------------------------------------------------------ the environment section
def peak_text(by_source, S) -> list:
    """Each source's measured peak, the library that reached it, how, and the caps."""
    out = []
    for src, m in by_source.items():
        if not m:
            continue
        meth = m.get("method") or {}
        out.append(S("peak_line", one=fmt.sig(m.get("peak_gflops_1")), all=fmt.sig(m.get("peak_gflops_all")),
                     threads=m.get("threads_all", "?"), bw=fmt.sig(m.get("bandwidth_gbs")),
                     lib=m.get("peak_library_all") or f"numpy ({meth.get('blas', '?')})",
                     load=", ".join(str(x) for x in m.get("load_before") or []) or fmt.NA,
                     method=meth.get("matmul", "?"), copy=meth.get("copy", "?"), when=m.get("measured", "?")))
        if m.get("reused_from"):
            out.append(S("peak_reused", path=m["reused_from"]))
        if busy(m):
            out.append(S("peak_busy", items=m["busy"], load=", ".join(str(x) for x in m.get("load_before") or [])
                         or fmt.NA, threads=m.get("threads_all", "?")))
        if "isa_caps" not in m:
            out.append(S("peak_caps_unknown"))
        elif _acting(m, m["isa_caps"]):
            out.append(S("peak_caps", caps="; ".join(f"{k}={v} ({cpu.describe(k)})"
                                                     for k, v in _acting(m, m["isa_caps"]).items())))
    return out or [S("peak_none")]


def gemm_table(by_source, S) -> dict | None:
    """Each framework's own float32 GEMM at 1 thread and at all, beside numpy's
    (uncapped), each with its share of the machine's peak; None where no
    machine.json measured them."""
    body = []
    for src, m in by_source.items():
        if not m or not m.get("frameworks"):
            continue
        n = m.get("threads_all", "?")
        rows = [("numpy", m.get("method", {}).get("numpy"), f"numpy.matmul ({m.get('method', {}).get('blas', '?')})",
                 m.get("numpy_gflops_1"), m.get("numpy_gflops_all"), {}, S("gemm_uncapped"))]
        rows += [(framework_name(e.get("framework", k)), e.get("version"), e.get("op") or fmt.NA, e.get("gflops_1"),
                  e.get("gflops_all"), e.get("isa_caps") or {},
                  e.get("error") or (S("gemm_busy", why=e["busy"]) if e.get("busy") else "")
                  or (S("gemm_not_measured", cols=", ".join(S("col_gemm_1") if c == "1" else S("col_gemm_all", n=c)
                                                           for c in e["not_measured"])) if e.get("not_measured") else ""))
                 for k, e in m["frameworks"].items()]
        for name, version, op, one, every, caps, note in rows:
            body.append([cell(name, name), cell(version or fmt.NA), cell(op),
                         _gemm_cell(one, None if busy(m) else m.get("peak_gflops_1")),
                         _gemm_cell(every, None if busy(m) else m.get("peak_gflops_all")),
                         cell(", ".join(f"{k}={v}" for k, v in _acting(m, caps).items()) or S("gemm_no_caps")),
                         cell(note)])
    if not body:
        return None
    return {"id": "table-gemm", "sortable": True, "rows": body, "row_ids": [r[0]["t"] for r in body],
            "headers": [header(S("col_framework")), header(S("col_version")), header(S("col_gemm_op")),
                        header(S("col_gemm_1"), True, S("tip_gemm")), header(S("col_gemm_all", n=n), True, S("tip_gemm")),
                        header(S("col_gemm_caps"), False, S("tip_gemm_caps")), header(S("col_notes"))]}


def _acting(m, caps: dict) -> dict:
    """The caps that act on the record's machine (an older machine.json may list
    NVPL's on x86, where nothing loads NVPL)."""
    machine = ((m or {}).get("cpu") or {}).get("machine")
    return {k: v for k, v in (caps or {}).items() if cpu.acts_here(k, machine)}


def _gemm_cell(v, peak):
    v, peak = fmt.num(v), fmt.num(peak)
    if v is None:
        return cell(fmt.NA, None, "na")
    return cell(fmt.sig(v) + (f" ({fmt.sig(v / peak * 100, 2)}%)" if peak else ""), v)


# ------------------------------------------------------------------ the summary
def peak_findings(wl, wrows, S, an) -> list:
    """The run closest to the machine's limit (with its share of its own
    framework's ceiling); where the slower frameworks' gaps lie; an alert for
    any share above 100%."""
    from .scaling import batch_series, overhead_bound
    got = [w for w in wrows if an.peak(w).peak_share is not None]
    if not got:
        return []
    out = [Finding(kind="speed", text=S("finding_over_peak", workload=wl_name(S, wl), run=w.label,
                                       gflops=fmt.sig(an.peak(w).gflops), items=_over_items(w, an.peak(w), S)),
            anchor="peak", alert=True) for w in wrows if an.peak(w).over_limit]
    best = max(got, key=lambda w: an.peak(w).peak_share)
    p = an.peak(best)
    text = S("finding_peak", workload=wl_name(S, wl), run=best.label, gflops=fmt.sig(p.gflops),
             share=fmt.sig(p.peak_share * 100, 2), peak=fmt.sig(p.peak),
             own=fmt.sig(p.ceiling_share * 100, 2) if p.ceiling_share is not None else fmt.NA)
    # one claim a line: where each slower run loses, and the overhead bound, are its sub-points
    details = list(gap_items(wrows, S, an))
    bound = overhead_bound(wrows, an)
    if bound:
        items = S.join(S("overhead_item", run=g["label"], lo=fmt.sig(a * 100, 2), hi=fmt.sig(b * 100, 2),
                         b0=fmt.integer(g["points"][0][0]), b1=fmt.integer(g["points"][-1][0])) for g, a, b in bound)
        details.append(S("finding_overhead", items=items, n=len(bound), of=len(batch_series(wrows))))
    return out + [Finding(kind="speed", text=text, details=tuple(details), anchor=f"wl-{wl}")]


def _over_items(w, p: Peak, S) -> str:
    parts = []
    if (p.peak_share or 0) > 1:
        parts.append(S("over_peak_item", what=S("over_machine"), limit=fmt.sig(p.peak), share=fmt.sig(p.peak_share * 100, 3)))
    if (p.ceiling_share or 0) > 1:
        parts.append(S("over_peak_item", what=S("over_own", fw=w.fw_name), limit=fmt.sig(p.ceiling),
                       share=fmt.sig(p.ceiling_share * 100, 3)))
    return S.join(parts)


def gap_items(wrows, S, an) -> list:
    """For each run measurably slower than its ranking's fastest: whether the gap
    lies in its framework's kernels, around them, or both (ceilings.gap_kind)."""
    best = fastest_by_group(wrows)
    ranked = at_faster_mode(wrows)  # as the speed ranking: a framework at its faster mode only
    out = []
    for w in ranked:
        b = best_of(w, best)
        if b is None or w is b or an.verdict(w) != "slower":
            continue
        pw, pb = an.peak(w), an.peak(b)
        kind = ceilings.gap_kind(pw.ceiling_share, pb.ceiling_share, pw.ceiling, pb.ceiling)
        if kind:
            out.append(S("gap_" + kind, run=w.label, fastest=b.label, own=fmt.sig(pw.ceiling),
                         best=fmt.sig(pb.ceiling), share=fmt.sig((pw.ceiling_share or 0) * 100, 2),
                         best_share=fmt.sig((pb.ceiling_share or 0) * 100, 2)))
    return out

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
"""
from __future__ import annotations

from .. import ceilings, cpu, flops, probe
from ..catalog import framework_name
from . import fmt
from .cells import cell, header
from .media import wl_name
from .model import at_faster_mode, best_of, fastest_by_group


def machines(sources) -> dict:
    """{source folder: its machine.json, or None}."""
    return {str(s): probe.read(s) for s in sources}


def _all_threads(threads) -> bool:
    return threads != 1


def peak_for(m, threads):
    """The machine's peak a run is set against: 1 thread's for a run asked for 1,
    else the machine's best."""
    if not m:
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
    e = ceiling_entry(m, fw, version)
    return fmt.num(e.get("gflops_1" if not _all_threads(threads) else "gflops_all")) if e else None


def attach_peak(rows, by_source) -> None:
    """w["gflops"], w["peak"], w["peak_share"], w["ceiling"], w["ceiling_share"]
    (None where not measured)."""
    for w in rows:
        r = w.result
        f = flops.training_flops(w["workload"], r.params)
        sps = w["samples_per_s"] if w["ok"] else None
        m, threads = by_source.get(str(r.source)), fmt.num(r.params.get("threads"))
        if w["device"] != "cpu":
            m = None  # the probe measured this machine's CPU; a GPU's own figures are not built yet
        w["flops"] = f
        w["gflops"] = sps * f / 1e9 if sps and f else None
        w["peak"] = peak_for(m, threads)
        w["peak_share"] = w["gflops"] / w["peak"] if w["gflops"] and w["peak"] else None
        w["ceiling"] = ceiling_for(m, w["fw"], r.framework_version, threads)
        w["ceiling_share"] = w["gflops"] / w["ceiling"] if w["gflops"] and w["ceiling"] else None


def over_limit(w) -> bool:
    return any((w.get(k) or 0) > 1 for k in ("peak_share", "ceiling_share"))


def gflops_cell(w, S):
    if w.get("gflops") is None:
        return cell(fmt.NA, None, "na")
    shares = [f"{fmt.sig(w[k] * 100, 2)}%" if w.get(k) is not None else fmt.NA for k in ("peak_share", "ceiling_share")]
    text = fmt.sig(w["gflops"]) + f" ({shares[0]} · {shares[1]})"
    return cell(text, w["gflops"], "flag" if over_limit(w) else "",  # flagged: the summary's alert says why
                S("tip_gflops", flops=fmt.integer(w["flops"]), peak=fmt.sig(w["peak"]) if w["peak"] else fmt.NA,
                  ceiling=fmt.sig(w["ceiling"]) if w.get("ceiling") else fmt.NA))


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
        if "isa_caps" not in m:
            out.append(S("peak_caps_unknown"))
        elif m["isa_caps"]:
            out.append(S("peak_caps", caps="; ".join(f"{k}={v} ({cpu.describe(k)})" for k, v in m["isa_caps"].items())))
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
                  e.get("gflops_all"), e.get("isa_caps") or {}, e.get("error") or "")
                 for k, e in m["frameworks"].items()]
        for name, version, op, one, every, caps, note in rows:
            body.append([cell(name, name), cell(version or fmt.NA), cell(op),
                         _gemm_cell(one, m.get("peak_gflops_1")), _gemm_cell(every, m.get("peak_gflops_all")),
                         cell(", ".join(f"{k}={v}" for k, v in caps.items()) or S("gemm_no_caps")), cell(note)])
    if not body:
        return None
    return {"id": "table-gemm", "sortable": True, "rows": body, "row_ids": [r[0]["t"] for r in body],
            "headers": [header(S("col_framework")), header(S("col_version")), header(S("col_gemm_op")),
                        header(S("col_gemm_1"), True, S("tip_gemm")), header(S("col_gemm_all", n=n), True, S("tip_gemm")),
                        header(S("col_gemm_caps"), False, S("tip_gemm_caps")), header(S("col_notes"))]}


def _gemm_cell(v, peak):
    v, peak = fmt.num(v), fmt.num(peak)
    if v is None:
        return cell(fmt.NA, None, "na")
    return cell(fmt.sig(v) + (f" ({fmt.sig(v / peak * 100, 2)}%)" if peak else ""), v)


# ------------------------------------------------------------------ the summary
def peak_findings(wl, wrows, S) -> list:
    """The run closest to the machine's limit (with its share of its own
    framework's ceiling); where the slower frameworks' gaps lie; an alert for
    any share above 100%."""
    from .scaling import batch_series, overhead_bound
    got = [w for w in wrows if w.get("peak_share") is not None]
    if not got:
        return []
    out = [{"kind": "speed", "text": S("finding_over_peak", workload=wl_name(S, wl), run=w["label"],
                                       gflops=fmt.sig(w["gflops"]), items=_over_items(w, S)),
            "anchor": "peak", "alert": True} for w in wrows if over_limit(w)]
    best = max(got, key=lambda w: w["peak_share"])
    text = S("finding_peak", workload=wl_name(S, wl), run=best["label"], gflops=fmt.sig(best["gflops"]),
             share=fmt.sig(best["peak_share"] * 100, 2), peak=fmt.sig(best["peak"]),
             own=fmt.sig(best["ceiling_share"] * 100, 2) if best.get("ceiling_share") is not None else fmt.NA)
    gaps = gap_items(wrows, S)
    if gaps:
        text += " " + S("finding_gaps", items=S.join(gaps))
    bound = overhead_bound(wrows)
    if bound:
        items = S.join(S("overhead_item", run=g["label"], lo=fmt.sig(a * 100, 2), hi=fmt.sig(b * 100, 2),
                         b0=fmt.integer(g["points"][0][0]), b1=fmt.integer(g["points"][-1][0])) for g, a, b in bound)
        text += " " + S("finding_overhead", items=items, n=len(bound), of=len(batch_series(wrows)))
    return out + [{"kind": "speed", "text": text, "anchor": f"wl-{wl}"}]


def _over_items(w, S) -> str:
    parts = []
    if (w.get("peak_share") or 0) > 1:
        parts.append(S("over_peak_item", what=S("over_machine"), limit=fmt.sig(w["peak"]), share=fmt.sig(w["peak_share"] * 100, 3)))
    if (w.get("ceiling_share") or 0) > 1:
        parts.append(S("over_peak_item", what=S("over_own", fw=w["fw_name"]), limit=fmt.sig(w["ceiling"]),
                       share=fmt.sig(w["ceiling_share"] * 100, 3)))
    return S.join(parts)


def gap_items(wrows, S) -> list:
    """For each run measurably slower than its ranking's fastest: whether the gap
    lies in its framework's kernels, around them, or both (ceilings.gap_kind)."""
    best = fastest_by_group(wrows)
    ranked = at_faster_mode(wrows)  # as the speed ranking: a framework at its faster mode only
    out = []
    for w in ranked:
        b = best_of(w, best)
        if b is None or w is b or (w.get("interval") or {}).get("verdict") != "slower":
            continue
        kind = ceilings.gap_kind(w.get("ceiling_share"), b.get("ceiling_share"), w.get("ceiling"), b.get("ceiling"))
        if kind:
            out.append(S("gap_" + kind, run=w["label"], fastest=b["label"], own=fmt.sig(w.get("ceiling")),
                         best=fmt.sig(b.get("ceiling")),
                         share=fmt.sig((w.get("ceiling_share") or 0) * 100, 2),
                         best_share=fmt.sig((b.get("ceiling_share") or 0) * 100, 2)))
    return out

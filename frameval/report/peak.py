"""How far each run is from the limit (#28, #35).

Every row gets its achieved GFLOP/s (samples/s x the workload's required FLOPs
per training sample, frameval/flops.py) and its share of this machine's peak
(the best float32 GEMM of numpy's BLAS, uncapped, and every framework's own:
`<out>/machine.json`, frameval/probe.py, frameval/ceilings.py) at the run's
thread count: the physical limit. What a run is set against in its own
framework is the sum of that framework's layer times at the run's shapes
(`--layers`, report/layers.py), never one GEMM figure: a framework's matrix
product and its convolutions can run on different libraries (MXNet: its own
BLAS, and oneDNN), so a GEMM is no ceiling for a convolution (#66). The
environment section shows the GEMM figures as the machine's, how they were
measured and the instruction-set caps that were set; the summary names the
run closest to the limit, says per slower framework whether its gap to the
fastest lies in its kernels or around them (from the layer times alone), and
raises an alert for any share above 100%, which is never printed silently.

A figure the probe could not measure idle (machine.json's "busy", each
framework entry's "busy") is a lower bound: no share, alert or gap diagnosis
is built on it; the cell reads "not available (probe measured at ...)" and
the environment section says once which figures were busy (#49).
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import cpu, flops, layers, noise, probe
from ..catalog import framework_name
from . import fmt
from .cells import cell, header
from .finding import Finding
from .layers import NO_KERNELS, Kernels, diagnosis, kernels_of
from .media import wl_name
from .model import arithmetic, at_faster_mode, best_of, fastest_by_group


def machines(sources) -> dict:
    """{source folder: its machine.json (with its layers.json as "layer_timing" and its
    noise.json as "noise"), or None}."""
    out = {}
    for s in sources:
        m, timing, measured = probe.read(s), layers.read(s), noise.read(s)
        out[str(s)] = dict(m or {}, layer_timing=timing, noise=measured) if timing or measured else m
    return out


def _all_threads(threads) -> bool:
    return threads != 1


def busy(m) -> str | None:
    """Why the machine's peak is not an idle figure (any of its candidates
    measured busy could have been the best), or None."""
    return (m or {}).get("busy") or None


def peak_for(m, threads, arithmetic: str = "float32"):
    """The machine's peak a run is set against: 1 thread's for a run asked for 1,
    else the machine's best; None where the probe was not idle. A bfloat16 run is
    set against the bfloat16 peak (the frameworks' own bfloat16 products, #69), None
    where the CPU has no bfloat16 units (emulated: no peak of anything)."""
    if not m or busy(m):
        return None
    pre = "bf16_peak" if arithmetic == "bfloat16" else "peak"
    one, every = fmt.num(m.get(f"{pre}_gflops_1")), fmt.num(m.get(f"{pre}_gflops_all"))
    if not _all_threads(threads):
        return one
    got = [v for v in (one, every) if v]
    return max(got) if got else None


@dataclass(frozen=True)
class Peak:
    """A run's training FLOPs per sample, its GFLOP/s, its share of the
    machine's peak, and its step against its own framework's layer times
    (report/layers.py); None where not measured."""
    flops: float | None = None
    gflops: float | None = None
    peak: float | None = None
    peak_share: float | None = None
    peak_busy: str | None = None     # why the peak is not available: the probe was not idle
    kernels: Kernels = NO_KERNELS

    @property
    def over_limit(self) -> bool:
        """Above 100% of the machine's peak, or a step faster than its own layers timed alone:
        a figure to distrust (the summary's alert says why)."""
        return (self.peak_share or 0) > 1 or self.kernels.exceeded


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
    peak = peak_for(m, threads, arithmetic(w))
    return Peak(f, gflops, peak, gflops / peak if gflops and peak else None, busy(m), kernels_of(w, m))


def gflops_cell(p: Peak, S):
    if p.gflops is None:
        return cell(fmt.NA, None, "na")
    k = p.kernels
    shares = [f"{fmt.sig(v * 100, 2)}%" if v is not None else fmt.NA for v in (p.peak_share, k.share)]
    text = fmt.sig(p.gflops) + f" ({shares[0]} · {shares[1]})"
    peak = f"{fmt.sig(p.peak)} GFLOP/s" if p.peak else S("na_busy", why=p.peak_busy) if p.peak_busy else fmt.NA
    own = S("tip_kernels", kernels=_ms(k.kernel_s), step=_ms(k.step_s)) if k.share else S("tip_kernels_none")
    return cell(text, p.gflops, "flag" if p.over_limit else "",  # flagged: the summary's alert says why
                S("tip_gflops", flops=fmt.integer(p.flops), peak=peak, kernels=own))


def _ms(s) -> str:
    return f"{fmt.sig(s * 1e3)} ms" if s else fmt.NA


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
        # what makes the probe's idleness and the peak checkable by a reader (#67): the other
        # processes' share of the CPU while it ran, and the CPU's instruction sets beside its name
        out.append(S("peak_idle_isa", other=_other_share(m), cpu=(m.get("cpu") or {}).get("model") or fmt.NA,
                     isa=", ".join((m.get("cpu") or {}).get("isa") or []) or fmt.NA))
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


def _other_share(m) -> str:
    """The largest share of the CPU other processes took while the numpy peak's figures were timed."""
    shares = [f.get("other_share") for f in (m.get("numpy_figures") or {}).values()
              if isinstance(f, dict) and isinstance(f.get("other_share"), (int, float))]
    return f"{max(shares) * 100:.1f}%" if shares else fmt.NA


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
    """The run closest to the machine's limit (with the share of its step in its
    own framework's layers); where the slower frameworks' gaps lie; an alert
    for any share above 100%."""
    from .scaling import batch_series, overhead_bound
    got = [w for w in wrows if an.peak(w).peak_share is not None]
    if not got:
        return []
    out = [_over(wl, w, an.peak(w), S) for w in wrows if an.peak(w).over_limit]
    best = max(got, key=lambda w: an.peak(w).peak_share)
    p = an.peak(best)
    text = S("finding_peak", workload=wl_name(S, wl), run=best.label, gflops=fmt.sig(p.gflops),
             share=fmt.sig(p.peak_share * 100, 2), peak=fmt.sig(p.peak),
             own=S("finding_peak_own", share=fmt.sig(p.kernels.share * 100, 2)) if p.kernels.share is not None else "")
    # one claim a line: where each slower run loses, and the overhead bound, are its sub-points
    details = list(gap_items(wrows, S, an))
    bound = overhead_bound(wrows, an)
    if bound:
        items = S.join(S("overhead_item", run=g["label"], lo=fmt.sig(a * 100, 2), hi=fmt.sig(b * 100, 2),
                         b0=fmt.integer(g["points"][0][0]), b1=fmt.integer(g["points"][-1][0])) for g, a, b in bound)
        details.append(S("finding_overhead", items=items, n=len(bound), of=len(batch_series(wrows))))
    return out + [Finding(kind="speed", text=text, details=tuple(details), anchor=f"wl-{wl}")]


def _over(wl, w, p: Peak, S) -> Finding:
    """The alert for a share above 100%: of the machine's peak, or of the run's own layers."""
    if (p.peak_share or 0) > 1:
        item = S("over_peak_item", what=S("over_machine"), limit=fmt.sig(p.peak), share=fmt.sig(p.peak_share * 100, 3))
        return Finding(kind="speed", text=S("finding_over_peak", workload=wl_name(S, wl), run=w.label,
                                            gflops=fmt.sig(p.gflops), items=item), anchor="peak", alert=True)
    k = p.kernels
    return Finding(kind="speed", text=S("finding_over_layers", workload=wl_name(S, wl), run=w.label,
                                        step=_ms(k.step_s), kernels=_ms(k.kernel_s), share=fmt.sig(k.share * 100, 3)),
                   anchor=f"layers-{wl}", alert=True)


def gap_items(wrows, S, an) -> list:
    """For each run measurably slower than its ranking's fastest: whether the gap
    lies in its framework's kernels or around them, from the layer times
    (report/layers.py); where no layer was timed, one line that says so."""
    best = fastest_by_group(wrows)
    ranked = at_faster_mode(wrows)  # as the speed ranking: a framework at its faster mode only
    out, untimed = [], False
    for w in ranked:
        b = best_of(w, best)
        if b is None or w is b or an.verdict(w) != "slower":
            continue
        kw, kb = an.peak(w).kernels, an.peak(b).kernels
        text = diagnosis(w, b, kw, kb, S) if kw.entry and kb.entry else None
        if text:
            out.append(text)
        else:
            untimed = True
    return out + ([S("gap_no_layers")] if untimed and not out else [])


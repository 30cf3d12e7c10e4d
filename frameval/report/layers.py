"""Why a framework is slower, layer by layer (#66): each run set against its
own framework's layer times at its shapes (`<out>/layers.json`,
frameval/layers.py), and each workload's per-layer table.

A run's kernel time is the sum of its framework's layer times for one step
(forward and the backward each use needs, times the uses); its share of the
run's measured step is the time the step spends in the kernels. A gap to the
fastest run is "in the kernels" only where the slower framework's kernel time
alone exceeds the fastest run's whole step; otherwise it lies around them
(optimizer, data, dispatch, graph breaks). No diagnosis rests on a GEMM figure.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import layers, speed
from ..catalog import framework_name
from . import fmt
from .cells import cell, header
from .model import run_windows

SUB_MARK = "†"


@dataclass(frozen=True)
class Kernels:
    """A run's step against its own framework's layer times; None where not measured."""
    kernel_s: float | None = None   # the sum of its framework's layer times for one step
    step_s: float | None = None     # the run's measured step: batch / samples per second
    entry: dict | None = None       # its layers.json entry
    timing: dict | None = None      # the whole layers.json, for the other frameworks' same layers
    step_hi_s: float | None = None  # the step's upper 95% bound (its rate interval's lower end)

    @property
    def share(self) -> float | None:
        return self.kernel_s / self.step_s if self.kernel_s and self.step_s else None

    @property
    def exceeded(self) -> bool:
        """The layers timed alone take longer than the whole step, beyond the step's own noise:
        over its 95% interval's upper end (the between-run spread of the machine that made
        it, as every ratio's interval). MegEngine LeNet's 72.1 ms of layers against its 71.3 ms
        step is within that noise; 86.2 against 71.8 ms is not."""
        hi = self.step_hi_s or self.step_s
        return bool(self.kernel_s and hi and self.kernel_s > hi)


NO_KERNELS = Kernels()


def threads_of(r, m) -> int | None:
    t = fmt.num(r.params.get("threads"))
    return int(t) if t else (m or {}).get("threads_all")


def kernels_of(w, m) -> Kernels:
    """Row w's Kernels from its source's machine record (report/peak.machines: "layer_timing")."""
    timing = (m or {}).get("layer_timing")
    if not timing or w.device != "cpu" or not w.ok:
        return NO_KERNELS
    r = w.result
    batch = fmt.num(r.params.get("batch_size"))
    e = layers.entry_for(timing, w.fw, w.workload, int(batch) if batch else None, threads_of(r, m), w.mode,
                         r.framework_version)
    if e is None or not layers.same_layers(e, w.workload, r.params):  # a GRU run is not the LSTM's layers
        return NO_KERNELS
    step = batch / w.samples_per_s if batch and w.samples_per_s else None
    measured = (m or {}).get("noise") or {}
    iv = speed.rate_interval(run_windows(w), measured.get("sd") or speed.BETWEEN_RUN_SD)
    hi = batch / iv["lo"] if batch and iv and iv["lo"] else None
    return Kernels(layers.step_kernel_s(e), step, e, timing, hi)


# ------------------------------------------------------------------ the diagnosis
def _worst_layer(e: dict, others: list) -> tuple:
    """(layer name, its seconds in e, the fastest framework's seconds, that framework) for the layer
    whose time in e exceeds the fastest framework's by the most."""
    best = None
    for i, row in enumerate(e.get("ops") or []):
        mine = layers.op_time(row, floor=layers.floor_s(e))
        theirs = [(layers.op_time(o["ops"][i], floor=layers.floor_s(o)), o) for o in others if i < len(o.get("ops") or [])]
        theirs = [(t, o) for t, o in theirs if t is not None]
        if mine is None or not theirs:
            continue
        t, o = min(theirs, key=lambda x: x[0])
        if best is None or mine - t > best[1] - best[2]:
            best = (row["name"], mine, t, framework_name(o["framework"]))
    return best


def diagnosis(w, b, kw: Kernels, kb: Kernels, S) -> str | None:
    """Where run w loses to the fastest run b, from the layer times: in the kernels
    where w's kernel time alone exceeds b's whole step, else around them."""
    if kw.kernel_s is None or kb.step_s is None or kw.step_s is None:
        return None
    if kw.kernel_s > kb.step_s:
        same = [e for e in (kw.timing or {}).get("entries") or [] if "error" not in e and e is not kw.entry and (
            e.get("workload"), e.get("batch"), e.get("threads"), e.get("mode")) == (
            kw.entry["workload"], kw.entry["batch"], kw.entry["threads"], kw.entry["mode"])]
        worst = _worst_layer(kw.entry, same)
        if worst:
            return S("gap_layers_kernels", run=w.label, fastest=b.label, kernels=_ms(kw.kernel_s),
                     step=_ms(kb.step_s), layer=worst[0], mine=_ms(worst[1]), theirs=_ms(worst[2]), fw=worst[3])
    return S("gap_layers_around", run=w.label, fastest=b.label, kernels=_ms(kw.kernel_s), step=_ms(kw.step_s),
             outside=_ms(max(kw.step_s - kw.kernel_s, 0.0)), best_step=_ms(kb.step_s))


def _ms(s: float) -> str:
    return f"{fmt.sig(s * 1e3)} ms"


# ------------------------------------------------------------------ the per-layer table
def _entries(wrows, an) -> list:
    """[(column label, entry, its run's Peak)] of the workload's runs that have layer times, in row order."""
    out, seen = [], set()
    for w in wrows:
        p = an.peak(w)
        e = p.kernels.entry
        if e is not None and id(e) not in seen:
            seen.add(id(e))
            out.append((w.label, e, p))
    return out


def _cell(row: dict, batch: int, peak, fastest: float | None, floor: float) -> dict:
    t = layers.op_time(row, floor=floor)
    if t is None:
        err = next((u["error"] for u in row.get("uses") or [] if "error" in u), "?")
        return cell(fmt.NA, None, "flag", err, md=f"failed: {err}")
    f = layers.op_flops(row) * batch
    parts = [f"{fmt.sig(t * 1e3)} ms"]
    if f and t > 0:  # a layer no slower than the empty call has no rate to show
        parts.append(f"{fmt.sig(f / t / 1e9)} GFLOP/s" + (f" ({fmt.sig(f / t / 1e9 / peak * 100, 2)}%)" if peak else ""))
    title = f"{len(row.get('uses') or [])} use(s) a step; less {fmt.sig(floor * 1e3)} ms a call, the framework's empty call"
    if row.get("substitute"):
        parts[0] += SUB_MARK
        bt = layers.op_time(row, "builtin", floor)
        err = next((u["error"] for u in row.get("builtin") or [] if "error" in u), None)
        title += f"; {SUB_MARK} {row['substitute']}; built-in: " + (f"{fmt.sig(bt * 1e3)} ms" if bt else f"failed ({err})")
    slow = bool(fastest) and t > 1.5 * fastest
    if slow:
        parts.append(f"×{fmt.sig(t / fastest, 2)}")
    return cell(" · ".join(parts), t, "warn" if slow else "", title)


def layer_table(wl: str, wrows, S, an) -> dict | None:
    """Rows are layers, columns are the runs' frameworks (and modes): ms per
    step, GFLOP/s and share of the machine's peak; the slowest cell of each row
    marked with how many times the fastest it takes. Then the sum of the
    layers, the measured step and what lies outside the layers. None where no
    run of the workload has layer times."""
    cols = _entries(wrows, an)
    if not cols:
        return None
    rows = []
    for i, op in enumerate(cols[0][1].get("ops") or []):
        times = [layers.op_time(e["ops"][i], floor=layers.floor_s(e)) for _, e, _ in cols]
        ok = [t for t in times if t is not None]
        fastest = min(ok) if len(ok) > 1 else None
        rows.append([cell(op["name"], op["name"])] + [_cell(e["ops"][i], e["batch"], p.peak, fastest, layers.floor_s(e))
                                                      for _, e, p in cols])
    sums, steps = [p.kernels.kernel_s for *_, p in cols], [p.kernels.step_s for *_, p in cols]
    rows.append([cell(S("layers_sum"))] + [cell(_ms(s) if s else fmt.NA, s, "" if s else "na") for s in sums])
    rows.append([cell(S("layers_step"))] + [cell(_ms(s) if s else fmt.NA, s, "" if s else "na") for s in steps])
    rows.append([cell(S("layers_outside"))] + [
        cell(f"{_ms(st - su)} ({fmt.sig((st - su) / st * 100, 2)}%)", st - su) if su and st else cell(fmt.NA, None, "na")
        for su, st in zip(sums, steps)])
    return {"id": f"table-layers-{wl}", "sortable": False, "rows": rows, "row_ids": [r[0]["t"] for r in rows],
            "headers": [header(S("col_layer"))] + [header(label, True, e.get("how") or "") for label, e, _ in cols],
            "intro": S("layers_intro", batch=" / ".join(sorted({str(e["batch"]) for _, e, _ in cols})),
                       threads=" / ".join(sorted({str(e["threads"]) for _, e, _ in cols})))}


# Layers drawn one by one in the chart; the rest of a workload's layers make one segment.
CHART_LAYERS = 7


def layer_chart(wl: str, wrows, S, an, charts, problems) -> dict | None:
    """Each run's layer times stacked beside its measured step (ms a step): the
    part of the step outside the layers shows as its own height. The layers that
    take the most time over all runs are drawn one by one, the rest as one."""
    from .media import figure, wl_name
    cols = _entries(wrows, an)
    if not cols:
        return None
    ops = cols[0][1].get("ops") or []
    per = [[(layers.op_time(e["ops"][i], floor=layers.floor_s(e)) or 0.0) * 1e3 for i in range(len(ops))]
           for _, e, _ in cols]
    order = sorted(range(len(ops)), key=lambda i: -sum(p[i] for p in per))
    top, rest = order[:CHART_LAYERS], order[CHART_LAYERS:]
    stacks = [(ops[i]["name"], [p[i] for p in per]) for i in top]
    if rest:
        stacks.append((S("layers_chart_rest", n=len(rest)), [sum(p[i] for i in rest) for p in per]))
    steps = [(p.kernels.step_s or 0.0) * 1e3 for *_, p in cols]
    cap = S("chart_layers", workload=wl_name(S, wl))
    return figure(problems, S, cap, charts.stacked_vs_step, f"{wl}-layers", cap, S("axis_ms_step"),
                  [label for label, _, _ in cols], stacks, steps, S("layers_step"))

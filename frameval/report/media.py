"""The report's figures: per workload (speed, memory, curves, and the parts
its record's `media` hook adds: the DCGAN's GIFs and grids, the LSTM's
prediction, in frameval/workloads/<wl>/media.py) and the summary panels. Each figure is drawn under
the guard: one that fails becomes {"error": "could not draw ...", "caption"}.
Speed is samples/s, ranked highest first."""
from __future__ import annotations

from pathlib import Path

from .. import speed, stats
from ..catalog import WORKLOAD_BY_KEY
from . import fmt
from .called import quality_called, seed_spread
from .defects import SUBSTITUTE_MARK, substitutes
from .model import arithmetic, fastest_by_group, network, rank_group, run_windows, speed_ratio



def wl_name(S, wl):
    return S("wl_" + wl) if ("wl_" + wl) in S.raw else wl


def dev_suffix(S, device, devices):
    return S("dev_suffix", device=device.upper()) if len(devices) > 1 or device != "cpu" else ""


def group_suffix(S, group, wrows) -> str:
    """What tells one ranking of a workload from another: its device (where it
    is not the only CPU) and its size (where runs of several sizes are merged)."""
    device, (n, batch), arith, net = group
    text = dev_suffix(S, device, {w.device for w in wrows})
    if len({w.size for w in wrows if w.device == device}) > 1:
        text += S("size_suffix", n=fmt.integer(n) if n is not None else fmt.NA,
                  batch=fmt.integer(batch) if batch is not None else fmt.NA)
    if len({arithmetic(w) for w in wrows}) > 1:  # float32 and bfloat16 runs are ranked apart (#69)
        text += S("arith_suffix", fmt=arith)
    if len({network(w) for w in wrows}) > 1:  # an LSTM and a GRU are ranked apart (#70)
        text += S("arith_suffix", fmt=net.upper())
    return text


def ranking_groups(wrows) -> list:
    """[(group, fastest row, rows of the group)], in a stable order: the
    rankings of one workload, one per device and size."""
    out = []
    for group, best in fastest_by_group(wrows).items():
        out.append((group, best, [w for w in wrows if rank_group(w) == group]))
    return sorted(out, key=lambda x: (x[0][0], [(v is None, v or 0) for v in x[0][1]]))


def _rate_interval(w) -> tuple:
    """(low, high) samples/s of a row: its repeats' range where it has them, else the interval of
    speed.rate_interval over its windows (widened to the between-run floor)."""
    if w.steady_kind == "repeats" and w.sps_lo is not None and w.sps_hi is not None:
        return w.sps_lo, w.sps_hi
    iv = speed.rate_interval(run_windows(w))
    return (iv["lo"], iv["hi"]) if iv else (None, None)


def figure(problems, S, caption, fn, *args):
    """{"file", "caption"}, None (nothing to draw), or {"error", "caption"}."""
    f = problems.run(S("what_chart", name=caption), fn, *args,
                     default=lambda it: {"error": it["text"], "caption": caption})
    if isinstance(f, dict) or not f:
        return f or None
    return {"file": f, "caption": caption}


# ------------------------------------------------------------------ per workload
def evaluation_curve(result) -> list:
    """[(fractional epoch, quality)] at each evaluation point during training."""
    points = (result.evaluation or {}).get("points") or []
    return [(p.get("epochs"), p.get("value")) for p in points if isinstance(p, dict)]


def workload_media(wl, wrows, S, charts, name, assets_dir: Path, problems):
    out = {"charts": [], "gifs": [], "grids": [], "prediction": None, "tables": []}
    wlname = wl_name(S, wl)
    ok = [w for w in wrows if w.ok]
    # the † of a run on a substitute layer, and each run's 95% interval (one run: the between-run
    # floor, as every ratio of the report has it; never a whisker of zero width, #67)
    speed = [(w.short + (f" {SUBSTITUTE_MARK}" if substitutes(w.result) else ""), w.samples_per_s, w.fw, w.mode)
             for w in ok]
    whisk = [_rate_interval(w) for w in ok]
    cap = S("chart_speed", workload=wlname)
    out["charts"].append(figure(problems, S, cap, charts.bars, f"{wl}-speed", cap, S("axis_samples_per_s"), speed,
                                whisk, S("chart_speed_note")))
    series = [(S("series_peak_rss"), [w.result.memory_parts()["training"] for w in ok], ""),
              (S("series_mem_check"), [w.result.memory_parts()["check"] for w in ok], ""),
              (S("series_rss_import"), [w.result.rss_after_import_mb for w in ok], ""),
              (S("series_peak_device"), [w.result.peak_device_mb for w in ok], "//")]
    cap = S("chart_memory", workload=wlname)
    out["charts"].append(figure(problems, S, cap, charts.grouped_bars, f"{wl}-memory", cap, S("axis_mb"),
                                [w.short for w in ok], series))
    panels = []
    record = WORKLOAD_BY_KEY.get(wl)
    for key, ylab in (record.curves if record else ()):
        ser = [(w.label, w.fw, w.mode, [e.get(key) if isinstance(e, dict) else None for e in w.result.epochs])
               for w in wrows]
        panels.append((S("metric_" + key), S(ylab), ser))
    if record is not None and record.quality_curve:
        ser = [(w.label, w.fw, w.mode, evaluation_curve(w.result)) for w in wrows]
        panels.append((S(record.quality.label), S(record.quality.axis), ser))
    cap = S("chart_curves", workload=wlname)
    out["charts"].append(figure(problems, S, cap, charts.curves, f"{wl}-curves", panels, S("axis_epoch")))
    out["charts"] = [c for c in out["charts"] if c]
    if record is not None and record.media is not None:  # the parts a workload adds beside the common charts
        record.media(wrows, S, charts, name, assets_dir, problems, out)
    return out


# ------------------------------------------------------------------ summary
def _speed_panels(rows, wls, S, an):
    """Per workload and device: time per sample relative to the fastest (most
    samples/s) run, fastest first."""
    panels = []
    for wl in wls:
        every = [w for w in rows if w.workload == wl]
        for group, best, grows in ranking_groups([w for w in every if w.ok]):
            ranked = sorted([w for w in grows if speed_ratio(w, best) is not None], key=lambda w: -w.samples_per_s)
            items = [(w.label, speed_ratio(w, best), w.fw, w is best,
                      (an.interval(w)["lo"], an.interval(w)["hi"]) if an.interval(w) else None) for w in ranked]
            panels.append((wl_name(S, wl) + group_suffix(S, group, every), S("axis_ratio"), items))
    return panels


def _memory_panels(rows, wls, S, an):
    panels = []
    for wl in wls:
        m = sorted([(w, fmt.num(w.result.memory_parts()["training"])) for w in rows if w.workload == wl and w.ok
                    and fmt.num(w.result.memory_parts()["training"]) is not None], key=lambda x: x[1])
        if m:
            lo = m[0][1]
            panels.append((wl_name(S, wl), S("axis_mb"), [(w.label, mb, w.fw, mb == lo) for w, mb in m]))
    return panels


def _quality_panels(rows, wls, S, an):
    """Per workload, each run's quality figure (the catalog's), the best marked
    where the summary calls a best."""
    panels = []
    for wl in wls:
        workload = WORKLOAD_BY_KEY.get(wl)
        if workload is None:
            continue
        hib = workload.quality.higher_is_better
        vals = [(w,) + _quality_point(w, an) for w in rows if w.workload == wl and w.ok]
        vals = [x for x in vals if x[1] is not None]
        if not vals:
            continue
        # the best marked only where the summary calls it (findings.quality_called)
        called = quality_called(wl, [w for w in rows if w.workload == wl], an)
        b = None if hib is None or not called else (max if hib else min)(
            (v for w, v, _ in vals if w.counted), default=None)
        band = None if called or any(iv for _, _, iv in vals) else _noise_band(workload, [w for w, _, _ in vals],
                                                                                [v for _, v, _ in vals])
        if not called and band is None and not any(iv for _, _, iv in vals) and len(vals) > 1:
            continue  # the text ranks nothing and no seed noise is known to draw: a chart would rank (#67)
        panels.append((wl_name(S, wl), S(workload.quality.axis), [(w.label, v, w.fw, v == b, iv) for w, v, iv in vals],
                       band))
    return panels


def _noise_band(workload, rows, values):
    """(low, high): the values' middle, plus and minus the gap one seed's draw can make
    (stats.seed_noise of the spread measured for the data set), drawn behind the points
    where the summary ranks nothing: they sit inside it. None where no spread is known."""
    spread = seed_spread(workload, rows)
    if spread is None:
        return None
    mid, half = (min(values) + max(values)) / 2, stats.seed_noise(spread.sd)
    return (mid - half, mid + half)


def _quality_point(w, an) -> tuple:
    """(value, (lo, hi) or None): the mean over seeds with its 95% interval where
    the analysis has one (the figure the tables print), else the run's own figure."""
    q = an.quality(w) if an is not None else None
    if q is not None and q.mean is not None and q.lo is not None and q.hi is not None:
        return q.mean, (q.lo, q.hi)
    return fmt.num(w.result.quality()), None


def modes_chart(modes, S, charts, problems):
    """Graph mode's speedup over eager, one panel per workload, with the
    intervals as error bars; None where no framework ran both modes."""
    lines = (modes or {}).get("lines") or []
    if not lines:
        return None
    panels = []
    for wl in dict.fromkeys(ln["g"].workload for ln in lines):
        items = [(ln["g"].fw_name, ln["speedup"], ln["g"].fw, False,
                  (ln["interval"]["lo"], ln["interval"]["hi"]) if ln["interval"] else None)
                 for ln in lines if ln["g"].workload == wl]
        panels.append((wl_name(S, wl), S("axis_mode_speedup"), sorted(items, key=lambda it: -it[1])))
    cap = S("fig_modes")
    return figure(problems, S, cap, lambda: charts.hbar_panels("modes", panels, note=S("chart_modes_note"), line=1.0,
                                                                log=True))


def quality_caption(rows, wls, S) -> str:
    """The quality chart's caption: the figure each panel plots, read from the
    catalog (the DCGAN's is its Fréchet distance, never a loss)."""
    items = [f"{wl_name(S, wl)}: {S(WORKLOAD_BY_KEY[wl].quality.label)}" for wl in wls
             if wl in WORKLOAD_BY_KEY and any(w.workload == wl and w.ok for w in rows)]
    return S("fig_quality", items=S.join(items) or fmt.NA)


def summary_charts(rows, wls, S, charts, problems, an):
    """{"summary_speed": file or {"error"}, "summary_memory": ..., "summary_quality": ...}"""
    assets = {}
    # ratios on a log axis; quality as points with intervals on an axis fitted to the data
    for key, kind, panels, note, how in (("summary_speed", "speed", _speed_panels, S("chart_ratio_note"), {"log": True, "line": 1.0}),
                                         ("summary_memory", "memory", _memory_panels, None, {}),
                                         ("summary_quality", "quality", _quality_panels, None,
                                          {"points": True, "band_label": S("chart_seed_noise")})):
        cap = S("fig_" + kind) if kind != "quality" else quality_caption(rows, wls, S)
        f = figure(problems, S, cap, lambda: charts.hbar_panels(key.replace("_", "-"), panels(rows, wls, S, an), note=note,
                                                                **how))
        if f:
            assets[key] = f
    return assets

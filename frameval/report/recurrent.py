"""LSTM against GRU (#70, the seed's two rows "LSTM vs GRU"): where a run
trained the LSTM workload with `-p lstm.cell=gru`, the run of the same
framework, version, mode, device, machine and parameters with the LSTM is its
twin (the pairing mixed.py uses: every parameter equal but the one). Per
pair: the GRU's speed per sample over the LSTM's with its 95% interval
(speed.ratio_interval, widened by the machine's measured between-run spread),
both parameter counts, the final quality of both with their difference judged
against the seed noise (mixed._quality: paired by seed, or one seed a side
against the workload's measured spread), both times to target, CPU use, memory
added in training and the check of each."""
from __future__ import annotations

from .. import speed
from ..catalog import WORKLOAD_BY_KEY
from . import fmt
from .cells import cell, header
from .mixed import _quality, _target
from .model import REPLICATE_SKIP, run_windows
from .modes import verdict as speed_verdict

def _variant(w) -> tuple:
    """(parameter, base value, other value) of the row's workload record, () where it has none."""
    wl = WORKLOAD_BY_KEY.get(w.workload)
    return tuple(wl.variant) if wl is not None and wl.variant else ()


def side(w) -> str | None:
    """"base" (the LSTM), "other" (the GRU) or None (a workload with no variant)."""
    v = _variant(w)
    if not v:
        return None
    value = str(w.result.params.get(v[0]) or v[1])
    return "base" if value == v[1] else ("other" if value == v[2] else None)


def _twin_key(w) -> tuple:
    skip = REPLICATE_SKIP | {_variant(w)[0]}
    params = {k: v for k, v in w.result.params.items() if k not in skip}
    return (w.fw, w.version, w.workload, w.mode, w.device, w.host or "", repr(sorted(params.items())))


def pairs(rows) -> list:
    """[(GRU row, its LSTM twin or None)] for every GRU run."""
    base = {}
    for w in rows:
        if side(w) == "base":
            base.setdefault(_twin_key(w), w)
    return [(w, base.get(_twin_key(w))) for w in rows if side(w) == "other"]


def _both(g, l, get, show) -> str:
    """'LSTM's / GRU's' of one figure, n/a where not recorded."""
    def one(w):
        v = fmt.num(get(w)) if w is not None else None
        return show(v) if v is not None else fmt.NA
    return f"{one(l)} / {one(g)}"


def _check(w) -> str:
    if w is None:
        return fmt.NA
    ok = (w.result.check or {}).get("ok")
    return "✓" if ok else ("✗" if ok is False else "?")


def line(g, l, an, S) -> dict:
    out = {"g": g, "l": l, "speed": None, "interval": None, "quality": {"text": fmt.NA, "verdict": "na"}}
    if l is None or not g.counted or not l.counted:
        return out
    if g.samples_per_s and l.samples_per_s:
        out["speed"] = g.samples_per_s / l.samples_per_s
        out["interval"] = speed.ratio_interval(run_windows(g), run_windows(l), between_sd=an.between_sd(g, l))
    out["quality"] = _quality(g, l, an, S)
    return out


def _speed_text(ln) -> str:
    if ln["speed"] is None:
        return fmt.NA
    iv = ln["interval"]
    return fmt.ratio(ln["speed"]) + (f" ({fmt.interval(iv['lo'], iv['hi'])})" if iv else "")


def _row(ln, an, S) -> list:
    g, l = ln["g"], ln["l"]
    sps = lambda w: w.samples_per_s  # noqa: E731
    params = lambda w: sum(v for v in w.result.param_counts.values() if isinstance(v, (int, float)))  # noqa: E731
    return [cell(g.fw_name + (f" {g.version}" if g.version else ""), g.fw), cell(g.mode),
            cell(_both(g, l, sps, fmt.rate)), cell(_speed_text(ln), ln["speed"],
                                                   "ok" if ln["interval"] and speed_verdict(ln["interval"]) == "faster"
                                                   else ""),
            cell(_both(g, l, params, fmt.integer)), cell(ln["quality"]["text"]),
            cell(f"{_target(l, an)} / {_target(g, an)}" if l is not None else fmt.NA),
            cell(_both(g, l, lambda w: w.result.cpu_cores, lambda v: f"{v:.2f}")),
            cell(_both(g, l, lambda w: w.result.memory_parts()["training"], fmt.mb)),
            cell(f"{_check(l)} / {_check(g)}")]


def recurrent_section(rows, an, S) -> dict | None:
    """The "LSTM against GRU" section, or None where no run trained a GRU."""
    got = pairs(rows)
    if not got:
        return None
    lines = [line(g, l, an, S) for g, l in got]
    heads = [header(S("col_framework")), header(S("col_mode")), header(S("col_rnn_sps"), True),
             header(S("col_rnn_speed"), True, S("tip_rnn_speed")), header(S("col_rnn_params"), True),
             header(S("col_rnn_quality")), header(S("col_rnn_target")), header(S("col_rnn_cpu"), True),
             header(S("col_rnn_mem"), True), header(S("col_rnn_check"))]
    unpaired = [S("rnn_unpaired", run=g.label) for g, l in got if l is None]
    return {"intro": S("rnn_intro"), "notes": unpaired, "lines": lines,
            "table": {"id": "table-rnn", "headers": heads, "rows": [_row(ln, an, S) for ln in lines],
                      "sortable": True}}

"""Graph against eager, the question of the static-vs-dynamic-graph seed: where
a framework ran a workload in both modes, what graph mode bought on the steady
windows (its speedup over eager, with the 95% interval of speed.ratio_interval),
what its compile cost (graph's excess over eager in the numerical check, where
the step is first called, and in the first epoch beyond a steady one),
and after how many samples it paid that back."""
from __future__ import annotations

from .. import speed
from ..result import number
from . import fmt
from .cells import cell, header
from .model import run_windows


def mode_pairs(rows) -> list:
    """[(graph row, eager row)] of one framework, version, workload, device and host, both counted (result.counts)."""
    out = []
    for g in rows:
        if g.mode != "graph" or not g.counted or g.samples_per_s is None:
            continue
        for e in rows:
            same = all(getattr(e, k) == getattr(g, k) for k in ("fw", "version", "workload", "device", "host", "variant"))
            if same and e.mode == "eager" and e.counted and e.samples_per_s:
                out.append((g, e))
    return out


def mode_line(g, e) -> dict:
    """The speedup (eager time per sample over graph's), its interval, the
    compile cost and the break-even."""
    speedup = g.samples_per_s / e.samples_per_s
    iv = speed.ratio_interval(run_windows(g), run_windows(e))
    excess = compile_cost(g, e)
    per_sample_gain = 1 / e.samples_per_s - 1 / g.samples_per_s
    break_even = excess / per_sample_gain if excess is not None and per_sample_gain > 0 else None
    return {"g": g, "e": e, "speedup": speedup, "interval": iv, "compile_s": excess, "break_even": break_even}


def compile_cost(g, e):
    """Seconds graph mode spent compiling, as graph's excess over eager: in the
    numerical check (the first calls of the step: torch.compile, tf.function
    and jit trace there, before training) and in the first epoch beyond its
    steady one. Both modes run the same check, so the difference is the compile."""
    first, steady = number(g.result.first_epoch_s), g.steady_wall  # wall against wall: both timed whole
    e_first, e_steady = number(e.result.first_epoch_s), e.steady_wall
    if None in (first, steady, e_first, e_steady):
        return None
    epoch = max(0.0, (first - steady) - max(0.0, e_first - e_steady))
    check, e_check = (check_seconds(x.result.check) for x in (g, e))
    in_check = max(0.0, check - e_check) if None not in (check, e_check) else 0.0
    return epoch + in_check


def check_seconds(check):
    """The check's own seconds without the float64 reference's: the first run of
    a workload computes the reference (or reads the cache), its twin reads it,
    so the reference must not count as either mode's compile."""
    check = check or {}
    secs, ref = number(check.get("seconds")), number(check.get("reference_s"))
    return None if secs is None else secs - (ref or 0.0)


def mode_section(rows, S) -> dict | None:
    """The "Graph against eager" section, or None where no run had both modes."""
    lines = [mode_line(g, e) for g, e in mode_pairs(rows)]
    if not lines:
        return None
    heads = [header(S("col_framework")), header(S("col_workload")), header(S("col_mode_speedup"), True),
             header(S("col_mode_verdict")), header(S("col_mode_compile"), True), header(S("col_mode_break_even"), True)]
    table_rows = []
    for ln in lines:
        g, iv = ln["g"], ln["interval"]
        called = S("mode_" + verdict(iv)) if iv else fmt.NA
        text = fmt.ratio(ln["speedup"]) + (f" ({fmt.interval(iv['lo'], iv['hi'])})" if iv else "")
        table_rows.append([cell(g.fw_name + (f" {g.version}" if g.version else ""), g.fw),
                           cell(S("wl_" + g.workload), g.workload), cell(text, ln["speedup"]),
                           cell(called, None, "ok" if verdict(iv) == "faster" else ""),
                           cell(fmt.seconds(ln["compile_s"]), ln["compile_s"]),
                           cell(_break_even(ln, S), ln["break_even"])])
    return {"table": {"id": "table-modes", "headers": heads, "rows": table_rows, "sortable": True},
            "intro": S("modes_intro"), "lines": lines}


def verdict(iv) -> str:
    """faster / slower / within noise, for graph mode against eager (a speedup's interval)."""
    if not iv:
        return "na"
    if iv["lo"] > 1:
        return "faster"
    return "slower" if iv["hi"] < 1 else "within_noise"


def _break_even(ln, S) -> str:
    if ln["compile_s"] is None:
        return fmt.NA
    if ln["break_even"] is None:
        return S("mode_never")
    if ln["break_even"] < 1:
        return S("mode_at_once")
    return S("mode_break_even", samples=fmt.integer(ln["break_even"]))

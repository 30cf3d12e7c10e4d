"""Mixed precision against float32 (#69): where a run trained at bfloat16 (or
float16) through its framework's AMP, the run of the same framework, version,
workload, mode, device, machine and parameters at float32 is its twin (the
pairing the seeds and the parameter sweeps use: every parameter equal but the
one). Per pair: the mixed run's speed-up per sample with its 95% interval
(speed.ratio_interval, widened by the machine's measured between-run spread),
its share of the machine's bfloat16 peak, the AMP check against its bound, the
final quality against float32's, paired by seed (stats.seed_difference; one
seed a side: against the workload's measured seed spread), and both times to
target. One table sums it up per framework and device: offered, works,
speed-up, quality. A framework that declined (status not_offered) shows its
own error; a bfloat16 run on a CPU without bfloat16 units is emulated, and
nothing is ranked on it."""
from __future__ import annotations

from .. import speed, stats
from ..catalog import BY_KEY, MIXED, WORKLOAD_BY_KEY
from ..result import NOT_OFFERED
from . import fmt
from .cells import cell, header
from .model import REPLICATE_SKIP, arithmetic, emulated, run_windows
from .modes import verdict as speed_verdict

FLOAT32 = ("default", "highest")


def precision(w) -> str:
    return str(w.result.params.get("precision") or "default")


def _twin_key(w) -> tuple:
    params = {k: v for k, v in w.result.params.items() if k not in REPLICATE_SKIP and k != "precision"}
    return (w.fw, w.version, w.workload, w.mode, w.device, w.host or "", repr(sorted(params.items())))


def pairs(rows) -> list:
    """[(mixed row, its float32 twin or None)]: every mixed-precision row (not offered ones too);
    the twin at precision "default" where both float32 precisions ran."""
    float32 = {}
    for w in rows:
        if precision(w) in FLOAT32:
            float32.setdefault(_twin_key(w), []).append(w)
    out = []
    for w in rows:
        if precision(w) in MIXED:
            twins = sorted(float32.get(_twin_key(w), []), key=lambda x: FLOAT32.index(precision(x)))
            out.append((w, twins[0] if twins else None))
    return out


def _quality(m, f, an, S) -> dict:
    """The mixed run's final quality against its twin's, paired by seed."""
    wl = WORKLOAD_BY_KEY.get(m.workload)
    qm, qf = an.quality(m), an.quality(f)
    if wl is None or qm.mean is None or qf.mean is None:
        return {"text": fmt.NA, "verdict": "na"}
    higher = wl.quality.higher_is_better
    d = stats.seed_difference(qf.by_seed, qm.by_seed)
    if d["verdict"] == "too_few":  # one seed a side: the workload's measured seed spread decides
        spread = (wl.seed_spread or {}).get(wl.data_name(m.result.params))
        if spread is None:
            return {"text": S("mixed_quality_no_spread", diff=fmt.sig(d["diff"])), "verdict": "na", "diff": d["diff"]}
        half = stats.seed_noise(spread.sd)
        word = "same" if abs(d["diff"]) <= half else ("higher" if d["diff"] > 0 else "lower")
        band = S("mixed_quality_one_seed", half=fmt.sig(half))
    else:
        word = d["verdict"]
        band = S("mixed_quality_seeds", n=min(d["n_a"], d["n_b"]), lo=fmt.sig(d["lo"]), hi=fmt.sig(d["hi"]),
                 paired=S("mixed_paired") if d["paired"] else S("mixed_unpaired"))
    called = "same" if word == "same" else ("better" if (word == "higher") == bool(higher) else "worse")
    return {"text": S("mixed_quality_" + called, a=fmt.sig(qf.mean), b=fmt.sig(qm.mean), diff=fmt.sig(d["diff"]),
                      band=band), "verdict": called, "diff": d["diff"]}


def _target(w, an) -> str:
    t = an.target(w)
    if t.target is None or not t.runs:
        return fmt.NA
    med = (t.algoperf or {}).get("value") if isinstance(t.algoperf, dict) else None
    if t.reached == 0 or med is None or med == float("inf"):
        return "—"
    return fmt.seconds(med)


def _check(m, S) -> str:
    c = m.result.check_amp or {}
    bound = c.get("bound") or {}
    got = [(c.get(f"max_{k}_err"), bound.get(b)) for k, b in (("forward", "forward"), ("loss", "losses"),
                                                              ("grad", "grads"))]
    if not c:
        return fmt.NA
    mark = "✓" if c.get("ok") else ("✗" if c.get("ok") is False else "?")
    parts = [f"{fmt.sig(v)} / {fmt.sig(b)}" for v, b in got if v is not None and b is not None]
    return f"{mark} " + S("mixed_check_parts", parts=", ".join(parts)) if parts else mark


def line(m, f, an, by_source, S) -> dict:
    """One pair's figures: speed-up (the mixed run's samples/s over its twin's) with its interval."""
    out = {"m": m, "f": f, "status": m.status, "speedup": None, "interval": None, "share": None,
           "quality": {"text": fmt.NA, "verdict": "na"}, "emulated": emulated(m)}
    if m.status == NOT_OFFERED or not m.counted or f is None or not f.counted:
        return out
    if m.samples_per_s and f.samples_per_s:
        out["speedup"] = m.samples_per_s / f.samples_per_s
        out["interval"] = speed.ratio_interval(run_windows(m), run_windows(f), between_sd=an.between_sd(m, f))
    out["share"] = an.peak(m).peak_share if arithmetic(m) == "bfloat16" else None  # of the bfloat16 peak (peak.py)
    out["quality"] = _quality(m, f, an, S)
    return out


def _speed_text(ln, S) -> str:
    if ln["emulated"]:
        return S("mixed_emulated")
    if ln["speedup"] is None:
        return fmt.NA
    iv = ln["interval"]
    return fmt.ratio(ln["speedup"]) + (f" ({fmt.interval(iv['lo'], iv['hi'])})" if iv else "")


def _works(ms, S) -> str:
    """One framework x device's mixed runs in words: works, not offered (its evidence), check failed, failed."""
    bad = [w for w in ms if w.status != "ok"]
    if not bad:
        return S("mixed_works", n=len(ms))
    first = bad[0]
    err = (first.result.error or {}).get("message") or ""
    key = {NOT_OFFERED: "mixed_not_offered", "check_failed": "mixed_check_failed"}.get(first.status, "mixed_failed")
    return S(key, n=len(bad), of=len(ms), why=err if len(err) <= 240 else err[:239] + "…")


def mixed_section(rows, an, by_source, S) -> dict | None:
    """The "Mixed precision" section, or None where no run was mixed."""
    got = pairs(rows)
    if not got:
        return None
    lines = [line(m, f, an, by_source, S) for m, f in got]
    heads = [header(S("col_framework")), header(S("col_workload")), header(S("col_mode")),
             header(S("col_mixed_precision")), header(S("col_mixed_speedup"), True),
             header(S("col_mixed_share"), True), header(S("col_mixed_check")), header(S("col_mixed_quality")),
             header(S("col_mixed_target"))]
    body = []
    for ln in lines:
        m, f = ln["m"], ln["f"]
        status = "" if m.status == "ok" else S("mixed_status_" + m.status) if ("mixed_status_" + m.status) in S.raw \
            else m.status
        body.append([cell(m.fw_name + (f" {m.version}" if m.version else ""), m.fw),
                     cell(S("wl_" + m.workload), m.workload), cell(m.mode),
                     cell(MIXED.get(precision(m), precision(m)) + (f" — {status}" if status else "")),
                     cell(_speed_text(ln, S), ln["speedup"],
                          "ok" if ln["interval"] and speed_verdict(ln["interval"]) == "faster" else ""),
                     cell(fmt.percent(ln["share"]) if ln["share"] is not None else fmt.NA, ln["share"]),
                     cell(_check(m, S)), cell(ln["quality"]["text"]),
                     cell(f"{_target(m, an)} / {_target(f, an)}" if f is not None else fmt.NA)])
    return {"intro": S("mixed_intro"), "table": {"id": "table-mixed", "headers": heads, "rows": body, "sortable": True},
            "summary": summary_table(lines, S), "lines": lines}


def summary_table(lines, S) -> dict:
    """Framework x device x precision: declared, works, speed-ups, quality verdicts."""
    groups: dict = {}
    for ln in lines:
        m = ln["m"]
        groups.setdefault((m.fw, m.fw_name, m.device, precision(m)), []).append(ln)
    heads = [header(S("col_framework")), header(S("col_device")), header(S("col_mixed_precision")),
             header(S("col_mixed_declared")), header(S("col_mixed_works")), header(S("col_mixed_speedups")),
             header(S("col_mixed_qualities"))]
    body = []
    for (fw, name, device, prec), lns in groups.items():
        rec = BY_KEY.get(fw)
        declared = rec is not None and prec in rec.offered("precision", device)
        speeds = [f"{S('wl_' + ln['m'].workload)} {_speed_text(ln, S)}" for ln in lns if ln["speedup"] is not None
                  or ln["emulated"]]
        quals = [f"{S('wl_' + ln['m'].workload)}: {S('mixed_verdict_' + ln['quality']['verdict'])}" for ln in lns
                 if ln["quality"]["verdict"] != "na"]
        body.append([cell(name, fw), cell(device.upper()), cell(MIXED.get(prec, prec)),
                     cell(S("yes") if declared else S("no")), cell(_works([ln["m"] for ln in lns], S)),
                     cell("; ".join(speeds) or fmt.NA), cell("; ".join(quals) or fmt.NA)])
    return {"id": "table-mixed-summary", "headers": heads, "rows": body, "sortable": False}

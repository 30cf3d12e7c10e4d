"""The generated sentences of the summary, each pointing at the section that
backs it. Speed is ranked by samples/s (never by seconds per epoch: runs may
train different sample counts)."""
from __future__ import annotations

from .. import speed, stats
from ..catalog import WORKLOAD_BY_KEY
from . import fmt, labels
from .analysis import analyse
from .finding import Finding
from .media import dev_suffix, group_suffix, ranking_groups, wl_name
from .model import at_faster_mode, speed_ratio
from .peak import peak_findings
from .defects import SUBSTITUTE_MARK, substitutes
from .called import PROVISIONAL_MARK, QUALITY_DIFF, QUALITY_FORMAT, extremes, measured_where, noise_where, seed_spread
from .timetotarget import target_findings

MEMORY_TIE = 0.02  # peak memories closer than this are not ranked


def speed_findings(wl, wrows, S, an=None) -> list:
    """Per ranking (device and size, side by side where several): the fastest,
    the runs within noise of it, the slower ones, each ratio with its 95%
    interval, and the work the ranking rests on. A framework that ran both
    modes is ranked at its faster one (the other is in "Graph against eager")."""
    out, an = [], an or analyse(wrows)
    ranked = at_faster_mode(wrows)
    for group, best, grows in ranking_groups(wrows):
        others = sorted([w for w in grows if w is not best and w in ranked and w.counted
                         and speed_ratio(w, best) is not None],
                        key=lambda w: -w.samples_per_s)
        name = wl_name(S, wl) + group_suffix(S, group, wrows)
        kw = dict(workload=name, run=_marked(best), sps=fmt.rate(best.samples_per_s), steady=fmt.seconds(best.steady))
        if not others:
            out.append(Finding(kind="speed", text=S("finding_fastest_single", **kw), anchor=f"wl-{wl}"))
            continue
        ties = [w for w in others if an.verdict(w) != "slower"]
        slower = [w for w in others if w not in ties]
        parts = [S("finding_fastest_ranked", **kw)]
        if ties:
            parts.append(S("finding_within_noise", items=S.join(_ratio_item(w, best, S, an) for w in ties)))
        if slower:
            parts.append(S("finding_slower", items=S.join(_ratio_item(w, best, S, an) for w in slower)))
        parts.append(_rests_on(best, others, S, an))
        both = [w for w in [best, *others] if any(x is not w and x.fw == w.fw and x.mode != w.mode
                                                  and x.version == w.version and x.variant == w.variant
                                                  for x in grows)]
        if both:
            by_mode = {m: [w.fw_name for w in both if w.mode == m] for m in dict.fromkeys(w.mode for w in both)}
            parts.append(S("finding_faster_mode", items="; ".join(f"{m}: {S.join(names)}" for m, names in by_mode.items())))
        out.append(Finding(kind="speed", text=parts[0], details=tuple(parts[1:]), anchor=f"wl-{wl}"))
    return out


def mode_findings(rows, S) -> list:
    """One sentence: what graph mode bought each framework where both modes ran."""
    from .modes import mode_line, mode_pairs, verdict
    lines = [mode_line(g, e) for g, e in mode_pairs(rows)]
    items = [S("mode_item", run=ln["g"].fw_name, workload=wl_name(S, ln["g"].workload),
               ratio=fmt.ratio(ln["speedup"]), verdict=S("mode_" + verdict(ln["interval"])),
               interval=fmt.interval(ln["interval"]["lo"], ln["interval"]["hi"]) if ln["interval"] else fmt.NA)
             for ln in lines]
    return [Finding(kind="speed", text=S("finding_modes", items=S.join(items)), anchor="modes")] if items else []


def _marked(w) -> str:
    """A run's label with the † of a substitute layer, as the tables mark its speed (#67)."""
    return w.label + (f" {SUBSTITUTE_MARK}" if substitutes(w.result) else "")


def _ratio_item(w, best, S, an) -> str:
    iv = an.interval(w)
    ratio = fmt.ratio(speed_ratio(w, best))
    if not iv:
        return S("ratio_item", run=_marked(w), ratio=ratio)
    text = S("ratio_item_interval", run=_marked(w), ratio=ratio, interval=fmt.interval(iv["lo"], iv["hi"]))
    return text + (" " + S("not_ranked_short", ms=fmt.sig(iv["short_s"] * 1e3), floor=f"{speed.MIN_WINDOW_S * 1e3:g}")
                   if iv["verdict"] == "not_ranked" else "")


def _rests_on(best, others, S, an) -> str:
    """What the ranking was measured on: steady windows, their size, runs; and
    whether single runs were widened by the between-run spread."""
    ivs = [an.interval(w) for w in others if an.interval(w)]
    wins = best.result.timing.get("windows") if isinstance(best.result.timing.get("windows"), list) else []
    steady = speed.merged(wins)  # short windows read together within their epoch (speed.MIN_WINDOW_S)
    samples = fmt.num(steady[0].get("samples")) if steady else None
    text = S("finding_rests_on", windows=len(steady) or fmt.NA, samples=fmt.integer(samples) if samples else fmt.NA,
             runs=best.n_repeats)
    if any(iv["widened"] for iv in ivs):
        text += " " + S("finding_widened", where=noise_where([best, *others], S, an))
    if an.provisional(best, *others):
        text += " " + S("finding_provisional", mark=PROVISIONAL_MARK)
    return text


def memory_findings(wl, wrows, S) -> list:
    """Ranks what training adds (#67): the training peak over the level just before
    training, not a level that holds the import and what the check left resident."""
    out = []
    devices = sorted({w.device for w in wrows})
    added = lambda w: fmt.num(w.result.memory_parts()["training"])  # noqa: E731
    for dev in devices:
        ok = [w for w in wrows if w.ok and w.device == dev and added(w) is not None]
        if not ok:
            continue
        lo, hi = min(ok, key=added), max(ok, key=added)
        key = "finding_memory" if lo is not hi else "finding_memory_single"
        if lo is not hi and added(hi) - added(lo) < max(MEMORY_TIE * fmt.num(hi.result.peak_rss_mb or 0) or 0, 1.0):
            key = "finding_memory_within"  # a difference of a few MB in a level of hundreds is not a ranking
        out.append(Finding(kind="memory", anchor=f"wl-{wl}",
                    text=S(key, workload=wl_name(S, wl) + dev_suffix(S, dev, devices), run=lo.label,
                              mb=fmt.mb(added(lo)), run2=hi.label, mb2=fmt.mb(added(hi)),
                              pct=f"{MEMORY_TIE * 100:.0f}%")))
    out += _device_memory_finding(wl, wrows, S)
    return out


def _device_memory_finding(wl, wrows, S) -> list:
    """Like with like (#48): the allocators' peaks count different things (torch's
    since its reset before training, JAX's since the process started), so the
    runs are ranked by the driver's per-process figure (NVML, sampled in training),
    where every GPU run has one; else each run's allocator peak is listed, unranked."""
    gpu = [w for w in wrows if w.ok and w.device == "gpu"]
    drv = [w for w in gpu if fmt.num(w.result.peak_device_driver_mb) is not None]
    if len(drv) > 1 and len(drv) == len(gpu):
        lo = min(drv, key=lambda w: fmt.num(w.result.peak_device_driver_mb))
        hi = max(drv, key=lambda w: fmt.num(w.result.peak_device_driver_mb))
        return [Finding(kind="memory", anchor=f"wl-{wl}", text=S(
            "finding_device_memory_driver", workload=wl_name(S, wl), run=lo.label, mb=fmt.mb(lo.result.peak_device_driver_mb),
            run2=hi.label, mb2=fmt.mb(hi.result.peak_device_driver_mb)))]
    alloc = [w for w in gpu if fmt.num(w.result.peak_device_mb) is not None]
    if not alloc:
        return []
    items = S.join(f"{w.label} {fmt.mb(w.result.peak_device_mb)} MB" for w in alloc)
    return [Finding(kind="memory", anchor=f"wl-{wl}", text=S("finding_device_memory_alloc", workload=wl_name(S, wl), items=items))]


def quality_finding(wl, wrows, S, an=None):
    """The quality sentence (`_quality_sentence`), then the workload's naive
    baseline where it has one (the LSTM's persistence forecast, #67)."""
    text = _quality_sentence(wl, wrows, S, an)
    workload = WORKLOAD_BY_KEY.get(wl)
    extra = workload.baseline_finding(S, fmt, [w for w in wrows if w.counted]) if workload and text else None
    return f"{text} {extra}" if extra else text


def _quality_sentence(wl, wrows, S, an=None):
    """The workload's quality figure in one sentence. Over seeds (--seeds, at
    least stats.MIN_SEEDS): each run's mean with its 95% interval, and each
    against the best mean, paired by seed, "within seed noise" or lower by how
    much. With one seed, a range, never a ranking: every framework started
    from the same weights and saw the same batches, so it is numerical noise.
    A workload whose figure has no direction lists its runs' values through its record."""
    ok = [w for w in wrows if w.counted]  # ranked as speed is: never a check-failed run
    name, workload = wl_name(S, wl), WORKLOAD_BY_KEY.get(wl)
    if workload is None:
        return None
    an = an or analyse(wrows)
    seeded = [w for w in ok if an.quality(w).n >= stats.MIN_SEEDS]
    if seeded:
        return _seeds_finding(name, workload, seeded, S, an)
    if workload.quality.higher_is_better is None:
        return workload.quality_finding(S, fmt, name, ok)
    vals = [x for x in ((w, fmt.num(w.result.quality())) for w in ok) if x[1] is not None]
    if not vals:
        return None
    show = QUALITY_FORMAT[workload.quality.key]
    best, worst = extremes(vals, workload.quality.higher_is_better)
    if show(best[1]) == show(worst[1]):  # equal at the precision shown: no best and no lowest
        return S("finding_quality_same", workload=name, metric=S(workload.quality.label),
                 value=show(best[1]), n=len(vals))
    spread = seed_spread(workload, ok)
    if spread is None:
        return workload.quality_finding(S, fmt, name, best, worst, show) + " " + S("finding_quality_one_seed")
    diff, noise = QUALITY_DIFF.get(workload.quality.key, fmt.sig), stats.seed_noise(spread.sd)
    kw = dict(sd=diff(spread.sd), noise=diff(noise), seeds=spread.seeds, k=spread.frameworks,
              epochs=spread.epochs, measured=spread.measured, where=measured_where(ok, S))
    if abs(best[1] - worst[1]) <= noise:  # a gap one seed's draw can make: no best and no lowest
        return S("finding_quality_within_spread", workload=name, metric=S(workload.quality.label),
                 lo=show(worst[1]), hi=show(best[1]), n=len(vals), **kw)
    return (workload.quality_finding(S, fmt, name, best, worst, show) + " "
            + S("finding_quality_beyond_spread", **kw))


def _seeds_finding(name, workload, seeded, S, an) -> str:
    q = workload.quality
    show, diff = QUALITY_FORMAT[q.key], QUALITY_DIFF.get(q.key, fmt.sig)
    sign = 1 if q.higher_is_better is not False else -1
    order = sorted(seeded, key=lambda w: -sign * an.quality(w).mean)
    items = S.join(S("quality_seed_item", run=w.label, mean=show(an.quality(w).mean), n=an.quality(w).n,
                     lo=show(an.quality(w).lo), hi=show(an.quality(w).hi)) for w in order)
    kw = dict(workload=name, metric=S(q.label), items=items)
    sd, dof = stats.pooled_sd([list(an.quality(w).by_seed.values()) for w in seeded])
    spread = "" if sd is None else " " + S("quality_pooled_spread", sd=diff(sd), n=len(seeded), dof=dof)
    if q.higher_is_better is None or len(order) < 2:
        return S("finding_quality_seeds", **kw) + spread
    best, parts, paired = order[0], [], set()
    for w in order[1:]:
        d = stats.seed_difference(an.quality(best).by_seed, an.quality(w).by_seed)
        paired.add(d["paired"])
        if show(an.quality(w).mean) == show(an.quality(best).mean) or d["verdict"] == "same":
            parts.append(S("quality_within_noise", run=w.label))
        elif d["verdict"] in ("higher", "lower"):
            lo, hi = sorted((abs(d["lo"]), abs(d["hi"])))
            parts.append(S("quality_" + d["verdict"], run=w.label, by=diff(abs(d["diff"])), lo=diff(lo), hi=diff(hi)))
        else:
            parts.append(S("quality_too_few", run=w.label))
    how = S("quality_paired") if paired == {True} else S("quality_unpaired")
    key = "finding_quality_seeds_ranked" if q.higher_is_better else "finding_quality_seeds_ranked_lowest"
    return S(key, best=best.label, others=S.join(parts), how=how, **kw) + spread


def run_findings(rows, errors, check_failed, S) -> list:
    """Failed runs, failed repeats, failed checks."""
    out = []
    failed = [e for e in errors if not e["repeat"] and e["kind"] == "run" and e["type"] != "NotOffered"]
    if failed:
        items = S.join(S("failed_item", run=f"{e['label']} / {e['workload_name']}", type=e["type"]) for e in failed)
        out.append(Finding(kind="failed", flag=True, text=S("finding_failed", n=len(failed), items=items), anchor="errors"))
    else:
        out.append(Finding(kind="failed", text=S("finding_no_failures", n=len(rows)), anchor="errors"))
    rep = [e for e in errors if e["repeat"]]
    if rep:
        out.append(Finding(kind="failed", flag=True, anchor="errors",
                    text=S("finding_repeat_failed", n=len(rep), items=S.join(f"{e['label']} / {e['workload_name']}" for e in rep))))
    if check_failed:
        out.append(Finding(kind="check", flag=True, anchor="check",
                    text=S("finding_check_failed", items=S.join(f"{c['run']} / {wl_name(S, c['workload'])}" for c in check_failed))))
    return out


def audit_findings(rows, audits, S) -> list:
    out = []
    pflags = [f for audit in audits for f in audit["flags"] if f["kind"] == "params"]
    if pflags:
        out.append(Finding(kind="params", flag=True, anchor="audit",
                    text=S("finding_params", items=S.join(f["text"] for f in pflags))))
    for audit in audits:
        for kind, key in (("setting", "finding_settings"), ("threads", "finding_threads"), ("scope", "finding_scope")):
            fl = [f for f in audit["flags"] if f["kind"] == kind]
            if fl:
                out.append(Finding(kind="settings", flag=True, anchor=audit["anchor"],
                            text=S(key, workload=audit["name"], keys=S.join(f["text"] for f in fl))))
    # Only a graph-mode run that compiled nothing: compiled=False also means a
    # whole step in two graphs or an eager update, which the graph-scope
    # sentence above states when the scopes differ.
    nc = [w for w in rows if w.ok and labels.compiled_nothing(w.result, w.mode)]
    if nc:
        out.append(Finding(kind="compile", flag=True, anchor="audit",
                    text=S("finding_nothing_compiled", items=S.join(f"{w.label} / {wl_name(S, w.workload)}" for w in nc))))
    noisy = [w for w in rows if w.noisy]
    if noisy:
        out.append(Finding(kind="noisy", flag=True, anchor=f"wl-{noisy[0].workload}",
                    text=S("finding_noisy", items=S.join(S("noisy_item", run=f"{w.label} / {wl_name(S, w.workload)}",
                                                                         spread=f"{w.spread * 100:.0f}%") for w in noisy))))
    reused = [w for w in rows if w.result.reused]
    if reused:
        out.append(Finding(kind="reused", anchor="metadata",
                    text=S("finding_reused", n=len(reused), items=S.join(f"{w.label} / {wl_name(S, w.workload)}" for w in reused))))
    return out


def machine_findings(rows, S) -> list:
    """The runs measured on a busy machine (1-minute load above the core count,
    before or after the run), in one sentence: their figures are less reliable."""
    busy = [(w, labels.busy_machine(w.result)) for w in rows]
    busy = [(w, b) for w, b in busy if b]
    if not busy:
        return []
    items = S.join(S("busy_item", run=f"{w.label} / {wl_name(S, w.workload)}", share=f"{b[0] * 100:.0f}%", cores=b[1])
                   for w, b in busy)
    return [Finding(kind="machine", flag=True, anchor=f"wl-{busy[0][0].workload}",
             text=S("finding_busy", items=items))]


def _line_name(c, S) -> str:
    return f"{c['framework']} {c['a']} → {c['b']}, {wl_name(S, c['workload'])}, {c['mode']}"


def version_findings(versions, S) -> list:
    """The version comparison in a sentence or two: the changes it called
    (slower flagged), a later version that computes another function, or why
    nothing was called."""
    lines = ((versions or {}).get("table") or {}).get("lines") or []
    if not lines:
        return []
    out = []
    for verdict in ("slower", "faster"):
        got = [c for c in lines if c["verdict"] == verdict]
        if got:
            items = S.join(S("version_item", line=_line_name(c, S), ratio=fmt.ratio(c["ratio"]), p=f"{c['p']:.2g}")
                           for c in got)
            out.append(Finding(kind="versions", flag=verdict == "slower", alert=verdict == "slower", anchor="versions",
                        text=S(f"finding_version_{verdict}", items=items)))
    different = [c for c in lines if c["check"]["different"]]
    if different:
        out.append(Finding(kind="versions", flag=True, alert=True, anchor="versions",
                    text=S("finding_version_different", items=S.join(_line_name(c, S) for c in different))))
    if not out:
        few = [c for c in lines if c["verdict"] == "too_few"]
        key = "finding_version_too_few" if few else "finding_version_same"
        out.append(Finding(kind="versions", flag=bool(few), anchor="versions",
                    text=S(key, n=len(lines), k=len(few), needed=few[0]["needed"] if few else "")))
    return out


def serving_findings(rows, S) -> list:
    from .serving import serving_findings as found  # the section's own reading of the rows
    return found(rows, S)


def findings(rows, wls, S, errors, check_failed, audits, problems, an, versions=None) -> list:
    """Every sentence group under its own guard: one that fails is replaced by
    a flagged "could not draw" line."""
    out = []

    def add(what, fn, *args):
        got = problems.run(what, fn, *args, default=lambda it: [Finding(kind="failed", flag=True, text=it["text"],
                                                                 anchor="report-problems")])
        if isinstance(got, Finding):
            got = [got]
        out.extend(x for x in (got or []) if x)

    for wl in wls:
        wrows = [w for w in rows if w.workload == wl]
        name = wl_name(S, wl)
        add(S("what_findings", kind=S("h_findings_speed"), workload=name), speed_findings, wl, wrows, S, an)
        add(S("what_findings", kind=S("h_findings_memory"), workload=name), memory_findings, wl, wrows, S)
        add(S("what_findings", kind=S("h_findings_speed"), workload=name), peak_findings, wl, wrows, S, an)
        add(S("what_findings", kind=S("h_ttt"), workload=name), target_findings, wl, wrows, S, an)
        q = problems.run(S("what_findings", kind=S("h_findings_quality"), workload=name), quality_finding, wl, wrows, S, an,
                         default=lambda it: it)
        if isinstance(q, dict):
            out.append(Finding(kind="quality", flag=True, text=q["text"], anchor="report-problems"))
        elif q:
            out.append(Finding(kind="quality", text=q, anchor=f"wl-{wl}"))
    add(S("what_findings", kind=S("h_findings_speed"), workload=S("h_modes")), mode_findings, rows, S)
    add(S("what_findings", kind=S("h_findings_other"), workload=S("h_errors")), run_findings, rows, errors, check_failed, S)
    add(S("what_findings", kind=S("h_findings_other"), workload=S("h_audit")), audit_findings, rows, audits, S)
    add(S("what_findings", kind=S("h_findings_other"), workload=S("h_machines")), machine_findings, rows, S)
    add(S("what_findings", kind=S("h_findings_other"), workload=S("h_versions")), version_findings, versions, S)
    add(S("what_findings", kind=S("h_findings_other"), workload=S("h_serving")), serving_findings, rows, S)
    return out

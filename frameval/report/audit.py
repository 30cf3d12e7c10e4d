"""The fairness audit, per workload: one row per setting, one column per run;
the parameter counts against the spec, the settings each notebook recorded
(and whether it read them back from the framework or only declared them), the
threads in effect, what the training step's graph holds, and how much of the
step graph mode compiled."""
from __future__ import annotations

from ..catalog import WORKLOAD_BY_KEY
from ..result import Result
from . import fmt, labels
from .cells import cell, header
from .spec import all_counts, audit_count, match_counts, spec_counts, spec_settings
from .tables import SCOPE_PARTS, scope_text

# settings_source values of a setting the framework has no API to read back
UNREADABLE = ("missing", "not_readable")

AUDIT_KEYS = ("batch_size", "lr", "optimizer", "betas", "adam_eps", "leaky_relu", "bn_momentum", "bn_eps",
              "dropout", "noise_dim", "window", "hidden", "dtype", "loss", "threads", "epochs",
              "max_train_samples", "dataset", "data_source", "data_sha256", "n_train", "seed")
NOT_COMPARED = {"mode", "device", "out_dir", "check"}


def audit_value(r: Result, key):
    s, p, d = r.settings, r.params, r.data
    if key == "threads":
        return r.threads
    if key in ("data_source", "data_sha256", "n_train"):
        return d.get({"data_source": "source", "data_sha256": "sha256"}.get(key, key))
    return s[key] if key in s else p.get(key)


def audit_table(workload, rows, S) -> dict:
    """{"table", "flags", "structural", "compile_notes"}; a row whose recorded
    values differ between runs is flagged; the spec column is for reference."""
    heads = [header(S("col_setting")), header(S("col_spec"))] + [header(w.label) for w in rows] + [header(S("col_verdict"))]
    flags, structural = [], []
    body = _param_rows(workload, rows, S, flags, structural)
    keys = list(AUDIT_KEYS)
    keys += sorted({str(k) for w in rows for k in w.result.settings if k not in keys and k not in NOT_COMPARED})
    groups = value_groups(rows, keys)
    record = WORKLOAD_BY_KEY.get(workload)
    described = set(record.described_settings) if record is not None else set()
    for key in keys:
        if key in described:
            body.append(_described_row(key, rows, S))
            continue
        line = _setting_row(key, rows, spec_settings(workload), S, flags, groups)
        if line:
            body.append(line)
    line = _threads_row(rows, S, flags, groups)
    if line:
        body.append(line)
    for make in (_precision_row, _scope_row, _compiled_row):
        line = make(rows, S, flags)
        if line:
            body.append(line)
    notes = [(w.label, w.result.compile_note) for w in rows if w.mode == "graph" and w.result.compile_note]
    return {"table": {"id": f"audit-{workload}", "headers": heads, "rows": body, "sortable": False},
            "flags": flags, "structural": structural, "compile_notes": notes}


def varied_keys(rows, keys) -> list:
    """The settings the user varied on purpose: those that take several values
    among one framework's runs (a sweep, or runs merged from folders run with
    other parameters). The Variant column names them; they are no difference
    between frameworks."""
    by_fw: dict = {}
    for w in rows:
        by_fw.setdefault((w.fw, w.mode, w.device), []).append(w)
    return [k for k in keys
            if any(len({fmt.value(audit_value(w.result, k)) for w in g}) > 1 for g in by_fw.values())]


def value_groups(rows, keys) -> list:
    """The runs compared with each other: [[row index]], one group per value of
    the varied settings (all the runs, where nothing was varied). A setting
    differs when two runs of one group disagree: in a sweep, the frameworks are
    compared at each value, never one value against another."""
    varied = varied_keys(rows, keys)
    groups: dict = {}
    for i, w in enumerate(rows):
        groups.setdefault(tuple(fmt.value(audit_value(w.result, k)) for k in varied), []).append(i)
    return list(groups.values())


def _differ_within(values, groups, same=lambda v: v) -> bool:
    """Whether two recorded (not None) values of one group differ, by `same`."""
    return any(len({same(values[i]) for i in g if values[i] is not None}) > 1 for g in groups)


def odd_ones(values, groups, same=lambda v: v, reference=None) -> set:
    """The indices of the recorded values that differ from their group's
    reference: `reference` (the spec's value) where a run of the group has it,
    else the value most runs share; where no value is shared by more runs than
    another, every recorded value is odd. Only these cells are flagged: a
    value that matches is never marked for another run's difference."""
    odd = set()
    for g in groups:
        keys = {i: same(values[i]) for i in g if values[i] is not None}
        if len(set(keys.values())) < 2:
            continue
        tally: dict = {}
        for k in keys.values():
            tally[k] = tally.get(k, 0) + 1
        ref = same(reference) if reference is not None and same(reference) in tally else None
        if ref is None:
            top = sorted(tally.values(), reverse=True)
            ref = max(tally, key=tally.get) if len(top) < 2 or top[0] > top[1] else None
        odd |= {i for i, k in keys.items() if k != ref}
    return odd


def _verdict(ok: bool, bad_text: str):
    return cell("✓", "ok", "ok") if ok else cell("✗ " + bad_text, "differs", "flag")


def _param_rows(workload, rows, S, flags, structural):
    body = []
    for net, expected in all_counts(workload, [w.result.params for w in rows]).items():
        line = [cell(S("audit_params", net=net), net), cell(fmt.integer(expected), expected)]
        bad = False
        for w in rows:
            if net not in spec_counts(workload, w.result.params):  # another cell's network (-p lstm.cell)
                line.append(cell("—", None, "na", S("audit_other_network")))
                continue
            v = match_counts(workload, w.result.param_counts, w.result.params).get(net)
            st = audit_count(workload, net, v, w.result.params)
            if st == "ok":
                line.append(cell("✓ " + fmt.integer(v), v, "ok"))
            elif st == "structural":
                note = w.result.param_count_note or ""
                line.append(cell("≈ " + fmt.integer(v), v, "warn", S("two_bias") + (f" — {note}" if note else "")))
                structural.append((w.label, note))
            elif st == "missing":
                line.append(cell(fmt.NA, None, "na"))
            else:
                bad = True
                line.append(cell("✗ " + fmt.integer(v), fmt.num(v), "flag", S("tip_params_mismatch")))
                flags.append({"kind": "params", "run": w.label, "net": net, "got": v, "expected": expected,
                              "text": S("flag_params", run=w.label, net=net, got=fmt.integer(v),
                                        expected=fmt.integer(expected))})
        line.append(cell("✗ " + S("verdict_mismatch"), "mismatch", "flag") if bad else cell("✓", "ok", "ok"))
        body.append(line)
    return body


def _same_key(key, v) -> str:
    """What two runs' values are compared by: an optimizer by its algorithm (the
    same Adam is "Adam" in one API and "optax.adam" in another; its lr, betas and
    eps are compared in their own rows), any other value as it is shown."""
    return labels.optimizer_algorithm(v) if key == "optimizer" else fmt.value(v)


def _setting_cell(key, v, src, odd, S):
    t = fmt.value(v)
    if key == "data_sha256" and isinstance(v, str):
        t = v[:12] + "…"
    cls = "flag" if odd and v is not None else ("na" if v is None else "")
    title = str(v) if key == "data_sha256" else ""
    if src == "declared" and v is not None:
        t += " " + S("declared_mark")
        cls, title = cls or "decl", "; ".join(x for x in (title, S("tip_declared")) if x)
    elif src == "read" and v is not None:
        title = title or S("tip_read")
    return cell(t, v if not isinstance(v, (list, dict)) else fmt.value(v), cls, title)


def _described_row(key, rows, S):
    """A setting that says how a framework met the spec, in its own words: shown, not compared."""
    name = S("set_" + key) if ("set_" + key) in S.raw else key
    vals = [audit_value(w.result, key) for w in rows]
    return ([cell(name, key), cell("—")] + [cell(fmt.value(v), fmt.value(v), "na" if v is None else "") for v in vals]
            + [cell(S("verdict_described"), "described", "na", S("tip_described"))])


def _setting_row(key, rows, spec, S, flags, groups=None):
    vals = [audit_value(w.result, key) for w in rows]
    groups = groups or [list(range(len(rows)))]
    if all(v is None for v in vals) and key not in spec:
        return None
    sources = [w.result.settings_source.get(key) for w in rows]
    # A setting marked missing has no API to read it back: shown as such, never
    # compared and never "not recorded".
    unreadable = [v is None and src in UNREADABLE for v, src in zip(vals, sources)]
    recorded = [v for v in vals if v is not None]
    distinct = {fmt.value(v) for v in recorded}
    differ = _differ_within(vals, groups, lambda v: _same_key(key, v))
    odd = odd_ones(vals, groups, lambda v: _same_key(key, v), spec.get(key))
    if all(src == "declared" for v, src in zip(vals, sources) if v is not None):
        sources = [None] * len(rows)  # every run only declared it: said once, in the verdict
        every_declared = bool(recorded)
    else:
        every_declared = False
    name = S("set_" + key) if ("set_" + key) in S.raw else key
    line = [cell(name, key), cell(fmt.value(spec[key]) if key in spec else "—", spec.get(key))]
    for i, (v, src, nr) in enumerate(zip(vals, sources, unreadable)):
        line.append(cell(S("not_readable"), None, "na", S("tip_setting_not_readable")) if nr
                    else _setting_cell(key, v, src, i in odd, S))
    missing = [w.label for w, v, nr in zip(rows, vals, unreadable) if v is None and not nr]
    declared = [w.label for w, v, src in zip(rows, vals, sources) if src == "declared" and v is not None]
    if differ:
        verdict = cell("✗ " + S("verdict_differs"), "differs", "flag")
        flags.append({"kind": "setting", "key": key, "text": S("flag_setting", key=name, values=S.join(sorted(distinct)))})
    elif missing and recorded:
        verdict = cell("? " + S("verdict_not_recorded", runs=S.join(missing)), "missing", "warn")
    elif not recorded:
        verdict = cell(S("verdict_none_recorded"), "none", "na")
    elif every_declared:  # "all seven" is said in a few words, never listed
        off = key in spec and _same_key(key, recorded[0]) != _same_key(key, spec[key]) and len(distinct) == 1
        # a declared value that is not the full-run spec's (the DCGAN's quick batch 32 against 256) says so too
        verdict = cell("= " + S("verdict_declared_all") + (
            "; " + S("verdict_spec_has", spec=fmt.value(spec[key])) if off else ""), "declared", "warn",
            S("tip_differs_from_spec") if off else "")
    elif declared:
        verdict = cell("= " + S("verdict_declared", runs=S.join(declared)), "declared", "warn")
    elif key in spec and _same_key(key, recorded[0]) != _same_key(key, spec[key]):
        # the same in every run but not the full-run spec's (a short profile): said once, here
        verdict = cell("✓ " + S("verdict_same_off_spec", spec=fmt.value(spec[key])), "same", "warn",
                       S("tip_differs_from_spec"))
    elif len(distinct) > 1:  # one algorithm under several API names
        verdict = cell("✓", "same", "ok", S("tip_same_algorithm", algorithm=_same_key(key, recorded[0])))
    else:
        verdict = cell("✓", "same", "ok")
    line.append(verdict)
    return line


def _thread_count(v, unreadable, S) -> str:
    if v is not None:
        return fmt.integer(v)
    return S("not_readable") if unreadable else fmt.NA


def _threads_cell(w, e, S, flags):
    intra, inter = e.get("intra"), e.get("inter")
    unreadable = labels.not_readable(e)
    t = S("threads_value", intra=_thread_count(intra, unreadable, S), inter=_thread_count(inter, unreadable, S))
    tips = [str(e.get("how") or "")]
    if unreadable:
        tips.append(S("tip_threads_missing", what=", ".join(str(m) for m in e["missing"])))
    req, got = fmt.num(w.result.threads), fmt.num(intra)
    cls = ""
    if req is not None and got is not None and got != req:
        cls = "warn"
        tips.append(S("tip_threads_requested", n=fmt.integer(req)))
        flags.append({"kind": "threads", "run": w.label,
                      "text": S("flag_threads_requested", run=w.label, requested=fmt.integer(req), intra=fmt.integer(got))})
    return cell(t, t, cls, "; ".join(x for x in tips if x))


def _threads_row(rows, S, flags, groups=None):
    """The threads in effect (read back from the framework), flagged when two
    readable counts differ between runs, or differ from the number requested.
    Compared part by part (intra, inter) over the readable values only: a
    framework with no API to read a count back is "not readable", not different."""
    if not any(w.result.threads_effective for w in rows):
        return None
    name = S("audit_threads_effective")
    line = [cell(name, "threads_effective"), cell("—")]
    cells, counts = [], []
    for w in rows:
        e = w.result.threads_effective
        cells.append(_threads_cell(w, e, S, flags) if e else cell(fmt.NA, None, "na", S("tip_threads_not_recorded")))
        counts.append((fmt.num(e.get("intra")), fmt.num(e.get("inter"))) if e else (None, None))
    groups = groups or [list(range(len(rows)))]
    differ = any(_differ_within([c[i] for c in counts], groups) for i in (0, 1))
    readable = [c for c, n in zip(cells, counts) if n != (None, None)]
    if differ:
        odd = set().union(*(odd_ones([c[i] for c in counts], groups) for i in (0, 1)))
        for i in odd:
            cells[i]["cls"] = "flag"
        flags.append({"kind": "setting", "key": "threads_effective",
                      "text": S("flag_setting", key=name, values=S.join(sorted({c["t"] for c in readable})))})
    unreadable = [w.label for w, n in zip(rows, counts)
                  if None in n and labels.not_readable(w.result.threads_effective)]
    if differ:
        verdict = _verdict(False, S("verdict_differs"))
    elif any(c["cls"] == "warn" for c in cells):
        verdict = cell("? " + S("verdict_not_requested"), "requested", "warn")
    elif unreadable:
        verdict = cell("✓ " + S("verdict_readable_same", runs=S.join(unreadable)), "same", "ok")
    else:
        verdict = cell("✓", "same", "ok")
    return line + cells + [verdict]


def precision_text(r: Result, S) -> str:
    """A run's float32 arithmetic as its notebook read it back (nb/precision.py), with -p precision."""
    mm = r.math_mode
    if not mm.get("effective"):
        return S("precision_not_recorded")
    return f"{mm['effective']} (precision={mm.get('precision', 'default')})"


def _precision_row(rows, S, flags):
    """The float32 arithmetic each run trained at; flagged when two runs compared
    here differ (TF32 runs beside full-float32 ones: issue #47)."""
    if not any(w.result.math_mode for w in rows):
        return None
    line = [cell(S("audit_precision"), "precision"), cell(S("precision_spec"))]
    modes = [w.result.math_mode.get("effective") for w in rows]
    differ = len({m for m in modes if m}) > 1
    for w, m in zip(rows, modes):
        t = precision_text(w.result, S)
        line.append(cell(t, t, "flag" if differ and m else ("" if m else "na")))
    if differ:
        items = dict.fromkeys(f"{w.label}: {w.result.math_mode['effective']}" for w, m in zip(rows, modes) if m)
        flags.append({"kind": "precision", "text": S("flag_precision", items=S.join(items))})
        line.append(cell("✗ " + S("verdict_differs"), "differs", "flag"))
    else:
        line.append(cell("✓", "same", "ok"))
    return line


def _scope_row(rows, S, flags):
    """What the training step's graph holds; flagged when it differs between graph-mode runs."""
    if not any(w.result.graph_scope for w in rows):
        return None
    name = S("audit_graph_scope")
    line = [cell(name, "graph_scope"), cell(S("scope_spec"))]
    texts = [scope_text(w, S) for w in rows]
    graph = [(w, t) for w, t in zip(rows, texts) if w.mode == "graph" and w.result.graph_scope]
    kind = [tuple(w.result.graph_scope.get(k) is True for k in SCOPE_PARTS)
            if w.mode == "graph" and w.result.graph_scope else None for w in rows]
    differ = len({k for k in kind if k is not None}) > 1
    # only the runs whose scope is not the spec's whole step (else not the most common) are flagged
    odd = odd_ones(kind, [list(range(len(rows)))], reference=tuple(True for _ in SCOPE_PARTS)) if differ else set()
    for i, (w, (t, cls, tip)) in enumerate(zip(rows, texts)):
        line.append(cell(t, t, "flag" if i in odd else cls, tip))
    if differ:
        # one item per framework and scope, only those that differ: a sweep's values share their framework's scope
        items = dict.fromkeys(f"{w.fw_name} {w.mode}" + (f" ({w.device.upper()})" if w.device != "cpu" else "")
                              + f": {t[0]}" for i, (w, t) in enumerate(zip(rows, texts)) if i in odd)
        flags.append({"kind": "scope", "text": S("flag_scope", items=S.join(items))})
        line.append(cell("✗ " + S("verdict_differs"), "differs", "flag"))
    elif any(t[1] in ("warn", "flag") for _, t in graph):
        line.append(cell("≈ " + S("verdict_partial"), "partial", "warn"))
    else:
        line.append(cell("✓", "same", "ok"))
    return line


def _compiled_row(rows, S, flags):
    """How much of the training step each graph-mode run compiled, in words
    (labels.scope_label). Flagged only where nothing was compiled: a partial
    scope is not "not compiled", and the graph-scope row above already flags
    graph-mode runs whose scopes differ."""
    line = [cell(S("audit_compiled"), "compiled"), cell("—")]
    worst = "ok"
    for w in rows:
        note, compiled = w.result.compile_note or "", w.result.compiled
        got = labels.scope_label(w.result, w.mode, S)
        if got is None:
            line.append(cell("—", None, "", S("eager")))
        elif not w.ok:
            line.append(cell(got[0] + f" ({S('status_failed')})", None, "na", note))
        elif not w.result.graph_scope:  # an older result: compiled=True meant graph mode compiled
            line.append(cell("✓ " + S("yes"), True, "ok", note) if compiled is True
                        else cell(got[0], None, "na", S("tip_label_scope_not_recorded")))
        elif got[1] == "flag":
            worst = "flag"
            line.append(cell("✗ " + got[0], False, "flag", note))
            flags.append({"kind": "compile", "run": w.label, "text": S("flag_nothing_compiled", run=w.label, note=note)})
        else:
            worst = "warn" if got[1] == "warn" and worst == "ok" else worst
            line.append(cell(("≈ " if got[1] == "warn" else "✓ ") + got[0], compiled, got[1] or "ok", note))
    mark = {"ok": "✓", "warn": "≈ " + S("verdict_partial"), "flag": "✗"}[worst]
    line.append(cell(mark, worst, worst))
    return line

"""The fairness audit, per workload: one row per setting, one column per run;
the parameter counts against the spec, the settings each notebook recorded
(and whether it read them back from the framework or only declared them), the
threads in effect, what the training step's graph holds, and whether graph
mode compiled."""
from __future__ import annotations

from ..result import Result, as_list
from . import fmt
from .cells import cell, header
from .spec import PARAM_COUNTS, SPEC_SETTINGS, audit_count, match_counts
from .tables import SCOPE_PARTS, scope_text

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
    heads = [header(S("col_setting")), header(S("col_spec"))] + [header(w["label"]) for w in rows] + [header(S("col_verdict"))]
    flags, structural = [], []
    body = _param_rows(workload, rows, S, flags, structural)
    keys = list(AUDIT_KEYS)
    keys += sorted({str(k) for w in rows for k in w.result.settings if k not in keys and k not in NOT_COMPARED})
    for key in keys:
        line = _setting_row(key, rows, SPEC_SETTINGS.get(workload, {}), S, flags)
        if line:
            body.append(line)
    for make in (_threads_row, _scope_row, _compiled_row):
        line = make(rows, S, flags)
        if line:
            body.append(line)
    notes = [(w["label"], w.result.compile_note) for w in rows if w["mode"] == "graph" and w.result.compile_note]
    return {"table": {"id": f"audit-{workload}", "headers": heads, "rows": body, "sortable": False},
            "flags": flags, "structural": structural, "compile_notes": notes}


def _verdict(ok: bool, bad_text: str):
    return cell("✓", "ok", "ok") if ok else cell("✗ " + bad_text, "differs", "flag")


def _param_rows(workload, rows, S, flags, structural):
    body = []
    for net, expected in PARAM_COUNTS.get(workload, {}).items():
        line = [cell(S("audit_params", net=net), net), cell(fmt.integer(expected), expected)]
        bad = False
        for w in rows:
            v = match_counts(workload, w.result.param_counts).get(net)
            st = audit_count(workload, net, v)
            if st == "ok":
                line.append(cell("✓ " + fmt.integer(v), v, "ok"))
            elif st == "structural":
                note = w.result.param_count_note or ""
                line.append(cell("≈ " + fmt.integer(v), v, "warn", S("two_bias") + (f" — {note}" if note else "")))
                structural.append((w["label"], note))
            elif st == "missing":
                line.append(cell(fmt.NA, None, "na"))
            else:
                bad = True
                line.append(cell("✗ " + fmt.integer(v), fmt.num(v), "flag", S("tip_params_mismatch")))
                flags.append({"kind": "params", "run": w["label"], "net": net, "got": v, "expected": expected,
                              "text": S("flag_params", run=w["label"], net=net, got=fmt.integer(v),
                                        expected=fmt.integer(expected))})
        line.append(cell("✗ " + S("verdict_mismatch"), "mismatch", "flag") if bad else cell("✓", "ok", "ok"))
        body.append(line)
    return body


def _setting_row(key, rows, spec, S, flags):
    vals = [audit_value(w.result, key) for w in rows]
    if all(v is None for v in vals) and key not in spec:
        return None
    sources = [w.result.settings_source.get(key) for w in rows]
    recorded = [v for v in vals if v is not None]
    distinct = {fmt.value(v) for v in recorded}
    differ = len(distinct) > 1
    name = S("set_" + key) if ("set_" + key) in S.raw else key
    line = [cell(name, key), cell(fmt.value(spec[key]) if key in spec else "—", spec.get(key))]
    for v, src in zip(vals, sources):
        t = fmt.value(v)
        if key == "data_sha256" and isinstance(v, str):
            t = v[:12] + "…"
        cls = "flag" if differ and v is not None else ("na" if v is None else "")
        title = str(v) if key == "data_sha256" else ""
        if not differ and v is not None and key in spec and fmt.value(v) != fmt.value(spec[key]):
            cls, title = "warn", S("tip_differs_from_spec")
        if src == "declared" and v is not None:
            t += " " + S("declared_mark")
            cls, title = cls or "decl", "; ".join(x for x in (title, S("tip_declared")) if x)
        elif src == "read" and v is not None:
            title = title or S("tip_read")
        line.append(cell(t, v if not isinstance(v, (list, dict)) else fmt.value(v), cls, title))
    missing = [w["label"] for w, v in zip(rows, vals) if v is None]
    declared = [w["label"] for w, v, src in zip(rows, vals, sources) if src == "declared" and v is not None]
    if differ:
        verdict = cell("✗ " + S("verdict_differs"), "differs", "flag")
        flags.append({"kind": "setting", "key": key, "text": S("flag_setting", key=name, values=S.join(sorted(distinct)))})
    elif missing and recorded:
        verdict = cell("? " + S("verdict_not_recorded", runs=S.join(missing)), "missing", "warn")
    elif not recorded:
        verdict = cell(S("verdict_none_recorded"), "none", "na")
    elif declared:
        verdict = cell("= " + S("verdict_declared", runs=S.join(declared)), "declared", "warn")
    else:
        verdict = cell("✓", "same", "ok")
    line.append(verdict)
    return line


def _threads_cell(w, e, S, flags):
    intra, inter = e.get("intra"), e.get("inter")
    t = S("threads_value", intra=fmt.integer(intra) if intra is not None else fmt.NA,
          inter=fmt.integer(inter) if inter is not None else fmt.NA)
    tips = [str(e.get("how") or "")]
    if as_list(e.get("missing")):
        tips.append(S("tip_threads_missing", what=", ".join(str(m) for m in e["missing"])))
    req, got = fmt.num(w.result.threads), fmt.num(intra)
    cls = ""
    if req is not None and got is not None and got != req:
        cls = "warn"
        tips.append(S("tip_threads_requested", n=fmt.integer(req)))
        flags.append({"kind": "threads", "run": w["label"],
                      "text": S("flag_threads_requested", run=w["label"], requested=fmt.integer(req), intra=fmt.integer(got))})
    return cell(t, t, cls, "; ".join(x for x in tips if x))


def _threads_row(rows, S, flags):
    """The threads in effect (read back from the framework), flagged when they
    differ between runs or from the number requested."""
    if not any(w.result.threads_effective for w in rows):
        return None
    name = S("audit_threads_effective")
    line = [cell(name, "threads_effective"), cell("—")]
    cells = []
    for w in rows:
        e = w.result.threads_effective
        cells.append(_threads_cell(w, e, S, flags) if e else cell(fmt.NA, None, "na", S("tip_threads_not_recorded")))
    distinct = {c["t"] for c in cells if c["v"] is not None}
    if len(distinct) > 1:
        for c in cells:
            if c["v"] is not None:
                c["cls"] = "flag"
        flags.append({"kind": "setting", "key": "threads_effective",
                      "text": S("flag_setting", key=name, values=S.join(sorted(distinct)))})
    bad_req = any(c["cls"] == "warn" for c in cells)
    verdict = _verdict(len(distinct) <= 1, S("verdict_differs"))
    if len(distinct) <= 1 and bad_req:
        verdict = cell("? " + S("verdict_not_requested"), "requested", "warn")
    return line + cells + [verdict]


def _scope_row(rows, S, flags):
    """What the training step's graph holds; flagged when it differs between graph-mode runs."""
    if not any(w.result.graph_scope for w in rows):
        return None
    name = S("audit_graph_scope")
    line = [cell(name, "graph_scope"), cell(S("scope_spec"))]
    texts = [scope_text(w, S) for w in rows]
    graph = [(w, t) for w, t in zip(rows, texts) if w["mode"] == "graph" and w.result.graph_scope]
    kinds = {tuple(w.result.graph_scope.get(k) is True for k in SCOPE_PARTS) for w, _ in graph}
    differ = len(kinds) > 1
    for w, (t, cls, tip) in zip(rows, texts):
        line.append(cell(t, t, "flag" if differ and w["mode"] == "graph" and w.result.graph_scope else cls, tip))
    if differ:
        flags.append({"kind": "scope", "text": S("flag_scope", items=S.join(f"{w['label']}: {t[0]}" for w, t in graph))})
        line.append(cell("✗ " + S("verdict_differs"), "differs", "flag"))
    elif any(t[1] in ("warn", "flag") for _, t in graph):
        line.append(cell("≈ " + S("verdict_partial"), "partial", "warn"))
    else:
        line.append(cell("✓", "same", "ok"))
    return line


def _compiled_row(rows, S, flags):
    line = [cell(S("audit_compiled"), "compiled"), cell("—")]
    bad = False
    for w in rows:
        note, compiled = w.result.compile_note or "", w.result.compiled
        if w["mode"] != "graph":
            line.append(cell("—", None, "", S("eager")))
        elif compiled is True:
            line.append(cell("✓ " + S("yes"), True, "ok", note))
        elif compiled is False and not w["ok"]:
            line.append(cell(S("no") + f" ({S('status_failed')})", False, "na", note))
        elif compiled is False:
            bad = True
            line.append(cell("✗ " + S("no"), False, "flag", note))
            flags.append({"kind": "compile", "run": w["label"], "text": S("flag_not_compiled", run=w["label"], note=note)})
        else:
            line.append(cell(fmt.NA, None, "na"))
    line.append(cell("✗" if bad else "✓", "bad" if bad else "ok", "flag" if bad else "ok"))
    return line

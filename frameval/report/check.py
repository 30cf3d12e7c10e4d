"""The "Same function?" section: each run's numerical check against the numpy
float64 reference (`result.json["check"]`): forward, losses, gradients, one
step, the update after k Adam steps, BatchNorm running statistics."""
from __future__ import annotations

from ..catalog import CHECK_SECTIONS_READ
from ..result import as_dict, as_list
from . import fmt
from .cells import cell, drop_na_columns, header
from .spec import MODES, WORKLOADS, framework_name, order_key


def _sci(v) -> str:
    x = fmt.num(v)
    return f"{x:.1e}" if x is not None else fmt.NA if v is None else str(v)


def check_failures(chk) -> list:
    """[(section, name, error, tolerance)] over the tolerance, worst first."""
    chk = as_dict(chk)
    tol = as_dict(chk.get("tolerances"))
    out = []
    for section in CHECK_SECTIONS_READ:
        t = fmt.num(tol.get(section))
        for name, err in as_dict(chk.get(section)).items():
            e = fmt.num(err)
            if t is not None and (e is None and err is not None or e is not None and e > t):
                out.append((section, str(name), e if e is not None else float("inf"), t))
    return sorted(out, key=lambda x: -x[2])


def check_summary(chk, S) -> list:
    """Why a check failed: its problems, the tensors over tolerance, the diagnosis."""
    chk = as_dict(chk)
    fails = [f"{sec} {name} {err:.1e} > {t:.0e}" for sec, name, err, t in check_failures(chk)]
    return [str(p) for p in as_list(chk.get("problems"))] + fails + [str(d) for d in as_list(chk.get("diagnosis"))]


def check_cell(chk, S, failed_run=False):
    """✓ / ✗ / ?; `failed_run`: the run's status is check_failed, so ✗ whatever the record says."""
    if not isinstance(chk, dict):
        if failed_run:
            return cell("✗ " + S("check_failed_no_detail"), "fail", "flag")
        return cell(fmt.NA, None, "na", S("tip_no_check"))
    ok = chk.get("ok")
    errs = {"forward": fmt.num(chk.get("max_forward_err")), "step": fmt.num(chk.get("max_step_err"))}
    detail = "; ".join(f"{k} {v:.1e}" for k, v in errs.items() if v is not None)
    problems = [str(p) for p in as_list(chk.get("problems"))]
    missing = [str(p) for p in as_list(chk.get("missing"))]
    if ok is True and not failed_run:
        # a figure over its tolerance that passed through the kink allowance is said in the cell,
        # never only in the diagnosis (TensorFlow DCGAN's update 6.1e-3 against 5e-3, #67)
        allowed = [a for a in as_list(chk.get("allowances")) if isinstance(a, dict) and a.get("allowance") == "kink"
                   and isinstance(a.get("error"), (int, float)) and isinstance(a.get("tolerance"), (int, float))]
        if allowed:
            items = "; ".join(f"{a.get('section')} {a.get('tensor')} {a['error']:.1e} > {a['tolerance']:.0e}"
                              for a in allowed[:2]) + (" …" if len(allowed) > 2 else "")
            return cell("✓ " + detail + " · " + S("check_kink_passed", items=items), "ok", "warn",
                        S("tip_check_kink", n=fmt.integer(allowed[0].get("inputs_near_kink") or 0)))
        return cell("✓ " + detail, "ok", "ok", S("tip_check_ok"))
    if ok is False or failed_run:
        fails = [f"{sec} {name} {err:.1e} > {t:.0e}" for sec, name, err, t in check_failures(chk)]
        shown = problems[:2] + fails[:max(0, 3 - len(problems[:2]))]
        why = [str(d) for d in as_list(chk.get("diagnosis"))]
        text = "✗ " + ("; ".join(shown) or detail or S("check_failed_no_detail")) + (" — " + "; ".join(why) if why else "")
        return cell(text, "fail", "flag", "; ".join(problems + fails + why))
    return cell("? " + (detail or S("check_incomplete")) + (f" ({S('check_missing')}: {', '.join(missing[:4])})" if missing else ""),
                "incomplete", "warn", "; ".join(problems + missing))


def _key(w):
    return (w.fw, w.mode, w.device, w.host or "", w.variant, w.fw_name or framework_name(w.fw))


def check_table(rows, S):
    """One line per framework x mode (x device, machine, variant), one column per workload."""
    runs = sorted({_key(w) for w in rows},
                  key=lambda k: (order_key(k[0]), k[2], k[5], MODES.index(k[1]) if k[1] in MODES else 9, k[3], k[4]))
    wls = [wl for wl in WORKLOADS if any(w.workload == wl for w in rows)]
    idx = {_key(w) + (w.workload,): w for w in rows}
    hosts = len({k[3] for k in runs}) > 1
    heads = [header(S("col_framework")), header(S("col_mode"))] + [header(S("wl_" + wl)) for wl in wls]
    body, failed, any_check = [], [], False
    for fw, mode, dev, host, variant, fw_name in runs:
        name = (fw_name + (f" ({dev.upper()})" if dev != "cpu" else "") + (f" @{host}" if host and hosts else "")
                + (f" [{variant}]" if variant else ""))
        line = [cell(name, fw), cell(mode, mode)]
        for wl in wls:
            w = idx.get((fw, mode, dev, host, variant, fw_name, wl))
            if w is None:
                line.append(cell("—", None, "na"))
                continue
            chk = w.result.check
            any_check = any_check or isinstance(chk, dict)
            c = check_cell(chk, S, w.check_failed)
            if w.result.check_amp:  # a mixed run's second pass, under its AMP (#69)
                c = dict(c, t=c["t"] + " · " + amp_text(w.result.check_amp, S))
            line.append(c)
            if c["v"] == "fail":
                failed.append({"run": w.label, "workload": wl, "text": c["t"][2:]})
        body.append(line)
    return {"id": "table-check", "headers": heads, "rows": body, "sortable": True}, failed, any_check


def _section_cell(chk, section):
    vals = {str(k): fmt.num(v) if fmt.num(v) is not None else v for k, v in as_dict(chk.get(section)).items()}
    if not vals:
        return cell(fmt.NA, None, "na")
    nums = {k: v for k, v in vals.items() if isinstance(v, float)}
    bad = {k: v for k, v in vals.items() if not isinstance(v, float) and v is not None}
    worst = sorted(nums.items(), key=lambda kv: -kv[1])
    t = fmt.num(as_dict(chk.get("tolerances")).get(section))
    top = max(nums.values()) if nums else None
    title = "; ".join([f"{k} {v}" for k, v in bad.items()] + [f"{k} {_sci(v)}" for k, v in worst[:4]])
    if bad:
        return cell(str(next(iter(bad.values()))), None, "flag" if t is not None else "warn", title)
    cls = "flag" if t is not None and top is not None and top > t else ("ok" if t is not None else "")
    return cell(_sci(top), top, cls, title)


def check_detail_table(rows, S):
    """The errors per part of the check (the largest relative error over the
    tensors; the tooltip names the worst), with k and the batch; None when no
    run recorded a check."""
    crows = [w for w in rows if w.result.check is not None]
    if not crows:
        return None
    heads = ([header(S("col_run")), header(S("col_workload"))]
             + [header(S("chk_" + s), True, S("tip_chk_" + s)) for s in CHECK_SECTIONS_READ]
             + [header(S("col_chk_steps"), True), header(S("col_chk_batch"), True), header(S("col_verdict"))])
    body = []
    for w in crows:
        chk = w.result.check
        line = [cell(w.label, w.id), cell(S("wl_" + w.workload) if ("wl_" + w.workload) in S.raw else w.workload)]
        line += [_section_cell(chk, s) for s in CHECK_SECTIONS_READ]
        for k in ("steps", "batch_size"):
            v = chk.get(k)
            line.append(cell(fmt.integer(v) if v is not None else fmt.NA, fmt.num(v), "na" if v is None else ""))
        v = check_cell(chk, S, w.check_failed)
        line.append(cell(v["t"][:1] if v["t"][:1] in ("✓", "✗", "?") else v["t"], v["v"], v["cls"], v["title"]))
        body.append(line)
    return drop_na_columns({"id": "table-check-detail", "headers": heads, "rows": body, "sortable": True,
                            "row_ids": [w.id for w in crows]})


def check_intro(rows, S) -> str:
    """The section's opening sentence with the probe batch the checks recorded
    (`check["probe_size"]`, else `check["batch_size"]`: the notebooks check at the
    training batch size), not a size assumed here."""
    sizes = {}
    for w in rows:
        chk = as_dict(w.result.check)
        n = fmt.num(chk.get("probe_size"))
        n = fmt.num(chk.get("batch_size")) if n is None else n
        if n is not None:
            sizes.setdefault(w.workload, set()).add(int(n))
    every = {n for got in sizes.values() for n in got}
    if len(every) == 1:
        probe = S("check_probe_one", n=fmt.integer(every.pop()))
    elif every:
        name = {wl: S("wl_" + wl) if ("wl_" + wl) in S.raw else wl for wl in sizes}
        probe = S("check_probe_many", items=S.join(f"{name[wl]} {'/'.join(fmt.integer(n) for n in sorted(got))}"
                                                   for wl, got in sorted(sizes.items(), key=lambda x: _wl_order(x[0]))))
    else:
        probe = S("check_probe_unknown")
    return S("check_intro", probe=probe)


def _wl_order(wl) -> int:
    return WORKLOADS.index(wl) if wl in WORKLOADS else len(WORKLOADS)


def check_tolerances(rows, S) -> list:
    """One line per workload: each tolerance the numerical check used, as its
    result.json recorded it (frameval/nb/check.py), so a ✓ can be checked by hand."""
    by_wl = {}
    for w in rows:
        tol = as_dict(as_dict(w.result.check).get("tolerances"))
        for sec, t in tol.items():
            if fmt.num(t) is not None:
                by_wl.setdefault(w.workload, {}).setdefault(str(sec), set()).add(fmt.num(t))
    out = []
    for wl, tol in sorted(by_wl.items(), key=lambda x: _wl_order(x[0])):
        name = S("wl_" + wl) if ("wl_" + wl) in S.raw else wl
        items = [f"{S('chk_' + sec) if ('chk_' + sec) in S.raw else sec} "
                 + "/".join(f"{t:.0e}" for t in sorted(ts)) for sec, ts in tol.items()]
        out.append(S("check_tolerances", workload=name, items=S.join(items)))
    return out + amp_bounds(rows, S)


def amp_bounds(rows, S) -> list:
    """One line per workload and format that a mixed run checked under its AMP: the bound
    its result.json recorded and what it came from (nb/amp.py, docs/precision.md)."""
    seen, out = set(), []
    for w in sorted(rows, key=lambda w: _wl_order(w.workload)):
        b = as_dict(as_dict(w.result.check_amp).get("bound"))
        key = (w.workload, b.get("format"), b.get("batch"))
        if not b or key in seen:
            continue
        seen.add(key)
        name = S("wl_" + w.workload) if ("wl_" + w.workload) in S.raw else w.workload
        out.append(S("check_amp_bound", workload=name, fmt=b.get("format"), forward=_sci(b.get("forward")),
                     losses=_sci(b.get("losses")), grads=_sci(b.get("grads")), depth=b.get("depth"),
                     k=fmt.integer(b.get("reduction")), batch=fmt.integer(b.get("batch")), u=_sci(b.get("unit_roundoff")),
                     kappa=fmt.sig(b.get("kappa")), lam=fmt.sig(b.get("lam"))))
    return out


def amp_text(chk_amp, S) -> str:
    """A mixed run's second check, in a few words: ✓/✗ with its largest gradient error against the bound."""
    c = as_dict(chk_amp)
    if not c:
        return ""
    b = as_dict(c.get("bound"))
    mark = "✓" if c.get("ok") is True else "✗" if c.get("ok") is False else "?"
    g, t = fmt.num(c.get("max_grad_err")), fmt.num(b.get("grads"))
    detail = f" grads {g:.1e} ≤ {t:.1e}" if g is not None and t is not None and c.get("ok") else ""
    outside = "; ".join(str(x) for x in as_list(c.get("outside"))[:2])
    return S("check_amp_cell", fmt=b.get("format") or "mixed", mark=mark, detail=detail or (f" {outside}" if outside else ""))


def check_allowances(rows, S) -> list:
    """Every figure over its tolerance that an allowance passed: today the DCGAN's
    kink allowance (result.json check["kink"]["budget"]: how far the figure moves
    when the LeakyReLU inputs within float32 rounding of the kink take the other
    branch). Each names the allowance, the run, the quantity and the figure."""
    out = []
    for w in rows:
        chk = as_dict(w.result.check)
        tol, kink = as_dict(chk.get("tolerances")), as_dict(chk.get("kink"))
        budget = as_dict(kink.get("budget"))
        for sec in ("grads", "update"):
            t = fmt.num(tol.get(sec))
            for name, err in as_dict(chk.get(sec)).items():
                e, room = fmt.num(err), fmt.num(as_dict(budget.get(sec)).get(name))
                if t is None or e is None or e <= t or room is None or e > t + room:
                    continue
                name_wl = S("wl_" + w.workload) if ("wl_" + w.workload) in S.raw else w.workload
                out.append(S("check_allowance_kink", run=w.label, workload=name_wl,
                             part=S("chk_" + sec) if ("chk_" + sec) in S.raw else sec, tensor=str(name),
                             err=f"{e:.1e}", tol=f"{t:.0e}", room=f"{room:.1e}",
                             n=fmt.integer(kink.get("inputs_near_kink") or 0)))
    return out

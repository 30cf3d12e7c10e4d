"""From result files to what the report shows: rows per run (repeats folded in),
comparison tables, the fairness audit, the numerical check, code size, errors
and the generated findings. Everything here is data; the templates only lay it out.

A table is {"id", "headers": [{"t", "num"}], "rows": [[cell, ...]], "sortable"};
a cell is {"t": text, "v": raw value for sorting/tests, "cls": css class,
"title": tooltip, "md": Markdown text when it differs}. Classes: "flag" (red:
a mismatch, a failure), "warn" (amber), "ok", "na", "best".
"""
from __future__ import annotations

import json
import os
import re
import statistics
from pathlib import Path

from . import fmt
from .spec import (MODES, PARAM_COUNTS, SPEC_SETTINGS, WORKLOADS, audit_count, framework_name, match_counts,
                   order_key)

NOISY_SPREAD = 0.10
TRACEBACK_LINES = 15
MESSAGE_CHARS = 2000


def cell(t, v=None, cls="", title="", md=None):
    c = {"t": "" if t is None else str(t), "v": v, "cls": cls, "title": title or ""}
    if md is not None:
        c["md"] = md
    return c


def header(t, num=False, title=""):
    return {"t": t, "num": num, "title": title}


# ------------------------------------------------------------------ loading
def read_json(path):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def load_sources(sources):
    """(plans, environments) of the output folders; absent files are skipped."""
    plans, envs = [], {}
    for src in sources:
        p = read_json(Path(src) / "plan.json")
        if isinstance(p, dict):
            p["_source"] = str(src)
            plans.append(p)
        for f in sorted((Path(src) / "environments").glob("*.json")):
            e = read_json(f)
            if isinstance(e, dict):
                fw = e.get("framework") or f.stem
                e["_source"] = str(src)
                same = [x for x in envs.setdefault(fw, [])
                        if (x.get("key"), x.get("spec_name"), x.get("freeze")) == (e.get("key"), e.get("spec_name"), e.get("freeze"))]
                if not same:
                    envs[fw].append(e)
    return plans, envs


def _host(r):
    return (((r.get("environment") or {}).get("machine") or {}).get("hostname")) or None


def _is_repeat_dir(d: str) -> bool:
    return bool(re.fullmatch(r"r\d+", Path(d).name))


# ------------------------------------------------------------------ rows
class Row(dict):
    """One framework x workload x mode x device (x machine) run, repeats folded in."""


def _last_epoch(r, key):
    for e in reversed(r.get("epochs") or []):
        if isinstance(e, dict) and key in e:
            return e.get(key)
    return None


def final(r, key):
    v = r.get(key)
    return v if v is not None else _last_epoch(r, key)


def make_rows(runs, S, multi_host=False) -> list:
    groups: dict = {}
    for r in runs:
        d = r.get("_dir") or ""
        base = str(Path(d).parent) if d and _is_repeat_dir(d) else d
        key = (r.get("_source"), base or id(r))
        g = groups.setdefault(key, {"main": None, "extra": []})
        if d and _is_repeat_dir(d):
            g["extra"].append(r)
        elif g["main"] is None:
            g["main"] = r
        else:
            g["extra"].append(r)
    rows = []
    for g in groups.values():
        main = g["main"] or g["extra"].pop(0)
        rows.append(_row(main, g["extra"], S, multi_host))
    rows.sort(key=lambda w: (WORKLOADS.index(w["workload"]) if w["workload"] in WORKLOADS else 9,
                             w["device"] != "cpu", order_key(w["fw"]),
                             MODES.index(w["mode"]) if w["mode"] in MODES else 9, w["host"] or ""))
    return rows


def _row(r, extra, S, multi_host) -> Row:
    fw = r.get("framework") or "?"
    mode = r.get("mode") or "?"
    device = r.get("device") or "cpu"
    host = _host(r)
    ok = r.get("status") == "ok"
    w = Row(r=r, extra=extra, fw=fw, fw_name=framework_name(fw), version=r.get("framework_version"),
            workload=r.get("workload") or "?", mode=mode, device=device, host=host, ok=ok,
            status=r.get("status") or "unknown", reused=bool(r.get("reused")))
    label = f"{w['fw_name']} {mode}"
    if device != "cpu":
        label += f" ({device.upper()})"
    if multi_host and host:
        label += f" @{host}"
    w["label"] = label
    w["short"] = f"{w['fw_name']}\n{mode}" + (f"\n{device.upper()}" if device != "cpu" else "")
    # timing: repeats fold into median with min-max over repeats
    reps = r.get("repeats")
    rep_vals = [fmt.num(v) for v in reps] if isinstance(reps, list) else []
    rep_vals = [v for v in rep_vals if v is not None]
    if not rep_vals and extra:
        rep_vals = [fmt.num(x.get("steady_epoch_s")) for x in [r] + extra if x.get("status") == "ok"]
        rep_vals = [v for v in rep_vals if v is not None]
    w["extra_failed"] = [x for x in extra if x.get("status") != "ok"]
    steady = fmt.num(r.get("steady_epoch_s"))
    if len(rep_vals) > 1:
        med = statistics.median(rep_vals)
        w.update(steady=med, steady_lo=min(rep_vals), steady_hi=max(rep_vals), steady_kind="repeats",
                 n_repeats=len(rep_vals), spread=(max(rep_vals) - min(rep_vals)) / med if med else None)
        sps = fmt.num(r.get("samples_per_s"))
        w["samples_per_s"] = sps * steady / med if sps and steady and med else sps
    else:
        w.update(steady=steady, steady_lo=fmt.num(r.get("steady_min_s")), steady_hi=fmt.num(r.get("steady_max_s")),
                 steady_kind="epochs", n_repeats=1, spread=None, samples_per_s=fmt.num(r.get("samples_per_s")))
    w["noisy"] = w["spread"] is not None and w["spread"] > NOISY_SPREAD
    w["first"] = r.get("first_epoch_s")
    for k in ("peak_rss_mb", "rss_after_import_mb", "peak_device_mb", "peak_device_driver_mb"):
        w[k] = r.get(k)
    counts = r.get("param_counts") or {}
    nums = [fmt.num(v) for v in counts.values()]
    w["params_total"] = int(sum(nums)) if counts and all(v is not None for v in nums) else None
    w["compiled"] = r.get("compiled")
    return w


# ------------------------------------------------------------------ workload tables
def quality_columns(workload, S):
    """[(header, getter(result) -> value, formatter, higher_is_better or None)]"""
    if workload == "lenet":
        return [(S("col_test_acc"), lambda r: final(r, "test_acc"), fmt.percent, True),
                (S("col_test_loss"), lambda r: final(r, "test_loss"), lambda v: fmt.sig(v, 4), False)]
    if workload == "dcgan":
        return [(S("col_gen_loss"), lambda r: _last_epoch(r, "gen_loss"), lambda v: fmt.sig(v, 4), None),
                (S("col_disc_loss"), lambda r: _last_epoch(r, "disc_loss"), lambda v: fmt.sig(v, 4), None)]
    if workload == "lstm":
        return [(S("col_val_r2"), lambda r: r.get("val_r2"), lambda v: fmt.fixed(v, 4), True),
                (S("col_val_rmse"), lambda r: r.get("val_rmse"), lambda v: fmt.sig(v, 3), False),
                (S("col_predict_ms"), lambda r: r.get("predict_ms"), fmt.millis, False),
                (S("col_model_size"), lambda r: r.get("model_bytes"), fmt.kib, False),
                (S("col_load_ms"), lambda r: r.get("load_ms"), fmt.millis, False)]
    return []


def fastest_by_device(rows):
    best = {}
    for w in rows:
        if w["ok"] and w["steady"] is not None:
            k = w["device"]
            if k not in best or w["steady"] < best[k]["steady"]:
                best[k] = w
    return best


def workload_table(workload, rows, S, multi_host, code_lines):
    best = fastest_by_device(rows)
    devices = {w["device"] for w in rows}
    heads = [header(S("col_framework")), header(S("col_version")), header(S("col_mode"))]
    if len(devices) > 1:
        heads.append(header(S("col_device")))
    if multi_host:
        heads.append(header(S("col_host")))
    heads += [header(S("col_status")), header(S("col_first_epoch"), True, S("tip_first_epoch")),
              header(S("col_steady"), True, S("tip_steady")), header(S("col_samples_per_s"), True),
              header(S("col_vs_fastest"), True, S("tip_vs_fastest")), header(S("col_peak_rss"), True),
              header(S("col_rss_import"), True), header(S("col_peak_device"), True, S("tip_peak_device")),
              header(S("col_params"), True)]
    qcols = quality_columns(workload, S)
    heads += [header(q[0], True) for q in qcols]
    heads += [header(S("col_code_lines"), True, S("tip_code_lines"))]
    # best quality values among ok rows
    qbest = []
    for _, get, _, hib in qcols:
        vals = [fmt.num(get(w["r"])) for w in rows if w["ok"]]
        vals = [v for v in vals if v is not None]
        qbest.append(None if hib is None or not vals else (max(vals) if hib else min(vals)))
    out = []
    for w in rows:
        r = w["r"]
        cells = [cell(w["fw_name"], w["fw"]), cell(w["version"] or fmt.NA, w["version"]), cell(w["mode"], w["mode"])]
        if len(devices) > 1:
            cells.append(cell(w["device"].upper(), w["device"]))
        if multi_host:
            cells.append(cell(w["host"] or fmt.NA, w["host"]))
        cells.append(status_cell(w, S))
        cells.append(cell(fmt.seconds(w["first"]), fmt.num(w["first"]), "na" if fmt.is_na(w["first"]) else ""))
        cells.append(steady_cell(w, S))
        cells.append(cell(fmt.rate(w["samples_per_s"]), w["samples_per_s"], "na" if w["samples_per_s"] is None else ""))
        b = best.get(w["device"])
        if w["ok"] and b and w["steady"] is not None:
            ratio = w["steady"] / b["steady"]
            cells.append(cell(fmt.ratio(ratio), ratio, "best" if w is b else ""))
        else:
            cells.append(cell(fmt.NA, None, "na"))
        for k in ("peak_rss_mb", "rss_after_import_mb"):
            cells.append(cell(fmt.mb(w[k]), fmt.num(w[k]), "na" if fmt.is_na(w[k]) else ""))
        dev = w["peak_device_mb"]
        drv = w["peak_device_driver_mb"]
        if fmt.num(dev) is None and fmt.num(drv) is None:
            cells.append(cell(fmt.NA, None, "na", S("tip_not_measurable")))
        else:
            t = fmt.mb(dev) + (f" ({S('driver')} {fmt.mb(drv)})" if fmt.num(drv) is not None else "")
            cells.append(cell(t, fmt.num(dev) if fmt.num(dev) is not None else fmt.num(drv)))
        cells.append(params_cell(workload, w, S))
        for (_, get, f, _), qb in zip(qcols, qbest):
            v = get(r)
            cells.append(cell(f(v), fmt.num(v), "na" if v is None else ("best" if w["ok"] and qb is not None and fmt.num(v) == qb else "")))
        n = code_lines.get((w["fw"], workload))
        cells.append(cell(fmt.integer(n) if n is not None else fmt.NA, n, "na" if n is None else ""))
        out.append(cells)
    return {"id": f"table-{workload}", "headers": heads, "rows": out, "sortable": True}


def status_cell(w, S):
    tags, cls = [], ""
    if not w["ok"]:
        tags.append(S("status_failed"))
        cls = "flag"
    else:
        tags.append(S("status_ok"))
    if w["reused"]:
        tags.append(S("status_reused"))
    if w["noisy"]:
        tags.append(S("status_noisy"))
        cls = cls or "warn"
    if w["mode"] == "graph" and w["ok"] and w["compiled"] is False:
        tags.append(S("status_not_compiled"))
        cls = cls or "flag"
    if w["extra_failed"]:
        tags.append(S("status_repeat_failed", n=len(w["extra_failed"])))
        cls = cls or "warn"
    return cell(" · ".join(tags), w["status"], cls)


def steady_cell(w, S):
    if w["steady"] is None:
        return cell(fmt.NA, None, "na")
    t = fmt.seconds(w["steady"])
    if w["steady_lo"] is not None and w["steady_hi"] is not None:
        t += f" ({fmt.seconds(w['steady_lo'])}–{fmt.seconds(w['steady_hi'])})"
    title = ""
    cls = ""
    if w["steady_kind"] == "repeats":
        t += " " + S("n_repeats", n=w["n_repeats"])
        title = S("tip_repeats", spread=f"{w['spread'] * 100:.0f}%")
        if w["noisy"]:
            cls = "warn"
    return cell(t, w["steady"], cls, title)


def params_cell(workload, w, S):
    counts = w["r"].get("param_counts") or {}
    if not counts:
        return cell(fmt.NA, None, "na")
    got = match_counts(workload, counts)
    states = [audit_count(workload, net, v) for net, v in got.items()]
    if len(counts) > 1:
        t = " + ".join(fmt.integer(v) for v in counts.values())
    else:
        t = fmt.integer(next(iter(counts.values())))
    cls = "flag" if "mismatch" in states else ("warn" if "structural" in states else "")
    title = S("tip_params_mismatch") if cls == "flag" else (S("two_bias") if cls == "warn" else "")
    return cell(t, w["params_total"], cls, title)


# ------------------------------------------------------------------ audit
AUDIT_KEYS = ("batch_size", "lr", "optimizer", "betas", "adam_eps", "leaky_relu", "bn_momentum", "bn_eps",
              "dropout", "noise_dim", "window", "hidden", "dtype", "loss", "threads", "epochs",
              "max_train_samples", "dataset", "data_source", "data_sha256", "n_train", "seed")
NOT_COMPARED = {"mode", "device", "out_dir", "check"}


def audit_value(r, key):
    s = r.get("settings") or {}
    p = r.get("params") or {}
    d = r.get("data") or {}
    if key == "threads":
        return r.get("threads")
    if key == "data_source":
        return d.get("source")
    if key == "data_sha256":
        return d.get("sha256")
    if key == "n_train":
        return d.get("n_train")
    if key in s:
        return s[key]
    return p.get(key)


def _same(a, b):
    return fmt.value(a) == fmt.value(b)


def audit_table(workload, rows, S):
    """Transposed: one row per setting, one column per run; a row whose recorded
    values differ between runs is flagged; spec column for reference."""
    heads = [header(S("col_setting")), header(S("col_spec"))] + [header(w["label"]) for w in rows] + [header(S("col_verdict"))]
    flags, structural_notes = [], []
    body = []
    # parameter counts
    for net, expected in PARAM_COUNTS.get(workload, {}).items():
        line = [cell(S("audit_params", net=net), net), cell(fmt.integer(expected), expected)]
        bad = False
        for w in rows:
            v = match_counts(workload, w["r"].get("param_counts") or {}).get(net)
            st = audit_count(workload, net, v)
            if st == "ok":
                line.append(cell("✓ " + fmt.integer(v), v, "ok"))
            elif st == "structural":
                note = w["r"].get("param_count_note") or ""
                line.append(cell("≈ " + fmt.integer(v), v, "warn", S("two_bias") + (f" — {note}" if note else "")))
                structural_notes.append((w["label"], note))
            elif st == "missing":
                line.append(cell(fmt.NA, None, "na"))
            else:
                bad = True
                line.append(cell("✗ " + fmt.integer(v), v, "flag", S("tip_params_mismatch")))
                flags.append({"kind": "params", "run": w["label"], "net": net, "got": v, "expected": expected,
                              "text": S("flag_params", run=w["label"], net=net, got=fmt.integer(v),
                                        expected=fmt.integer(expected))})
        line.append(cell("✗ " + S("verdict_mismatch") if bad else "✓", "mismatch" if bad else "ok", "flag" if bad else "ok"))
        body.append(line)
    # settings
    keys = list(AUDIT_KEYS)
    extra = sorted({k for w in rows for k in (w["r"].get("settings") or {}) if k not in keys and k not in NOT_COMPARED})
    spec = SPEC_SETTINGS.get(workload, {})
    for key in keys + extra:
        vals = [audit_value(w["r"], key) for w in rows]
        if all(v is None for v in vals) and key not in spec:
            continue
        recorded = [v for v in vals if v is not None]
        distinct = {fmt.value(v) for v in recorded}
        differ = len(distinct) > 1
        missing = [w["label"] for w, v in zip(rows, vals) if v is None]
        line = [cell(S("set_" + key) if ("set_" + key) in S.raw else key, key),
                cell(fmt.value(spec[key]) if key in spec else "—", spec.get(key))]
        for w, v in zip(rows, vals):
            t = fmt.value(v)
            if key == "data_sha256" and isinstance(v, str):
                t = v[:12] + "…"
            cls = "flag" if differ and v is not None else ("na" if v is None else "")
            title = str(v) if key == "data_sha256" else ""
            if not differ and v is not None and key in spec and not _same(v, spec[key]):
                cls, title = "warn", S("tip_differs_from_spec")
            line.append(cell(t, v if not isinstance(v, (list, dict)) else fmt.value(v), cls, title))
        if differ:
            verdict = cell("✗ " + S("verdict_differs"), "differs", "flag")
            flags.append({"kind": "setting", "key": key, "text": S("flag_setting", key=line[0]["t"],
                                                                   values=S.join(sorted(distinct)))})
        elif missing and recorded:
            verdict = cell("? " + S("verdict_not_recorded", runs=S.join(missing)), "missing", "warn")
        elif not recorded:
            verdict = cell(S("verdict_none_recorded"), "none", "na")
        else:
            verdict = cell("✓", "same", "ok")
        line.append(verdict)
        body.append(line)
    # compiled
    line = [cell(S("audit_compiled"), "compiled"), cell("—")]
    bad = False
    for w in rows:
        if w["mode"] != "graph":
            line.append(cell("—", None, "", S("eager")))
        elif w["compiled"] is True:
            line.append(cell("✓ " + S("yes"), True, "ok", w["r"].get("compile_note") or ""))
        elif w["compiled"] is False and not w["ok"]:
            line.append(cell(S("no") + f" ({S('status_failed')})", False, "na", w["r"].get("compile_note") or ""))
        elif w["compiled"] is False:
            bad = True
            line.append(cell("✗ " + S("no"), False, "flag", w["r"].get("compile_note") or ""))
            flags.append({"kind": "compile", "run": w["label"],
                          "text": S("flag_not_compiled", run=w["label"], note=w["r"].get("compile_note") or "")})
        else:
            line.append(cell(fmt.NA, None, "na"))
    line.append(cell("✗" if bad else "✓", "bad" if bad else "ok", "flag" if bad else "ok"))
    body.append(line)
    compile_notes = [(w["label"], w["r"].get("compile_note")) for w in rows if w["mode"] == "graph" and w["r"].get("compile_note")]
    return {"id": f"audit-{workload}", "headers": heads, "rows": body, "sortable": False}, flags, structural_notes, compile_notes


# ------------------------------------------------------------------ check (same function?)
def check_failures(chk) -> list:
    """[(section, name, error, tolerance)] over the tolerance, worst first."""
    tol = chk.get("tolerances") or {}
    out = []
    for section in ("forward", "losses", "step"):
        t = fmt.num(tol.get(section))
        for name, err in (chk.get(section) or {}).items():
            e = fmt.num(err)
            if t is not None and (e is None and err is not None or e is not None and e > t):
                out.append((section, name, e if e is not None else float("inf"), t))
    return sorted(out, key=lambda x: -x[2])


def check_cell(chk, S):
    if not isinstance(chk, dict):
        return cell(fmt.NA, None, "na", S("tip_no_check"))
    ok = chk.get("ok")
    errs = {"forward": fmt.num(chk.get("max_forward_err")), "step": fmt.num(chk.get("max_step_err"))}
    detail = "; ".join(f"{k} {v:.1e}" for k, v in errs.items() if v is not None)
    problems = [str(p) for p in (chk.get("problems") or [])]
    missing = [str(p) for p in (chk.get("missing") or [])]
    if ok is True:
        return cell("✓ " + detail, "ok", "ok", S("tip_check_ok"))
    if ok is False:
        fails = [f"{sec} {name} {err:.1e} > {t:.0e}" for sec, name, err, t in check_failures(chk)]
        shown = problems[:2] + fails[:max(0, 3 - len(problems[:2]))]
        why = [str(d) for d in (chk.get("diagnosis") or [])]
        text = "✗ " + ("; ".join(shown) or detail) + (" — " + "; ".join(why) if why else "")
        return cell(text, "fail", "flag", "; ".join(problems + fails + why))
    return cell("? " + (detail or S("check_incomplete")) + (f" ({S('check_missing')}: {', '.join(missing[:4])})" if missing else ""),
                "incomplete", "warn", "; ".join(problems + missing))


def check_table(rows, S):
    runs = sorted({(w["fw"], w["mode"], w["device"], w["host"] or "") for w in rows},
                  key=lambda k: (order_key(k[0]), k[2], MODES.index(k[1]) if k[1] in MODES else 9, k[3]))
    wls = [wl for wl in WORKLOADS if any(w["workload"] == wl for w in rows)]
    idx = {(w["fw"], w["mode"], w["device"], w["host"] or "", w["workload"]): w for w in rows}
    heads = [header(S("col_framework")), header(S("col_mode"))] + [header(S("wl_" + wl)) for wl in wls]
    body, failed, any_check = [], [], False
    for fw, mode, dev, host in runs:
        line = [cell(framework_name(fw) + (f" ({dev.upper()})" if dev != "cpu" else "") + (f" @{host}" if host and len({k[3] for k in runs}) > 1 else ""), fw),
                cell(mode, mode)]
        for wl in wls:
            w = idx.get((fw, mode, dev, host, wl))
            if w is None:
                line.append(cell("—", None, "na"))
                continue
            chk = w["r"].get("check")
            any_check = any_check or isinstance(chk, dict)
            c = check_cell(chk, S)
            line.append(c)
            if c["v"] == "fail":
                failed.append({"run": w["label"], "workload": wl, "text": c["t"][2:]})
        body.append(line)
    return {"id": "table-check", "headers": heads, "rows": body, "sortable": True}, failed, any_check


# ------------------------------------------------------------------ code size
def code_size_table(frameworks, workloads, repo: Path, out_dir: Path, S):
    from ..notebook import NotebookError, count_code_lines, read
    counts, heads = {}, [header(S("col_framework"))] + [header(S("wl_" + wl), True) for wl in workloads] + [header(S("col_total"), True)]
    body = []
    for fw in frameworks:
        line = [cell(framework_name(fw), fw)]
        total = 0
        for wl in workloads:
            p = repo / "notebooks" / fw / f"{wl}.ipynb"
            try:
                n = count_code_lines(read(p))
            except (NotebookError, OSError):
                line.append(cell(fmt.NA, None, "na"))
                continue
            counts[(fw, wl)] = n
            total += n
            rel = os.path.relpath(p, out_dir)
            line.append(cell(f"{n}", n, "", "", md=None) | {"link": rel, "link_text": f"notebooks/{fw}/{wl}.ipynb"})
        line.append(cell(str(total), total))
        body.append(line)
    return {"id": "table-code", "headers": heads, "rows": body, "sortable": True}, counts


# ------------------------------------------------------------------ errors
def error_entries(rows, out_dir: Path, S):
    out = []
    for w in rows:
        for r in ([w["r"]] if not w["ok"] else []) + w["extra_failed"]:
            err = r.get("error") or {}
            tb = str(err.get("traceback") or "").rstrip().splitlines()
            nbp = r.get("_notebook") or ""
            link = os.path.relpath(nbp, out_dir) if nbp else (os.path.relpath(r["_dir"], out_dir) if r.get("_dir") else "")
            msg = str(err.get("message") or S("no_message"))
            if len(msg) > MESSAGE_CHARS:
                msg = msg[:MESSAGE_CHARS] + " …"
            out.append({"framework": w["fw_name"], "fw": w["fw"], "workload": w["workload"],
                        "workload_name": S("wl_" + w["workload"]) if ("wl_" + w["workload"]) in S.raw else w["workload"],
                        "mode": w["mode"], "device": w["device"],
                        "host": w["host"], "label": w["label"],
                        "type": str(err.get("type") or S("unknown_error")), "message": msg,
                        "traceback": "\n".join(tb[-TRACEBACK_LINES:]), "notebook": link,
                        "notebook_exists": bool(nbp), "repeat": r is not w["r"],
                        "anchor": fmt.anchor(f"err-{w['fw']}-{w['workload']}-{w['mode']}-{w['device']}-{len(out)}")})
    return out

"""`build(sources, out_dir, ...)`: merge result folders into `<name>.md` (with
images in `assets/`) and a self-contained `<name>.html`."""
from __future__ import annotations

import datetime as _dt
import json
import shlex
import subprocess
from pathlib import Path

from .. import __version__ as FRAMEVAL_VERSION
from ..results import load_runs
from . import charts as ch
from . import fmt
from .i18n import TEMPLATES, Strings
from .model import (_host, audit_table, check_table, code_size_table, error_entries, fastest_by_device, final,
                    load_sources, make_rows, workload_table)
from .render import notes_html, notes_markdown, render_html, render_markdown
from .spec import FRAMEWORK_PACKAGES, WORKLOADS, framework_name, order_key

REPO = Path(__file__).resolve().parents[2]


def _git_commit(repo: Path):
    try:
        out = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                             text=True, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _wl(S, wl):
    return S("wl_" + wl) if ("wl_" + wl) in S.raw else wl


def _devsuffix(S, device, devices):
    return S("dev_suffix", device=device.upper()) if len(devices) > 1 or device != "cpu" else ""


# ------------------------------------------------------------------ findings
def findings(rows, wls, S, errors, check_failed, audits, assets):
    """Generated sentences, each with the figure (asset) or the section that backs it."""
    out = []
    for wl in wls:
        wrows = [w for w in rows if w["workload"] == wl]
        devices = sorted({w["device"] for w in wrows})
        for dev, best in sorted(fastest_by_device(wrows).items()):
            others = sorted([w for w in wrows if w["ok"] and w["steady"] is not None and w["device"] == dev and w is not best],
                            key=lambda w: w["steady"])
            name = _wl(S, wl) + _devsuffix(S, dev, devices)
            if others:
                items = S.join(S("ratio_item", run=w["label"], ratio=fmt.ratio(w["steady"] / best["steady"])) for w in others)
                text = S("finding_fastest", workload=name, run=best["label"], steady=fmt.seconds(best["steady"]),
                         sps=fmt.rate(best["samples_per_s"]), others=items)
            else:
                text = S("finding_fastest_single", workload=name, run=best["label"], steady=fmt.seconds(best["steady"]),
                         sps=fmt.rate(best["samples_per_s"]))
            out.append({"kind": "speed", "text": text, "figure": assets.get("summary_speed"), "anchor": f"wl-{wl}"})
        for dev in devices:
            ok = [w for w in wrows if w["ok"] and w["device"] == dev and fmt.num(w["peak_rss_mb"]) is not None]
            if not ok:
                continue
            lo = min(ok, key=lambda w: w["peak_rss_mb"])
            hi = max(ok, key=lambda w: w["peak_rss_mb"])
            key = "finding_memory" if lo is not hi else "finding_memory_single"
            out.append({"kind": "memory", "figure": assets.get("summary_memory"), "anchor": f"wl-{wl}",
                        "text": S(key, workload=_wl(S, wl) + _devsuffix(S, dev, devices), run=lo["label"],
                                  mb=fmt.mb(lo["peak_rss_mb"]), run2=hi["label"], mb2=fmt.mb(hi["peak_rss_mb"]))})
        okd = [w for w in wrows if w["ok"] and fmt.num(w["peak_device_mb"]) is not None]
        if okd:
            lo = min(okd, key=lambda w: w["peak_device_mb"])
            out.append({"kind": "memory", "figure": assets.get("summary_memory"), "anchor": f"wl-{wl}",
                        "text": S("finding_device_memory", workload=_wl(S, wl), run=lo["label"], mb=fmt.mb(lo["peak_device_mb"]))})
        q = quality_finding(wl, wrows, S)
        if q:
            out.append({"kind": "quality", "text": q, "figure": assets.get("summary_quality"), "anchor": f"wl-{wl}"})
    failed = [e for e in errors if not e["repeat"]]
    if failed:
        items = S.join(S("failed_item", run=f"{e['label']} / {e['workload_name']}", type=e["type"]) for e in failed)
        out.append({"kind": "failed", "flag": True, "text": S("finding_failed", n=len(failed), items=items),
                    "anchor": "errors"})
    else:
        out.append({"kind": "failed", "text": S("finding_no_failures", n=len(rows)), "anchor": "errors"})
    rep_failed = [e for e in errors if e["repeat"]]
    if rep_failed:
        out.append({"kind": "failed", "flag": True, "anchor": "errors",
                    "text": S("finding_repeat_failed", n=len(rep_failed), items=S.join(f"{e['label']} / {e['workload_name']}" for e in rep_failed))})
    if check_failed:
        out.append({"kind": "check", "flag": True, "anchor": "check",
                    "text": S("finding_check_failed", items=S.join(f"{c['run']} / {_wl(S, c['workload'])}" for c in check_failed))})
    pflags = [f for a in audits for f in a["flags"] if f["kind"] == "params"]
    if pflags:
        out.append({"kind": "params", "flag": True, "anchor": "audit",
                    "text": S("finding_params", items=S.join(f["text"] for f in pflags))})
    for a in audits:
        sflags = [f for f in a["flags"] if f["kind"] == "setting"]
        if sflags:
            out.append({"kind": "settings", "flag": True, "anchor": f"audit-{a['workload']}",
                        "text": S("finding_settings", workload=_wl(S, a["workload"]),
                                  keys=S.join(f["text"] for f in sflags))})
    nc = [w for w in rows if w["ok"] and w["mode"] == "graph" and w["compiled"] is False]
    if nc:
        out.append({"kind": "compile", "flag": True, "anchor": "audit",
                    "text": S("finding_not_compiled", items=S.join(f"{w['label']} / {_wl(S, w['workload'])}" for w in nc))})
    noisy = [w for w in rows if w["noisy"]]
    if noisy:
        out.append({"kind": "noisy", "flag": True, "anchor": f"wl-{noisy[0]['workload']}",
                    "text": S("finding_noisy", items=S.join(S("noisy_item", run=f"{w['label']} / {_wl(S, w['workload'])}",
                                                                         spread=f"{w['spread'] * 100:.0f}%") for w in noisy))})
    reused = [w for w in rows if w["reused"]]
    if reused:
        out.append({"kind": "reused", "anchor": "metadata",
                    "text": S("finding_reused", n=len(reused), items=S.join(f"{w['label']} / {_wl(S, w['workload'])}" for w in reused))})
    return out


def quality_finding(wl, wrows, S):
    ok = [w for w in wrows if w["ok"]]
    if wl == "lenet":
        vals = [(w, fmt.num(final(w["r"], "test_acc"))) for w in ok]
        vals = [x for x in vals if x[1] is not None]
        if vals:
            best = max(vals, key=lambda x: x[1])
            worst = min(vals, key=lambda x: x[1])
            if best[1] == worst[1]:
                return S("finding_quality_same", workload=_wl(S, wl), metric=S("col_test_acc"),
                         value=fmt.percent(best[1]), n=len(vals))
            return S("finding_lenet_acc", workload=_wl(S, wl), run=best[0]["label"], acc=fmt.percent(best[1]),
                     run2=worst[0]["label"], acc2=fmt.percent(worst[1]))
    if wl == "lstm":
        vals = [(w, fmt.num(w["r"].get("val_r2"))) for w in ok]
        vals = [x for x in vals if x[1] is not None]
        if vals:
            best = max(vals, key=lambda x: x[1])
            worst = min(vals, key=lambda x: x[1])
            if best[1] == worst[1]:
                return S("finding_quality_same", workload=_wl(S, wl), metric=S("col_val_r2"),
                         value=fmt.fixed(best[1], 4), n=len(vals))
            return S("finding_lstm_r2", workload=_wl(S, wl), run=best[0]["label"], r2=fmt.fixed(best[1], 4),
                     rmse=fmt.sig(best[0]["r"].get("val_rmse")), run2=worst[0]["label"], r2b=fmt.fixed(worst[1], 4))
    if wl == "dcgan":
        vals = [(w, fmt.num(final(w["r"], "gen_loss")), fmt.num(final(w["r"], "disc_loss"))) for w in ok]
        vals = [x for x in vals if x[1] is not None]
        if vals:
            items = S.join(f"{w['label']} {fmt.sig(g, 3)}/{fmt.sig(d, 3)}" for w, g, d in vals)
            return S("finding_dcgan", workload=_wl(S, wl), items=items)
    return None


# ------------------------------------------------------------------ environment
def environment(rows, envs, frameworks, S):
    machines = {}
    for w in rows:
        env = w["r"].get("environment") or {}
        m = env.get("machine") or {}
        host = m.get("hostname") or fmt.NA
        e = machines.setdefault(host, {"host": host, "cpu": m.get("cpu"), "cores": m.get("cores"),
                                       "memory_gb": m.get("memory_gb"), "os": m.get("os"), "gpus": set(), "drivers": set(),
                                       "devices": set()})
        e["devices"].add(w["device"])
        gpu = env.get("gpu")
        if isinstance(gpu, dict):
            if gpu.get("name"):
                e["gpus"].add(str(gpu["name"]))
            if gpu.get("driver"):
                e["drivers"].add(str(gpu["driver"]))
        elif gpu:
            e["gpus"].add(str(gpu))
        for k in ("gpu_driver", "driver"):
            if env.get(k):
                e["drivers"].add(str(env[k]))
    mrows = []
    for m in machines.values():
        mrows.append({"host": m["host"], "cpu": m["cpu"] or fmt.NA, "cores": fmt.integer(m["cores"]),
                      "memory": (fmt.sig(m["memory_gb"]) + " GB") if fmt.num(m["memory_gb"]) is not None else fmt.NA,
                      "gpu": ", ".join(sorted(m["gpus"])) or S("none"), "driver": ", ".join(sorted(m["drivers"])) or fmt.NA,
                      "os": m["os"] or fmt.NA})
    fws = []
    for fw in frameworks:
        frows = [w for w in rows if w["fw"] == fw]
        versions = sorted({str(w["version"]) for w in frows if w["version"]})
        pys = sorted({str((w["r"].get("environment") or {}).get("python")) for w in frows
                      if (w["r"].get("environment") or {}).get("python")})
        nps = sorted({str((w["r"].get("environment") or {}).get("numpy")) for w in frows
                      if (w["r"].get("environment") or {}).get("numpy")})
        threads = sorted({str(w["r"].get("threads")) for w in frows if w["r"].get("threads") is not None})
        elist = envs.get(fw) or []
        packages, specs = [], []
        for e in elist:
            pys = sorted(set(pys) | ({str(e["python"])} if e.get("python") else set()))
            names = FRAMEWORK_PACKAGES.get(fw, (fw,))
            for line in str(e.get("freeze") or "").splitlines():
                pkg = line.split("==")[0].split(" @ ")[0].strip().lower()
                if pkg in names or any(pkg.startswith(n + "-") for n in names):
                    packages.append(line.strip())
            specs.append(" ".join(x for x in (e.get("spec_name"), f"({e['backend']})" if e.get("backend") else "") if x))
        fws.append({"fw": fw, "name": framework_name(fw), "version": ", ".join(versions) or fmt.NA,
                    "python": ", ".join(pys) or fmt.NA, "numpy": ", ".join(nps) or fmt.NA,
                    "packages": ", ".join(sorted(set(packages))) or fmt.NA, "threads": ", ".join(threads) or fmt.NA,
                    "spec": "; ".join(specs) or S("env_not_recorded"),
                    "key": ", ".join(str(e.get("key")) for e in elist if e.get("key")) or fmt.NA})
    freezes = []
    for fw in frameworks:
        for e in envs.get(fw) or []:
            text = str(e.get("freeze") or "").strip()
            freezes.append({"name": framework_name(fw), "spec": e.get("spec_name") or fw, "text": text,
                            "n": len([x for x in text.splitlines() if x.strip()]), "fence": fmt.fence(text or fmt.NA)})
    return {"machines": mrows, "frameworks": fws, "freezes": freezes}


# ------------------------------------------------------------------ workload media
def workload_media(wl, wrows, S, charts, name, assets_dir: Path):
    out = {"charts": [], "gifs": [], "grids": [], "prediction": None}
    wlname = _wl(S, wl)
    items = [(w["short"], w["steady"], w["fw"], w["mode"]) for w in wrows if w["ok"]]
    errs = [(w["steady_lo"], w["steady_hi"]) for w in wrows if w["ok"]]
    f = charts.bars(f"{wl}-steady", S("chart_steady", workload=wlname), S("axis_s_per_epoch"), items, errs,
                    note=S("chart_steady_note"))
    if f:
        out["charts"].append({"file": f, "caption": S("chart_steady", workload=wlname)})
    ok = [w for w in wrows if w["ok"]]
    series = [(S("series_peak_rss"), [w["peak_rss_mb"] for w in ok], ""),
              (S("series_rss_import"), [w["rss_after_import_mb"] for w in ok], ""),
              (S("series_peak_device"), [w["peak_device_mb"] for w in ok], "//")]
    f = charts.grouped_bars(f"{wl}-memory", S("chart_memory", workload=wlname), S("axis_mb"),
                            [w["short"] for w in ok], series)
    if f:
        out["charts"].append({"file": f, "caption": S("chart_memory", workload=wlname)})
    metrics = {"lenet": [("train_loss", "axis_loss"), ("test_loss", "axis_loss"), ("test_acc", "axis_accuracy")],
               "dcgan": [("gen_loss", "axis_loss"), ("disc_loss", "axis_loss")],
               "lstm": [("train_mse", "axis_mse"), ("val_mse", "axis_mse")]}.get(wl, [])
    panels = []
    for key, ylab in metrics:
        ser = [(w["label"], w["fw"], w["mode"], [e.get(key) for e in (w["r"].get("epochs") or [])]) for w in wrows]
        panels.append((S("metric_" + key), S(ylab), ser))
    f = charts.curves(f"{wl}-curves", panels, S("axis_epoch"))
    if f:
        out["charts"].append({"file": f, "caption": S("chart_curves", workload=wlname)})
    if wl == "dcgan":
        for w in wrows:
            grids = w["r"].get("grids") or []
            paths = [Path(w["r"].get("_dir") or ".") / g for g in grids]
            paths = [p for p in paths if p.is_file()]
            if not paths:
                continue
            stem = f"{name}-dcgan-{w['fw']}-{w['mode']}-{w['device']}" + (f"-{fmt.anchor(w['host'])}" if w["host"] else "")
            gif = ch.make_gif(paths, assets_dir / f"{stem}.gif")
            if gif:
                out["gifs"].append({"file": gif.name, "label": w["label"], "epochs": len(paths)})
            png = ch.copy_png(paths[-1], assets_dir / f"{stem}-final.png")
            if png:
                out["grids"].append({"file": png.name, "label": w["label"], "epochs": len(paths)})
    if wl == "lstm":
        truth, ser = None, []
        for w in wrows:
            s = w["r"].get("series") or {}
            if w["ok"] and s.get("val_pred"):
                truth = truth or s.get("val_true")
                ser.append((w["label"], w["fw"], w["mode"], s["val_pred"]))
        f = charts.prediction("lstm-prediction", S("chart_prediction"), S("axis_val_index"), S("axis_ppm"),
                              S("series_truth"), truth, ser)
        if f:
            out["prediction"] = {"file": f, "caption": S("chart_prediction")}
    return out


def summary_charts(rows, wls, S, charts):
    assets = {}
    speed, mem, qual = [], [], []
    for wl in wls:
        wrows = [w for w in rows if w["workload"] == wl and w["ok"]]
        for dev, best in sorted(fastest_by_device(wrows).items()):
            devices = {w["device"] for w in rows if w["workload"] == wl}
            items = [(w["label"], w["steady"] / best["steady"], w["fw"], w is best)
                     for w in sorted([w for w in wrows if w["device"] == dev and w["steady"] is not None], key=lambda w: w["steady"])]
            speed.append((_wl(S, wl) + _devsuffix(S, dev, devices), S("axis_ratio"), items))
        m = [w for w in wrows if fmt.num(w["peak_rss_mb"]) is not None]
        if m:
            lo = min(w["peak_rss_mb"] for w in m)
            mem.append((_wl(S, wl), S("axis_mb"), [(w["label"], w["peak_rss_mb"], w["fw"], w["peak_rss_mb"] == lo)
                                                    for w in sorted(m, key=lambda w: w["peak_rss_mb"])]))
        key, lab, hib = {"lenet": ("test_acc", "axis_accuracy", True), "lstm": ("val_r2", "axis_r2", True),
                         "dcgan": ("gen_loss", "axis_final_gen_loss", None)}.get(wl, (None, None, None))
        if key:
            vals = [(w, fmt.num(final(w["r"], key))) for w in wrows]
            vals = [x for x in vals if x[1] is not None]
            if vals:
                b = max(v for _, v in vals) if hib else None
                qual.append((_wl(S, wl), S(lab), [(w["label"], v, w["fw"], v == b) for w, v in vals]))
    f = charts.hbar_panels("summary-speed", speed, note=S("chart_ratio_note"))
    if f:
        assets["summary_speed"] = f
    f = charts.hbar_panels("summary-memory", mem)
    if f:
        assets["summary_memory"] = f
    f = charts.hbar_panels("summary-quality", qual)
    if f:
        assets["summary_quality"] = f
    return assets


def collect_command(sources, out_dir, lang, name, title, author, notes_file, repo) -> str:
    """The papermill line that reruns only the collector on the same folders."""
    def rel(p):
        p = Path(p).resolve()
        return str(p.relative_to(repo)) if p.is_relative_to(repo) else str(p)
    params = {"sources": [rel(s) for s in sources], "out_dir": rel(out_dir), "lang": lang, "name": name}
    if title:
        params["title"] = title
    if author:
        params["author"] = author
    if notes_file:
        params["notes_file"] = rel(notes_file)
    return (f"papermill notebooks/collect.ipynb {shlex.quote(rel(Path(out_dir) / (name + '-collect.ipynb')))} "
            f"-y {shlex.quote(json.dumps(params, ensure_ascii=False))}")


# ------------------------------------------------------------------ build
def build(sources, out_dir, lang="en", title="", author="", notes_file="", name="report", command="",
          templates=None, repo=None, now=None) -> dict:
    """Write `<out_dir>/<name>.md`, `<out_dir>/<name>.html` and `<out_dir>/assets/`.
    Returns {"html", "md", "assets", "runs", "failed", "findings", "warnings", "missing_glyphs"}."""
    sources = [str(s) for s in (sources if isinstance(sources, (list, tuple)) else [sources]) if str(s)]
    templates = Path(templates or TEMPLATES)
    repo = Path(repo or REPO)
    S = Strings(lang, templates)
    out_dir = Path(out_dir or ".").resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    assets_dir = out_dir / "assets"
    assets_dir.mkdir(exist_ok=True)
    for old in assets_dir.glob(f"{name}-*"):
        old.unlink()
    warnings = []

    runs = load_runs(*sources)
    plans, envs = load_sources(sources)
    if not sources or not runs:
        warnings.append(S("warn_no_runs", sources=", ".join(sources) or "—"))
    if not plans:
        warnings.append(S("warn_no_plan"))
    hosts = sorted({h for r in runs if (h := _host(r))})
    multi_host = len(hosts) > 1
    rows = make_rows(runs, S, multi_host)
    wls = [wl for wl in WORKLOADS if any(w["workload"] == wl for w in rows)]
    other = [w for w in rows if w["workload"] not in WORKLOADS]
    frameworks = sorted({w["fw"] for w in rows if w["fw"] != "?"} |
                        {fw for p in plans for fw in (p.get("frameworks") or []) if isinstance(fw, str)}, key=order_key)
    for fw in frameworks:
        if fw not in envs:
            warnings.append(S("warn_no_env", framework=framework_name(fw)))

    charts = ch.Charts(assets_dir, lang, prefix=f"{name}-")
    if lang != "en" and charts.font_file is None:
        warnings.append(S("warn_no_cjk_font"))
    code, code_counts = code_size_table(frameworks, [wl for wl in WORKLOADS], repo, out_dir, S)

    sections, audits = [], []
    for wl in wls:
        wrows = [w for w in rows if w["workload"] == wl]
        table = workload_table(wl, wrows, S, multi_host, code_counts)
        media = workload_media(wl, wrows, S, charts, name, assets_dir)
        audit, flags, structural, compile_notes = audit_table(wl, wrows, S)
        audits.append({"workload": wl, "name": _wl(S, wl), "table": audit, "flags": flags,
                       "structural": structural, "compile_notes": compile_notes, "anchor": f"audit-{wl}"})
        notes = sorted({n for w in wrows for n in (w["r"].get("notes") or []) if isinstance(n, str)})
        run_notes = [{"label": w["label"], "notes": w["r"].get("notes")} for w in wrows if w["r"].get("notes")]
        sections.append({"id": wl, "anchor": f"wl-{wl}", "name": _wl(S, wl), "intro": S("intro_" + wl),
                         "table": table, "media": media, "notes": notes, "run_notes": run_notes,
                         "repeats": any(w["steady_kind"] == "repeats" for w in wrows)})
    check, check_failed, any_check = check_table([w for w in rows if w["workload"] in WORKLOADS], S)
    errors = error_entries(rows, out_dir, S)
    assets = summary_charts(rows, wls, S, charts)
    found = findings(rows, wls, S, errors, check_failed, audits, assets)
    env = environment(rows, envs, frameworks, S)
    if charts.missing_glyphs:
        warnings.append(S("warn_missing_glyphs", n=len(charts.missing_glyphs)))

    plan = plans[0] if plans else {}
    now = now or _dt.datetime.now().astimezone()
    commit = plan.get("git_commit") or _git_commit(repo)
    versions = []
    for fw in frameworks:
        vs = sorted({str(w["version"]) for w in rows if w["fw"] == fw and w["version"]})
        versions.append(f"{framework_name(fw)} {', '.join(vs) if vs else fmt.NA}")
    devices = []
    for m in env["machines"]:
        d = f"{m['cpu']} ({S('cores', n=m['cores'])})"
        if m["gpu"] != S("none"):
            d += f"; GPU {m['gpu']}"
        devices.append((f"{m['host']}: " if multi_host else "") + d)
    n_failed = len([w for w in rows if not w["ok"]])
    the_title = title or S("default_title")
    meta = [(S("meta_title"), the_title), (S("meta_author"), author or fmt.NA),
            (S("meta_date"), now.strftime("%Y-%m-%d %H:%M %Z").strip()),
            (S("meta_frameval"), f"{plan.get('frameval_version') or FRAMEVAL_VERSION}" + (f" ({S('commit')} {commit})" if commit else "")),
            (S("meta_frameworks"), S.join(versions) or fmt.NA),
            (S("meta_device"), "; ".join(devices) or fmt.NA),
            (S("meta_runs"), S("meta_runs_value", n=len(rows), ok=len(rows) - n_failed, failed=n_failed))]
    if plan.get("profile"):
        meta.append((S("meta_profile"), str(plan["profile"])))
    if plan.get("started"):
        meta.append((S("meta_started"), str(plan["started"])))
    if plan.get("overrides"):
        meta.append((S("meta_overrides"), fmt.value(plan["overrides"])))
    meta.append((S("meta_sources"), ", ".join(Path(s).name or s for s in sources) or fmt.NA))
    profile_notes = [str(n) for p in plans for n in (p.get("profile_notes") or [])]

    notes_md = ""
    if notes_file:
        try:
            notes_md = Path(notes_file).read_text(encoding="utf-8")
        except OSError as e:
            warnings.append(S("warn_notes", file=str(notes_file), error=str(e)))
    collect_cmd = collect_command(sources, out_dir, lang, name, title, author, notes_file, repo)
    reproduce_cmd = command or plan.get("command") or collect_cmd
    specs = []
    for fw in frameworks:
        es = envs.get(fw) or []
        for e in es:
            specs.append({"name": framework_name(fw), "spec": e.get("spec_name") or e.get("spec_path") or fw,
                          "text": e.get("spec_text") or "", "fence": fmt.fence(e.get("spec_text") or fmt.NA, "yaml"),
                          "recorded": True})
        if not es:
            p = repo / "envs" / f"{fw}.yml"
            if p.is_file():
                t = p.read_text(encoding="utf-8")
                specs.append({"name": framework_name(fw), "spec": f"envs/{fw}.yml", "text": t,
                              "fence": fmt.fence(t, "yaml"), "recorded": False})

    ctx = {
        "lang": lang, "s": S.raw, "S": S, "title": the_title, "author": author, "meta": meta,
        "profile_notes": profile_notes, "warnings": warnings, "findings": found,
        "notes_md": notes_markdown(notes_md), "notes_html": notes_html(notes_md) if notes_md else "",
        "summary_assets": assets, "env": env, "sections": sections, "audits": audits,
        "check": {"table": check, "failed": check_failed, "any": any_check},
        "code": code, "errors": errors, "other_rows": other,
        "reproduce": {"command": reproduce_cmd, "command_fence": fmt.fence(reproduce_cmd or fmt.NA, "bash"),
                      "plan_command": plan.get("command") if plan.get("command") and plan.get("command") != reproduce_cmd else "",
                      "plan_fence": fmt.fence(plan.get("command") or "", "bash"),
                      "collect": collect_cmd,
                      "specs": specs},
        "multi_host": multi_host, "hosts": hosts, "name": name, "generated": now.isoformat(timespec="seconds"),
    }
    html_path = out_dir / f"{name}.html"
    md_path = out_dir / f"{name}.md"
    html_text = render_html(ctx, templates, assets_dir)
    md_text = render_markdown(ctx, templates)
    tmp = html_path.with_name(f".{html_path.name}.tmp")
    tmp.write_text(html_text, encoding="utf-8")
    tmp.replace(html_path)
    tmp = md_path.with_name(f".{md_path.name}.tmp")
    tmp.write_text(md_text, encoding="utf-8")
    tmp.replace(md_path)
    return {"html": str(html_path), "md": str(md_path), "assets": str(assets_dir), "runs": len(rows),
            "failed": n_failed, "findings": [f["text"] for f in found], "warnings": warnings,
            "missing_glyphs": sorted(charts.missing_glyphs), "font": str(charts.font_file or "")}

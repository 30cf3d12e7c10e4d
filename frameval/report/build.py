"""`build(sources, out_dir, ...)`: merge result folders into `<name>.md` (with
images in `assets/`) and a self-contained `<name>.html`.

The report is never lost: each part is built under a guard (`guard.Problems`);
a part that fails is shown as "could not draw <what>: <reason>" in both files
and listed in the errors summary, and `info["problems"]` names it. Only a
report that cannot be written at all raises (`ReportError`, one line)."""
from __future__ import annotations

import datetime as _dt
from pathlib import Path

from ..catalog import WORKLOAD_BY_KEY
from ..files import atomic_write
from ..paths import REPO
from ..result import NOT_OFFERED, Result, as_list
from ..result.store import load_runs
from . import charts as ch
from .audit import audit_table
from .behaviour import behaviour_section
from .verdict import verdict_table
from .check import check_allowances, check_detail_table, check_intro, check_table, check_tolerances
from .context import environment, metadata, reproduce
from .defects import defects_table, install_table
from .findings import findings
from .guard import Problems, ReportError, one_line
from .i18n import LANGS, TEMPLATES, Strings
from .media import modes_chart, summary_charts, wl_name, workload_media
from .model import load_sources, make_rows
from .render import notes_html, notes_markdown, render_all
from .spec import WORKLOADS, framework_name, order_key
from .mistakes import mistakes_section
from .modes import mode_section
from .mixed import mixed_section
from .recurrent import recurrent_section
from .serving import serving_section
from .analysis import analyse
from .highapi import api_section
from .timing import timing_section
from .layers import layer_chart, layer_table
from .scope import scope_items
from .peak import gemm_table, machines, peak_text
from .scaling import scaling_section
from .versions import version_section
from .timetotarget import target_section
from .tables import code_size_table, error_entries, memory_table, scope_notes, workload_table



def build(sources, out_dir, lang="en", title="", author="", notes_file="", name="report", command="",
          templates=None, repo=None, now=None, threshold=0.10) -> dict:
    """Write `<out_dir>/<name>.md`, `<out_dir>/<name>.html` and `<out_dir>/assets/`.
    Returns {"html", "md", "assets", "runs", "failed", "check_failed", "findings",
    "warnings", "missing_glyphs", "font", "problems"}."""
    templates = Path(templates or TEMPLATES)
    if lang not in LANGS:
        raise ValueError(f"unknown language {lang!r}: choose one of {', '.join(LANGS)}")
    try:
        S = Strings(lang, templates)
    except Exception as e:  # noqa: BLE001
        raise ReportError(f"no report written: the report's strings could not be read: {one_line(e)}") from None
    srcs = list(dict.fromkeys(str(s) for s in (sources if isinstance(sources, (list, tuple)) else [sources]) if str(s)))
    # what was asked, resolved: every part of the report reads it
    request = {"sources": srcs, "lang": lang, "name": name, "title_arg": title, "title": title or S("default_title"),
               "author": author, "notes_file": notes_file, "command": command, "repo": Path(repo or REPO),
               "now": now or _dt.datetime.now().astimezone(), "threshold": threshold}
    out, assets_dir = _prepare(out_dir, name)
    request["out_dir"] = out
    problems = Problems(S)
    ctx = problems.run(S("what_report"), _context, request, S, problems, assets_dir)
    md_text, html_text = render_all(ctx, templates, assets_dir, problems, S, request)
    html_path, md_path = out / f"{name}.html", out / f"{name}.md"
    _write(html_path, html_text)
    _write(md_path, md_text)
    info = (ctx or {}).get("_info") or {"runs": 0, "failed": 0, "check_failed": 0, "findings": [], "warnings": [],
                                        "missing_glyphs": [], "font": ""}
    return dict(info, html=str(html_path), md=str(md_path), assets=str(assets_dir), problems=problems.texts())


def _prepare(out_dir, name):
    out = Path(out_dir or ".").resolve()
    assets = out / "assets"
    try:
        assets.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ReportError(f"no report written: cannot create {assets}: {e.strerror or one_line(e)}") from None
    for old in assets.glob(f"{name}-*"):
        try:
            old.unlink()
        except OSError:
            pass
    return out, assets


def _write(path: Path, text: str):
    try:
        atomic_write(path, text)
    except OSError as e:
        raise ReportError(f"no report written: cannot write {path}: {e.strerror or one_line(e)}") from None


# ------------------------------------------------------------------ the parts
def _load(request, S):
    """Runs, rows and what the report warns about."""
    runs = [Result.from_dict(r) for r in load_runs(*request["sources"], repeats=True)]
    plans, envs = load_sources(request["sources"])
    warnings = []
    if not request["sources"] or not runs:
        warnings.append(S("warn_no_runs", sources=", ".join(request["sources"]) or "—"))
    if not plans:
        warnings.append(S("warn_no_plan"))
    hosts = sorted({r.host for r in runs if r.host})
    return {"runs": runs, "plans": plans, "envs": envs, "warnings": warnings, "hosts": hosts, "multi_host": len(hosts) > 1}


def _frameworks(rows, plans):
    fws = {w.fw for w in rows if w.fw != "?"}
    fws |= {fw for p in plans for fw in as_list(p.get("frameworks")) if isinstance(fw, str)}
    return sorted(fws, key=order_key)


class _NoCharts:
    """Stands in when matplotlib could not be set up: every chart fails, visibly."""

    def __init__(self, reason):
        self.reason, self.missing_glyphs, self.font_file = reason, set(), None

    def __getattr__(self, name):
        def fail(*args, **kw):
            raise RuntimeError(f"charts unavailable: {self.reason}")
        return fail


def _section(wl, wrows, loaded, S, problems, charts, code_counts, request, assets_dir, an):
    name = wl_name(S, wl)

    def broken_table(it):
        return {"id": f"table-{wl}", "error": it["text"], "headers": [], "rows": []}
    table = problems.run(S("what_table", name=S("h_comparison") + " · " + name), workload_table, wl, wrows, S,
                         loaded["multi_host"], code_counts, problems, an, default=broken_table)
    memory = problems.run(S("what_table", name=S("h_memory_detail") + " · " + name), memory_table, wl, wrows, S,
                          default=lambda it: {"id": f"table-memory-{wl}", "error": it["text"], "headers": [], "rows": []})
    layer_rows = problems.run(S("what_table", name=S("h_layers") + " · " + name), layer_table, wl, wrows, S, an,
                              default=lambda it: {"id": f"table-layers-{wl}", "error": it["text"], "headers": [],
                                                  "rows": []})
    if layer_rows and "error" not in layer_rows:
        layer_rows["chart"] = layer_chart(wl, wrows, S, an, charts, problems)
    media = problems.run(S("what_section", name=S("h_charts") + " · " + name), workload_media, wl, wrows, S, charts,
                         request["name"], assets_dir, problems,
                         default=lambda it: {"charts": [{"error": it["text"], "caption": name}], "gifs": [], "grids": [],
                                             "prediction": None})
    target = problems.run(S("what_table", name=S("h_ttt") + " · " + name), target_section, wl, wrows, S, an,
                          default=lambda it: {"table": {"id": f"table-ttt-{wl}", "error": it["text"], "headers": [],
                                                        "rows": []}, "intro": "", "notes": [], "anchor": f"ttt-{wl}"})
    verdict = problems.run(S("what_table", name=S("h_verdict") + " · " + name), verdict_table, wl, wrows, table, target, S,
                           default=lambda it: {"id": f"table-verdict-{wl}", "error": it["text"], "headers": [], "rows": []})
    notes = sorted({n for w in wrows for n in w.result.notes if isinstance(n, str)})
    run_notes = [{"label": w.label, "notes": [str(n) for n in w.result.notes]} for w in wrows if w.result.notes]
    extra = WORKLOAD_BY_KEY[wl].intro_extra(wrows, S) if wl in WORKLOAD_BY_KEY else None
    intro = S("intro_" + wl) + (" " + extra if extra else "")
    return {"id": wl, "anchor": f"wl-{wl}", "name": name, "intro": intro, "table": table, "memory": memory,
            "layers": layer_rows,
            "media": media, "target": target, "verdict": verdict, "notes": notes, "run_notes": run_notes, "scope_notes": scope_notes(wrows),
            "repeats": any(w.steady_kind == "repeats" for w in wrows)}


def _sections(rows, wls, loaded, S, problems, charts, code_counts, request, assets_dir, an):
    sections, audits = [], []
    for wl in wls:
        wrows = [w for w in rows if w.workload == wl]
        name = wl_name(S, wl)
        sections.append(problems.run(S("what_section", name=name), _section, wl, wrows, loaded, S, problems, charts,
                                     code_counts, request, assets_dir, an,
                                     default=lambda it, wl=wl, name=name: {"id": wl, "anchor": f"wl-{wl}", "name": name,
                                                                           "error": it["text"]}))
        au = problems.run(S("what_table", name=S("h_audit") + " · " + name), audit_table, wl, wrows, S,
                          default=lambda it: {"table": {"id": f"audit-{wl}", "error": it["text"], "headers": [], "rows": []},
                                              "flags": [], "structural": [], "compile_notes": []})
        audits.append(dict(au, workload=wl, name=name, anchor=f"audit-{wl}"))
    return sections, audits


def _check(rows, S, problems):
    wrows = [w for w in rows if w.workload in WORKLOADS]
    got = problems.run(S("what_table", name=S("h_check")), check_table, wrows, S,
                       default=lambda it: ({"id": "table-check", "error": it["text"], "headers": [], "rows": []}, [], True))
    detail = problems.run(S("what_table", name=S("h_check_detail")), check_detail_table, wrows, S,
                          default=lambda it: {"id": "table-check-detail", "error": it["text"], "headers": [], "rows": []})
    intro = problems.run(S("what_section", name=S("h_check")), check_intro, wrows, S,
                         default=lambda it: S("check_intro", probe=S("check_probe_unknown")))
    tols = problems.run(S("what_section", name=S("h_check_tolerances")), check_tolerances, wrows, S, default=lambda it: [it["text"]])
    allow = problems.run(S("what_section", name=S("h_check_allowances")), check_allowances, wrows, S, default=lambda it: [it["text"]])
    return {"table": got[0], "failed": got[1], "any": got[2], "detail": detail, "intro": intro,
            "tolerances": tols, "allowances": allow}


def _alerts(rows, check_failed, S, found=()) -> list:
    """The report's first lines: runs that failed, runs whose numerical check
    failed (status "check_failed", or a check marked ✗ by an older notebook),
    and a later framework version that is slower or computes another function."""
    out = [{"text": f.text, "anchor": f.anchor} for f in found if f.alert]
    failed = [w for w in rows if not w.ok and w.status != NOT_OFFERED]  # declined: a result, in "Mixed precision"
    if failed:
        out.append({"text": S("alert_failed", n=len(failed), items=S.join(f"{w.label} / {wl_name(S, w.workload)}"
                                                                         for w in failed)), "anchor": "errors"})
    if check_failed:
        out.append({"text": S("alert_check_failed", n=len(check_failed),
                              items=S.join(f"{c['run']} / {wl_name(S, c['workload'])}" for c in check_failed)),
                    "anchor": "check"})
    return out


def _notes(request, S, warnings):
    if not request["notes_file"]:
        return ""
    try:
        return Path(request["notes_file"]).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        warnings.append(S("warn_notes", file=str(request["notes_file"]), error=str(e)))
        return ""


def _freeze_files(freezes, envs, out_dir):
    """Each environment's pip freeze as `<out>/packages/<spec>.txt`, linked from
    the report instead of filling its body (provenance.json keeps them too)."""
    folder = Path(out_dir) / "packages"
    folder.mkdir(parents=True, exist_ok=True)
    used = set()
    for fz in freezes:
        spec = fz["spec"][:-4] if fz["spec"].endswith(".yml") else fz["spec"]
        stem = "".join(c if c.isalnum() or c in "-_.@" else "_" for c in spec) or "env"
        stem = next(f"{stem}-{i}" if i else stem for i in range(len(used) + 1) if (f"{stem}-{i}" if i else stem) not in used)
        used.add(stem)
        atomic_write(folder / f"{stem}.txt", fz["raw"])
        fz["file"] = f"packages/{stem}.txt"


def _environment(rows, loaded, frameworks, peaks, S, problems, out_dir) -> dict:
    """The environment section: machines, the measured peak and each framework's own GEMM, environments."""
    env = problems.run(S("what_section", name=S("h_environment")), environment, rows, loaded["envs"], frameworks, S,
                       default=lambda it: {"error": it["text"], "machines": [], "frameworks": [], "freezes": []})
    problems.run(S("what_section", name=S("h_freeze")), _freeze_files, env.get("freezes") or [], loaded["envs"], out_dir,
                 default=None)
    env["peak"] = problems.run(S("what_section", name=S("h_peak")), peak_text, peaks, S, default=lambda it: [it["text"]])
    env["gemm"] = problems.run(S("what_table", name=S("h_gemm")), gemm_table, peaks, S,
                               default=lambda it: {"id": "table-gemm", "error": it["text"], "headers": [], "rows": []})
    return env


def _behaviour(request, S, problems) -> tuple:
    """Tensor behaviour against NumPy and the error messages, where a source folder has them (--behaviour)."""
    behaviour = problems.run(S("what_section", name=S("h_behaviour")), behaviour_section, request["sources"],
                             request["out_dir"], S, default=lambda it: {"error": it["text"]})
    mistakes = problems.run(S("what_section", name=S("h_mistakes")), mistakes_section, request["sources"], S,
                            default=lambda it: {"error": it["text"]})
    return behaviour, mistakes


def _pairs(rows, S, charts, problems, repo, an, peaks) -> tuple:
    """The sections that pair runs of one framework: graph against eager, the high-level API against the
    basic loop, mixed precision against float32, the GRU against the LSTM."""
    modes = problems.run(S("what_section", name=S("h_modes")), mode_section, rows, S,
                         default=lambda it: {"error": it["text"]})
    if modes and "error" not in modes:
        modes["chart"] = modes_chart(modes, S, charts, problems)
    high_api = problems.run(S("what_section", name=S("h_api")), api_section, rows, S, repo,
                            default=lambda it: {"error": it["text"]})
    mixed = problems.run(S("what_section", name=S("h_mixed")), mixed_section, rows, an, peaks, S,
                         default=lambda it: {"error": it["text"]})
    rnn = problems.run(S("what_section", name=S("h_rnn")), recurrent_section, rows, an, S,
                       default=lambda it: {"error": it["text"]})
    return modes, high_api, mixed, rnn


def _serving(rows, S, problems):
    return problems.run(S("what_section", name=S("h_serving")), serving_section, rows, S,
                        default=lambda it: {"error": it["text"]})


def _summary(sections, scaling, found) -> list:
    """The summary's findings, the scaling section's after them; and each workload's verdict
    in words: the summary's own speed (with its ratios), quality and memory sentences, above
    its verdict table (#67), never a second wording of them."""
    found = found + [f for p in (scaling or {}).get("parts", []) for f in p.get("findings", [])]  # Finding objects
    for sec in sections:
        sec["verdict_words"] = [" ".join([f.text, *(d for d in f.details if "×" in d)]) for f in found
                                if f.anchor == sec.get("anchor") and f.kind in ("speed", "quality", "memory")]
    return found


def _context(request, S, problems, assets_dir) -> dict:
    loaded = _load(request, S)
    rows = make_rows(loaded["runs"], S, loaded["multi_host"], problems)
    peaks = machines(request["sources"])
    an = analyse(rows, peaks, problems, S)  # what is derived from the frozen rows, beside them
    wls = [wl for wl in WORKLOADS if any(w.workload == wl for w in rows)]
    frameworks = _frameworks(rows, loaded["plans"])
    warnings = loaded["warnings"] + [S("warn_no_env", framework=framework_name(fw)) for fw in frameworks if fw not in loaded["envs"]]
    charts = problems.run(S("what_charts"), ch.Charts, assets_dir, request["lang"], prefix=f"{request['name']}-",
                          default=lambda it: _NoCharts(it["reason"]))
    if request["lang"] != "en" and charts.font_file is None:
        warnings.append(S("warn_no_cjk_font"))
    code, code_counts = problems.run(S("what_table", name=S("h_code")), code_size_table, frameworks, wls,
                                     request["repo"], request["out_dir"], S, rows,
                                     default=lambda it: ({"id": "table-code", "error": it["text"], "headers": [], "rows": []}, {}))
    sections, audits = _sections(rows, wls, loaded, S, problems, charts, code_counts, request, assets_dir, an)
    check = _check(rows, S, problems)
    versions = problems.run(S("what_section", name=S("h_versions")), version_section, rows, S, request["threshold"],
                            default=lambda it: {"error": it["text"]})
    modes, high_api, mixed, rnn = _pairs(rows, S, charts, problems, request["repo"], an, peaks)
    serving = _serving(rows, S, problems)
    scaling = problems.run(S("what_section", name=S("h_scaling")), scaling_section, rows, wls, S, charts, problems, an,
                           default=lambda it: {"error": it["text"]})
    errors = problems.run(S("what_section", name=S("h_errors")), error_entries, rows, request["out_dir"], S, default=[])
    assets = summary_charts(rows, wls, S, charts, problems, an)
    found = _summary(sections, scaling, findings(rows, wls, S, errors, check["failed"], audits, problems, an, versions))
    env = _environment(rows, loaded, frameworks, peaks, S, problems, request["out_dir"])
    defects = problems.run(S("what_section", name=S("h_defects")), defects_table, rows, frameworks, S,
                           default=lambda it: {"id": "table-defects", "error": it["text"], "headers": [], "rows": [],
                                               "ids": [], "candidates": [], "versions_ran": []})
    behaviour, mistakes = _behaviour(request, S, problems)
    install = problems.run(S("what_table", name=S("h_install")), install_table, loaded["envs"], frameworks, S,
                           default=lambda it: {"id": "table-install", "error": it["text"], "headers": [], "rows": []})
    meta = problems.run(S("what_section", name=S("h_metadata")), metadata, request, rows, loaded["plans"], env, frameworks,
                        loaded["multi_host"], S, request["now"], default=lambda it: [(S("meta_title"), request["title"])])
    repro = problems.run(S("what_section", name=S("h_reproduce")), reproduce, request, loaded["plans"], frameworks, loaded["envs"],
                         S, default=lambda it: {"error": it["text"]})
    timing = problems.run(S("what_section", name=S("h_timing")), timing_section, rows, request["sources"], S,
                          default={"command": None, "runs": None})
    if charts.missing_glyphs:
        warnings.append(S("warn_missing_glyphs", n=len(charts.missing_glyphs)))
    scope = problems.run(S("what_section", name=S("h_scope")), scope_items, rows, request["sources"], loaded["plans"], S,
                         default=lambda it: {"error": it["text"]})
    notes_md = _notes(request, S, warnings)
    n_failed = len([w for w in rows if not w.ok])
    return {
        "lang": request["lang"], "s": S.raw, "S": S, "title": request["title"], "author": request["author"], "meta": meta,
        "profile_notes": [str(n) for p in loaded["plans"] for n in as_list(p.get("profile_notes"))], "warnings": warnings,
        "alerts": _alerts(rows, check["failed"], S, found), "findings": found, "problems": problems, "scope": scope,
        "notes_md": notes_markdown(notes_md), "notes_html": problems.run(S("what_notes"), notes_html, notes_md, default="")
        if notes_md else "",
        "summary_assets": assets, "env": env, "sections": sections, "audits": audits, "check": check,
        "versions": versions, "modes": modes, "mixed": mixed, "rnn": rnn, "serving": serving, "high_api": high_api, "scaling": scaling,
        "code": code, "errors": errors, "reproduce": repro, "defects": defects, "timing": timing,
        "behaviour": behaviour, "mistakes": mistakes, "install": install, "multi_host": loaded["multi_host"], "hosts": loaded["hosts"],
        "name": request["name"], "generated": request["now"].isoformat(timespec="seconds"),
        "_info": {"runs": len(rows), "failed": n_failed, "check_failed": len([w for w in rows if w.check_failed]),
                  "findings": [f.full for f in found], "warnings": warnings,
                  "missing_glyphs": sorted(charts.missing_glyphs), "charts": dict(getattr(charts, "specs", {})), "font": str(charts.font_file or "")},
    }

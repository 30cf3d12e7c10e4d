"""The "Framework defects and workarounds" section, the "Installing it" table of
the environment section, and the mark on a speed figure measured with a
substitute layer.

Workarounds come from the runs' results (`rec.workaround` records) and, for
those no run in this report applied, from the notebooks that declare them
(frameval/defects.py); each defect's reproduction status comes from the tables
`run_all.py defects` stored, one per framework version that ran."""
from __future__ import annotations

from .. import defects as dfx
from ..result import Result, as_dict, as_list
from . import fmt
from .cells import cell, header
from .spec import framework_name, order_key

SUBSTITUTE_MARK = "†"


# ------------------------------------------------------------------ the speed tables
def substitutes(r: Result) -> list:
    """The substitute layers a run used (its workaround records that name one)."""
    return [str(w.get("substitute")) for w in r.workarounds if isinstance(w, dict) and w.get("substitute")]


def mark_substitute(c: dict, w, S) -> dict:
    """The samples/s cell of a run that used a substitute layer: marked, the layers in its tooltip."""
    subs = substitutes(w.result)
    if subs:
        c = dict(c, t=f"{c['t']} {SUBSTITUTE_MARK}",
                 title=((c.get("title") or "") + " " + S("tip_substitute", layers="; ".join(subs))).strip())
    return c


# ------------------------------------------------------------------ the defects section
def _applied(rows) -> dict:
    """{(framework, id): {"record": the first record, "runs": [labels]}} from the runs."""
    out: dict = {}
    for w in rows:
        for rec in w.result.workarounds:
            if not isinstance(rec, dict) or not rec.get("id"):
                continue
            e = out.setdefault((w.fw, str(rec["id"])), {"record": rec, "runs": []})
            e["runs"].append(f"{w.label} / {_run_name(w)}")
    return out


def _run_name(w) -> str:
    return f"{w.workload}-{w.mode}"


def _status_text(fw, wid, tables, S) -> tuple:
    """("2.13.0: present; 2.14.0: fixed", any fixed in the pinned version)."""
    parts, fixed_pinned = [], False
    for t in tables:
        if t.get("framework") != fw:
            continue
        for r in as_list(t.get("results")):
            if isinstance(r, dict) and r.get("id") == wid:
                label = "" if t.get("label") in (None, "pinned") else f" ({t['label']})"
                parts.append(f"{t.get('version') or fmt.NA}{label}: {S('defect_' + r.get('status', '').replace(' ', '_'))}")
                fixed_pinned |= r.get("status") == dfx.FIXED and t.get("label") in (None, "pinned")
    return ("; ".join(parts) or S("defect_not_run"), fixed_pinned)


def defects_table(rows, frameworks, S, tables=None) -> dict:
    """One row per defect of the report's frameworks: what was worked around, since
    which version, how it was found, its cost, the runs that applied it, and the
    reproduction's status in every version `run_all.py defects` ran."""
    tables = dfx.load_tables() if tables is None else tables
    applied = _applied(rows)
    heads = [header(S("col_framework")), header(S("col_defect")), header(S("col_worked_around")),
             header(S("col_seen_in")), header(S("col_found_by")), header(S("col_cost")),
             header(S("col_substitute")), header(S("col_applied_in")), header(S("col_repro_status"), False,
                                                                             S("tip_repro_status"))]
    body, ids, candidates = [], [], []
    for fw in sorted(frameworks, key=order_key):
        sites = dfx.workaround_sites(fw)
        for d in dfx.catalogue([fw]):
            got = applied.get((fw, d.id))
            rec = as_dict(got and got["record"])
            status, fixed = _status_text(fw, d.id, tables, S)
            if fixed and d.id in sites:
                candidates.append(S("defect_candidate", framework=framework_name(fw), id=d.id))
            what = rec.get("summary") or (d.title if d.id in sites else S("defect_measurement", title=d.title))
            body.append([cell(framework_name(fw), fw), cell(d.id, d.id, "", _script_link(d)),
                         cell(what), cell(rec.get("versions") or fmt.NA, None, "" if rec.get("versions") else "na"),
                         cell(rec.get("found_by") or fmt.NA, None, "" if rec.get("found_by") else "na"),
                         cell(rec.get("cost") or fmt.NA, None, "" if rec.get("cost") else "na"),
                         cell(rec.get("substitute") or "—"),
                         cell(S.join(got["runs"]) if got else (S("defect_not_applied") if d.id in sites
                                                                else S("defect_no_workaround")),
                              None, "" if got else "na"),
                         cell(status, None, "flag" if fixed and d.id in sites else "")])
            ids.append(f"{fw}/{d.id}")
    return {"id": "table-defects", "headers": heads, "rows": body, "sortable": True, "ids": ids,
            "candidates": candidates,
            "versions_ran": sorted({f"{framework_name(t['framework'])} {t.get('version')}" for t in tables
                                    if t.get("framework") in frameworks})}


def _script_link(d) -> str:
    return str(d.path.relative_to(dfx.REPO))


# ------------------------------------------------------------------ installing it
def install_table(envs, frameworks, S) -> dict:
    """The "Installing it" table: one row per framework environment, from the
    `install` facts envs.py recorded (at build, or read afterwards)."""
    heads = [header(S("col_framework")), header(S("col_installer")), header(S("col_build_time"), True),
             header(S("col_downloaded"), True, S("tip_downloaded")), header(S("col_installed_size"), True),
             header(S("col_python")), header(S("col_wheel_python"), False, S("tip_wheel_python")),
             header(S("col_numpy_constraint")), header(S("col_install_warnings")), header(S("col_recorded"))]
    body = []
    for fw in sorted(frameworks, key=order_key):
        for e in envs.get(fw) or []:
            body.append(_install_row(fw, e, S))
    return {"id": "table-install", "headers": heads, "rows": body, "sortable": True}


def _fig(v, f, S):
    return cell(f(v), fmt.num(v)) if v is not None else cell(S("not_recorded"), None, "na")


def _downloaded(ins, S):
    """Nothing downloaded is a measurement (all from the installer's cache or a
    local index), said in words; the largest downloads in the tooltip."""
    v = ins.get("downloaded_mb")
    if v is None:
        return cell(S("not_recorded"), None, "na")
    top = ", ".join(f"{n} {fmt.mb(mb)}" for n, mb in as_list(ins.get("downloads")))
    return cell(fmt.mb(v) if v > 0 else S("downloaded_none"), v, "", top)


def _install_row(fw, e, S) -> list:
    ins = as_dict(e.get("install"))
    wheel = as_dict(ins.get("framework_wheel"))
    allows = " · ".join(x for x in (f"Requires-Python {wheel['requires_python']}" if wheel.get("requires_python") else "",
                                    ", ".join(sorted({t.split("-")[0] for t in as_list(wheel.get("wheel_tags"))})))
                        if x) or fmt.NA
    numpy = "; ".join(x for x in (S("numpy_spec", pin=", ".join(as_list(ins.get("numpy_spec")))) if ins.get("numpy_spec") else "",
                                  S("numpy_requires", req=", ".join(as_list(wheel.get("numpy_requires"))))
                                  if wheel.get("numpy_requires") else "",
                                  S("numpy_installed", v=ins["numpy_installed"]) if ins.get("numpy_installed") else "")
                      if x) or fmt.NA
    warn = as_list(ins.get("warnings")) + [f"error: {x}" for x in as_list(ins.get("errors"))]
    warn_cell = (cell(S("install_none"), 0) if ins.get("warnings") is not None and not warn else
                 cell(S("install_n_warnings", n=len(warn)), len(warn), "warn", "\n".join(warn)) if warn else
                 cell(S("not_recorded"), None, "na"))
    note = ins.get("spec_note") or ""
    return [cell(framework_name(fw), fw, "", note), cell(ins.get("installer") or e.get("installer") or fmt.NA),
            _fig(ins.get("build_s", e.get("build_s")), fmt.seconds, S), _downloaded(ins, S),
            _fig(ins.get("installed_mb"), fmt.mb, S), cell(ins.get("python") or e.get("python") or fmt.NA),
            cell(allows, None, "" if allows != fmt.NA else "na"), cell(numpy),
            warn_cell, cell(S("recorded_" + ("build" if ins.get("recorded") == "at build" else
                                             "after" if ins.get("recorded") else "none")))]

"""The report's "Where the time went" (issue #50): the command's own phases
(<out>/timing.json) and the runs' phases summed over the report's runs
(frameval/phases.py), each with its share, so that a user who waited ten
minutes sees why. A phase no result recorded reads "not available"."""
from __future__ import annotations

from .. import phases
from . import fmt
from .cells import cell, header


def _share(s, total):
    return f"{100 * s / total:.0f}%" if total else fmt.NA


def command_table(sources, S) -> dict | None:
    """The last command's phases in the first source folder that recorded them."""
    for src in sources:
        got = phases.read(src)
        ph = got.get("phases") or {}
        if ph:
            total = sum(ph.values())
            rows = [[cell(S(f"phase_{k.replace(' ', '_')}"), k), cell(f"{v:,.1f}", v), cell(_share(v, total), v)]
                    for k, v in ph.items()]
            rows.append([cell(S("phase_total"), "total"), cell(f"{total:,.1f}", total), cell("100%", total)])
            return {"id": "table-command-time", "sortable": False, "rows": rows,
                    "headers": [header(S("col_phase")), header(S("col_seconds"), True), header(S("col_share"), True)]}
    return None


def runs_table(rows, S) -> dict | None:
    """Every run phase summed over the report's runs (the seconds it cost to make them)."""
    summed = phases.sum_phases(w.result.raw for w in rows)
    shown = [k for k in phases.RUN_PHASES if k in summed]
    if not shown:
        return None
    total = sum(summed[k][0] for k in shown)
    body = []
    for k in shown:
        keys = [(k, f"phase_{k.replace(' ', '_')}")]
        if k == "model and check" and "_check" in summed:  # the numerical check on its own, inside it
            keys.append(("_check", "phase_of_which_check"))
        for key, label in keys:
            s, n = summed[key]
            body.append([cell(S(label), key), cell(f"{s:,.1f}", s), cell(_share(s, total), s), cell(fmt.integer(n), n)])
    body.append([cell(S("phase_total"), "total"), cell(f"{total:,.1f}", total), cell("100%", total),
                 cell(fmt.integer(len(rows)), len(rows))])
    return {"id": "table-run-time", "sortable": False, "rows": body,
            "headers": [header(S("col_phase")), header(S("col_seconds"), True), header(S("col_share"), True),
                        header(S("col_runs_n"), True)]}


def timing_section(rows, sources, S) -> dict:
    return {"command": command_table(sources, S), "runs": runs_table(rows, S)}

"""The "Error messages side by side" section (#40): for each common mistake
(frameval/envscripts/mistakes.py), every framework's exception type and message, and
the four scores of frameval/mistakes.py (names the sizes, names the operation,
points at the user's line, fits in a few lines); then a count per framework.
The hackathon report's "error summary", made the same for every framework.
"""
from __future__ import annotations

from .. import mistakes as scoring
from ..catalog import framework_name
from ..envscripts.mistakes import MISTAKES
from .behaviour import column_name, merged
from .cells import cell, header

SHOWN_CHARS = 240  # of a message in the table; the whole of it is the cell's hover text


def _score_cell(v, S):
    if v is None:
        return cell("–", None, "na", S("em_tip_score_na"))
    return cell("✓" if v else "✗", int(v), "ok" if v else "warn")


def _message_cells(rec, S) -> list:
    if not isinstance(rec, dict):
        return [cell(S("na"), None, "na"), cell(S("na"), None, "na")]
    if "na" in rec:
        return [cell(S("em_na"), None, "na"), cell(rec["na"], None, "na")]
    if not rec.get("raised"):
        return [cell(S("em_silent"), None, "flag"), cell(S("em_silent_detail", returned=rec.get("returned", "?")), None, "flag")]
    msg = " ⏎ ".join(ln.strip() for ln in (rec.get("message") or "").splitlines() if ln.strip())
    shown = msg if len(msg) <= SHOWN_CHARS else msg[:SHOWN_CHARS - 1] + "…"
    where = S("em_late") if rec.get("late") else S("em_where", frame=rec.get("last_frame") or "?",
                                                    below=rec.get("frames_below_user"))
    return [cell(rec.get("type") or "?"), cell(shown, None, "", f"{msg}\n\n{where}")]


def mistake_table(mistake, fws: dict, S) -> dict:
    rows = []
    for key, got in fws.items():
        rec = ((got or {}).get("mistakes") or {}).get(mistake.id)
        if rec is None:
            rec = {"na": (got or {}).get("error") or S("na")}
        sc = scoring.score(mistake.id, rec)
        rows.append([cell(column_name(key, got), key)] + _message_cells(rec, S) + [_score_cell(sc[s], S) for s in scoring.SCORES])
    heads = [header(S("col_framework")), header(S("em_col_type")), header(S("em_col_message"))]
    heads += [header(S("em_col_" + s), False, S("em_tip_" + s, lines=scoring.FEW_LINES, wrap=scoring.WRAP)) for s in scoring.SCORES]
    return {"id": f"table-mistake-{mistake.id}", "sortable": False, "rows": rows, "headers": heads}


def count_table(fws: dict, S) -> dict:
    rows = []
    for key, got in fws.items():
        n = scoring.counts((got or {}).get("mistakes") or {})
        rows.append([cell(column_name(key, got), key), cell(str(n["raised"]), n["raised"]),
                     cell(str(n["silent"]), n["silent"], "flag" if n["silent"] else "")]
                    + [cell(f"{n[s][0]} / {n[s][1]}", n[s][0]) for s in scoring.SCORES]
                    + [cell(str(sum(n[s][0] for s in scoring.SCORES)), sum(n[s][0] for s in scoring.SCORES), "best")])
    heads = [header(S("col_framework")), header(S("em_col_raised"), True), header(S("em_col_silent"), True)]
    heads += [header(S("em_col_" + s), True) for s in scoring.SCORES] + [header(S("em_col_total"), True)]
    return {"id": "table-mistakes-counts", "sortable": True, "rows": rows, "headers": heads}


def mistakes_section(sources, S) -> dict | None:
    m = merged(sources)
    if not m or not m["frameworks"]:
        return None
    fws = m["frameworks"]
    return {"intro": S("em_intro", n=len(MISTAKES), lines=scoring.FEW_LINES, wrap=scoring.WRAP),
            "counts": count_table(fws, S),
            "mistakes": [{"id": mk.id, "name": S("em_" + mk.id), "anchor": f"mistake-{mk.id}",
                          "table": mistake_table(mk, fws, S)} for mk in MISTAKES],
            "frameworks": [framework_name(k.split("==")[0]) for k in fws]}

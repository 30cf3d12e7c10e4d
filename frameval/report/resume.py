"""Resume (#70; frameval/nb/resume.py), the last part of "Save, load and serve":
per run checked with -p resume_check, the checkpoint taken after epoch k (its
format, size and save time), the second kernel's restore, and whether its
epochs k + 1 to n and its final weights equal the uninterrupted run's: ✓ bit for
bit, ≈ within the check's loss tolerance (relative), ✗ diverged, each with the
largest deviation; a checkpoint or resume that failed, with its stage and cause.
"""
from __future__ import annotations

from ..catalog import WORKLOADS
from . import fmt
from .cells import cell, header, mode_cell
from .finding import Finding
from .media import wl_name

COMPARED = ("exact", "within", "diverged")
MARKS = {"exact": ("✓", "ok"), "within": ("≈", "warn"), "diverged": ("✗", "bad")}


def small(v) -> str:
    """A difference, in scientific form where it is tiny (5.2e-08, not 0.0000000522); serving's too."""
    x = fmt.num(v)
    return fmt.NA if x is None else (f"{x:.2g}" if x and abs(x) < 1e-3 else fmt.sig(x))


def checked(w) -> dict | None:
    r = w.result.resume
    return r if isinstance(r, dict) and r.get("status") else None


def _verdict(r, S):
    status = r.get("status")
    if status in MARKS:
        mark, cls = MARKS[status]
        text = mark if status == "exact" else f"{mark} {small(r.get('weights_max_rel'))}"
        return cell(text, r.get("weights_max_abs"), cls, S("tip_resume_" + status))
    if status == "checkpointed":  # the second kernel never reported: an older runner or a lost record
        return cell(S("resume_not_resumed"), None, "bad")
    return cell(S("resume_failed", stage=r.get("stage", "?"), error=r.get("error", "")), None, "bad")


def _row(w, r, S) -> list:
    k, n = r.get("after_epoch"), r.get("epochs") or w.result.params.get("epochs")
    return [cell(w.fw_name, w.fw), cell(wl_name(S, w.workload), w.workload), mode_cell(w),
            cell(f"{k} / {n}" if k else fmt.NA, k), cell(str(r.get("format", fmt.NA)).split(" (")[0], title=r.get("format", "")),
            cell(fmt.kib(r.get("bytes")), r.get("bytes")), cell(fmt.seconds(r.get("save_s")), r.get("save_s")),
            cell(fmt.seconds(r.get("restore_s")), r.get("restore_s")), _verdict(r, S),
            cell(small(r.get("loss_max_abs")), r.get("loss_max_abs")),
            cell(small(r.get("weights_max_abs")), r.get("weights_max_abs"))]


def resume_part(rows, S) -> dict | None:
    """The resume table (one row per checked run, LeNet before the LSTM), or None where none was checked."""
    got = [(w, r) for wl in WORKLOADS for w in rows if w.workload == wl for r in [checked(w)] if r]
    if not got:
        return None
    heads = [header(S("col_framework")), header(S("col_workload")), header(S("col_mode")),
             header(S("col_resume_after"), True, S("tip_resume_after")), header(S("col_resume_format")),
             header(S("col_serve_size"), True), header(S("col_serve_save"), True),
             header(S("col_resume_restore"), True), header(S("col_resume_verdict"), False, S("tip_resume_verdict")),
             header(S("col_resume_loss"), True), header(S("col_resume_weights"), True)]
    notes = [S("resume_note_" + r["status"], run=f"{w.label} ({wl_name(S, w.workload)})",
               loss=small(r.get("loss_max_rel")), weights=small(r.get("weights_max_rel")),
               tensor=r.get("worst_tensor") or fmt.NA)
             for w, r in got if r.get("status") in ("within", "diverged")]
    return {"intro": S("resume_intro"), "notes": notes,
            "table": {"id": "table-resume", "headers": heads, "rows": [_row(w, r, S) for w, r in got], "sortable": True}}


def resume_findings(rows, S) -> list:
    """The summary's lines: how many resumed runs equal their uninterrupted twins; each one
    that diverged (an alert) or failed (a flag)."""
    got = [(w, r) for w in rows for r in [checked(w)] if r]
    if not got:
        return []
    exact = sum(r.get("status") == "exact" for _, r in got)
    within = sum(r.get("status") == "within" for _, r in got)
    out = [Finding(kind="serving", anchor="resume", text=S("resume_finding", exact=exact, within=within, n=len(got)))]
    for w, r in got:
        label = f"{w.label} ({wl_name(S, w.workload)})"
        if r.get("status") == "diverged":
            out.append(Finding(kind="serving", flag=True, alert=True, anchor="resume",
                               text=S("resume_diverged_finding", run=label, weights=small(r.get("weights_max_rel")),
                                      loss=small(r.get("loss_max_rel")))))
        elif r.get("status") not in COMPARED:
            out.append(Finding(kind="serving", flag=True, anchor="resume",
                               text=S("resume_failed_finding", run=label, stage=r.get("stage", "?"),
                                      error=r.get("error", ""))))
    return out

"""The report's tables as data; the templates only lay them out.

A table is {"id", "headers": [{"t", "num", "title"}], "rows": [[cell, ...]],
"sortable", "row_ids"}; a cell is {"t": text, "v": raw value for sorting/tests,
"cls": css class, "title": tooltip, "md": Markdown text when it differs}.
Classes: "flag" (red: a mismatch, a failure), "warn" (amber), "ok", "na",
"best", "decl".
"""
from __future__ import annotations


def cell(t, v=None, cls="", title="", md=None):
    c = {"t": "" if t is None else str(t), "v": v, "cls": cls, "title": title or ""}
    if md is not None:
        c["md"] = md
    return c


def mode_cell(w) -> dict:
    """A row's mode, with what its run differs by where a sweep or a variant made several
    runs of one framework and mode ("graph [cell=gru]")."""
    return cell(w.mode + (f" [{w.variant}]" if w.variant else ""), w.mode)


def header(t, num=False, title=""):
    return {"t": t, "num": num, "title": title}


def drop_na_columns(table: dict) -> dict:
    """The table without the columns that are n/a in every row (class "na"): a
    column that says nothing of any run is noise, and says so 21 times."""
    rows = table.get("rows") or []
    if not rows:
        return table
    width = len(table["headers"])
    empty = {i for i in range(width) if all(i < len(r) and r[i].get("cls") == "na" for r in rows)}
    if not empty:
        return table
    keep = [i for i in range(width) if i not in empty]
    return dict(table, headers=[table["headers"][i] for i in keep],
                rows=[[r[i] for i in keep if i < len(r)] for r in rows])

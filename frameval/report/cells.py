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


def header(t, num=False, title=""):
    return {"t": t, "num": num, "title": title}

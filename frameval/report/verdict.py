"""The verdict first: per workload, one compact table that answers "which
framework, for what" from the figures the full tables already computed (no
estimator of its own): samples/s, time per sample against the fastest with its
interval and verdict, the time to target, quality, peak memory and the
numerical check. The cells are the comparison table's and the time-to-target
table's own, picked by column, so the two can never disagree."""
from __future__ import annotations

from .cells import cell, header
from .check import check_cell
from .tables import quality_columns

# the comparison table's columns the verdict keeps, in order (string keys)
KEEP = ("col_framework", "col_mode", "col_variant", "col_device", "col_host", "col_samples_per_s", "col_vs_fastest")
MEMORY = ("col_peak_rss", "col_peak_device")


def _column(table, title):
    heads = [h["t"] for h in table.get("headers") or []]
    return heads.index(title) if title in heads else None


def _all_na(table, i) -> bool:
    return all(_na(r[i]) for r in table["rows"] if i < len(r))


def verdict_table(wl, wrows, table, target, S) -> dict | None:
    """The compact table for one workload, or None where its comparison table is broken."""
    if not table or table.get("error") or not table.get("rows"):
        return None
    qcols = quality_columns(wl, S)[:1]  # the workload's quality figure (the catalog's)
    ttt = (target or {}).get("table") or {}
    t_col = _column(ttt, S("col_ttt_algoperf")) if ttt.get("rows") and not ttt.get("error") else None
    src = [("c", i) for i in (_column(table, S(k)) for k in KEEP) if i is not None]
    # the run's status where any is more than "ok" (a busy machine, noisy windows, a substitute
    # scope): a verdict read alone must not hide that its figures were taken beside other work
    st = _column(table, S("col_status"))
    if st is not None and any(r[st].get("cls") in ("warn", "flag") for r in table["rows"] if st < len(r)):
        src.insert(2, ("c", st))
    src += [("t", t_col)] if t_col is not None else []
    src += [("c", i) for i in (_column(table, q[0]) for q in qcols) if i is not None]
    src += [("c", i) for i in (_column(table, S(k)) for k in MEMORY) if i is not None and not _all_na(table, i)]
    heads = [(table if k == "c" else ttt)["headers"][i] for k, i in src] + [header(S("h_check"))]
    t_by_id = dict(zip(ttt.get("row_ids") or [], ttt.get("rows") or []))
    by_id = {w.id: w for w in wrows}
    body = []
    for rid, row in zip(table.get("row_ids") or [], table["rows"]):
        line = []
        for k, i in src:
            r = row if k == "c" else t_by_id.get(rid)
            line.append(r[i] if r is not None and i < len(r) else cell("—", None, "na"))
        w = by_id.get(rid)
        line.append(check_cell(w.result.check, S, w.check_failed) if w is not None else cell("—", None, "na"))
        body.append(line)
    # a column n/a in every row says nothing (the DCGAN's time to target where it has no target)
    keep = [j for j in range(len(heads)) if not all(_na(r[j]) for r in body)]
    return {"id": f"table-verdict-{wl}", "headers": [heads[j] for j in keep],
            "rows": [[r[j] for j in keep] for r in body], "sortable": True,
            "row_ids": list(table.get("row_ids") or [])}


def _na(c) -> bool:
    return c.get("cls") == "na" or c.get("t") in ("n/a", "—", "")

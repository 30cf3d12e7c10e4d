"""The GPT's report media (frameval/report/media.py asks the record's `media`
hook): the model's answers to the ten fixed held-out problems at each run's
last evaluation, right and wrong marked, one column a run (every evaluation's
answers stay in result.json, `shown_answers`). Text, no image. The report's
code, not a kernel's: it runs in the runner's environment."""
from __future__ import annotations


def _last(w):
    raw = w.result.raw if isinstance(w.result.raw, dict) else {}
    shown = raw.get("shown_answers")
    points = (raw.get("evaluation") or {}).get("points") or []
    if not isinstance(shown, list) or not shown or not isinstance(shown[-1], list):
        return None, None
    return shown[-1], (points[-1].get("epochs") if points and isinstance(points[-1], dict) else None)


def answers(wrows, S, charts, name, assets_dir, problems, out: dict) -> None:
    runs, columns = [], []
    for w in wrows:
        last, epochs = _last(w) if w.ok else (None, None)
        if last:
            runs.append(S("answers_run", run=w.label, epochs=f"{epochs:g}" if isinstance(epochs, (int, float)) else "?"))
            columns.append(last)
    if not columns:
        return
    rows = []
    for i, first in enumerate(columns[0]):
        text, _, right = first
        row = [{"mark": "", "code": text.split("=", 1)[0] + "=" + right}]
        for c in columns:
            answer, ok = (c[i][0].split("=", 1)[-1], bool(c[i][1])) if i < len(c) else ("?", False)
            row.append({"mark": "✓" if ok else "✗", "code": answer})
        rows.append(row)
    # a table of the report's generic kind (templates: sec.media.tables), one column a run
    out["tables"].append({"title": S("h_answers"), "note": S("answers_note"), "head": [S("col_problem")] + runs,
                          "rows": rows})

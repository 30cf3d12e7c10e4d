"""The result schema's runner side: where results live, loading them (a corrupt
or half-written file becomes a visible failed entry, never a crash), and
writing failure records for runs whose notebook did not finish.

Layout of an output folder:
    <out>/runs/<framework>/<workload>-<mode>[-gpu]/result.json      (+ output.ipynb)
    <out>/runs/<framework>/<workload>-<mode>[-gpu]/r<k>/result.json (repeat k > 1)
(the file names: frameval/files.py)

Notebooks run by hand (JupyterLab, no out_dir) write the same layout into
`paths.hand_runs_dir()`, with a plan.json, and "@name=value,..." (the
parameters changed from the notebook's defaults) after the run folder's name;
a run replaced by one with the same parameters stays as result.replaced.json,
which is not read. So `--report-only --from <hand runs>` needs no other code.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from .files import OUTPUT_NB, PARTIAL, RESULT, RUNS, WORK, atomic_write_json, run_dir


def read_result(path: Path) -> dict:
    """Load one result.json; a corrupt one is returned as a failed record."""
    path = Path(path)
    try:
        r = json.loads(path.read_text())
        if not isinstance(r, dict) or "framework" not in r or "workload" not in r:
            raise ValueError("not a frameval result (no framework/workload)")
        return r
    except (OSError, ValueError) as e:
        parts = path.parent.relative_to(path.parents[2]).parts if len(path.parents) > 2 else ("?", "?")
        fw = parts[0]
        wl, _, mode = parts[1].partition("-") if len(parts) > 1 else ("?", "", "?")
        return {"framework": fw, "workload": wl, "mode": mode.split("-")[0] or "?", "status": "failed",
                "error": {"type": "CorruptResult", "message": f"{path.name} unreadable: {e}", "traceback": ""},
                "epochs": [], "params": {}, "param_counts": {}}


def is_repeat_dir(d) -> bool:
    """Whether a run folder is a repeat's, r2/, r3/ ... inside the first repeat's (files.run_dir)."""
    return bool(re.fullmatch(r"r\d+", Path(str(d)).name))


def _located(res: Path, src) -> dict:
    """The result in `res`, with where it was found: `_dir` (its run folder),
    `_source` (the output folder) and `_notebook` (the executed notebook, if there)."""
    r = read_result(res)
    r["_dir"] = str(res.parent)
    r["_source"] = str(src)
    nbp = res.parent / OUTPUT_NB
    r["_notebook"] = str(nbp) if nbp.exists() else None
    return r


def load_runs(*sources, repeats: bool = False) -> list:
    """Every result under each source's `runs/` folder, located (`_located`).
    Partial results of crashed runs that the runner never finalised are listed
    as failed. Repeats (r2/, r3/ ...) are summarised in the first repeat's
    "repeats" list; `repeats=True` reads their own results too, after all the
    first repeats (the report shows a repeat that failed)."""
    out = []
    for src in sources:
        out += [_located(res, src) for res in sorted((Path(src) / RUNS).glob(f"*/*/{RESULT}"))]
    for src in sources if repeats else ():
        out += [_located(res, src) for res in sorted((Path(src) / RUNS).glob(f"*/*/r*/{RESULT}"))
                if is_repeat_dir(res.parent)]
    return out


def failure_record(run, error_type: str, message: str, tb: str = "", partial: dict | None = None) -> dict:
    """A result for a run whose notebook failed, keeping whatever it measured."""
    base = dict(partial or {})
    base.update({
        "framework": run.framework, "workload": run.workload, "mode": run.mode, "device": run.device,
        "status": "failed",
        "error": {"type": error_type, "message": message, "traceback": tb[-4000:]},
        "params": base.get("params") or dict(run.params),
    })
    base.setdefault("epochs", [])
    base.setdefault("param_counts", {})
    return base


def load_partial(d: Path) -> dict | None:
    try:
        return json.loads((Path(d) / PARTIAL).read_text())
    except (OSError, ValueError):
        return None


def write_result(d: Path, result: dict) -> Path:
    return atomic_write_json(Path(d) / RESULT, result)


__all__ = ["run_dir", "read_result", "load_runs", "failure_record",
           "load_partial", "write_result", "RESULT", "PARTIAL", "WORK"]

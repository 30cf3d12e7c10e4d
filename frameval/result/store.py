"""The runner's side of a result: where results live, finding them all
(`load_runs`), and the store: the runner's changes to a run's result.json
after its notebook (failure records, the runner's fields, reuse marks, repeats
merged). Every read and write goes through the result's own reader and writer
(frameval/result/__init__.py: `load`, `save`).

Layout of an output folder:
    <out>/runs/<framework>/<workload>-<mode>[-gpu]/result.json      (+ output.ipynb)
    <out>/runs/<framework>/<workload>-<mode>[-gpu]/r<k>/result.json (repeat k > 1)
    <out>/runs/<framework>/<workload>-<mode>[-gpu]/seed-<n>/[r<k>/]result.json
                                        (a --seeds replicate, seed n other than the notebook's own)
(the file names: frameval/files.py)

Notebooks run by hand (JupyterLab, no out_dir) write the same layout into
`paths.hand_runs_dir()`, with a plan.json, and "@name=value,..." (the
parameters changed from the notebook's defaults) after the run folder's name;
a run replaced by one with the same parameters stays as result.replaced.json,
which is not read. So `--report-only --from <hand runs>` needs no other code.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

from ..files import OUTPUT_NB, PARTIAL, RESULT, RUNS, SEED_DIR, WORK, read_json, run_dir
from . import NOT_OFFERED, failure_result, load, save


def is_repeat_dir(d) -> bool:
    """Whether a run folder is a repeat's, r2/, r3/ ... inside the first repeat's (files.run_dir)."""
    return bool(re.fullmatch(r"r\d+", Path(str(d)).name))


def is_seed_dir(d) -> bool:
    """Whether a folder is a --seeds replicate's, seed-<n>/ inside its run's (files.run_dir)."""
    return bool(re.fullmatch(SEED_DIR.format(r"\d+"), Path(str(d)).name))


def run_base(d) -> str:
    """The run's own folder of a result folder: without r<k>/ and seed-<n>/,
    so a run's repeats and seeds fold into one report row."""
    d = Path(str(d))
    if is_repeat_dir(d):
        d = d.parent
    return str(d.parent if is_seed_dir(d) else d)


def _located(res: Path, src) -> dict:
    """The result in `res`, with where it was found: `_dir` (its run folder),
    `_source` (the output folder) and `_notebook` (the executed notebook, if there)."""
    r = load(res)
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
        out += [_located(res, src) for res in sorted((Path(src) / RUNS).glob(f"*/*/seed-*/{RESULT}"))
                if is_seed_dir(res.parent)]
    for src in sources if repeats else ():
        out += [_located(res, src) for res in sorted((Path(src) / RUNS).glob(f"*/*/r*/{RESULT}"))
                if is_repeat_dir(res.parent)]
        out += [_located(res, src) for res in sorted((Path(src) / RUNS).glob(f"*/*/seed-*/r*/{RESULT}"))
                if is_repeat_dir(res.parent) and is_seed_dir(res.parent.parent)]
    return out


# ------------------------------------------------------------------ the store
# The only code that writes a run's result.json after its notebook has (the
# notebook's Recorder writes it inside the kernel, through files.py's atomic
# writer). Everything the runner adds, on either executor, comes through here.

def failure_record(run, error_type: str, message: str, tb: str = "", partial: dict | None = None) -> dict:
    """A result for a run whose notebook failed, keeping whatever it measured."""
    return failure_result(run.framework, run.workload, run.mode, run.device, run.params,
                          {"type": error_type, "message": message, "traceback": tb[-4000:]}, partial)


def load_partial(d: Path) -> dict | None:
    """What a run's notebook had measured when it stopped (result.partial.json), or None."""
    return read_json(Path(d) / PARTIAL, None)


def _write(d: Path, result: dict) -> Path:
    return save(Path(d) / RESULT, result)


def clear_for_run(d: Path) -> None:
    """Before an execution: no stale result or partial record, and an empty
    work/ (a rerun would otherwise find the last run's compile caches: torch
    inductor's made a 42 s LeNet run take 10 s)."""
    d.mkdir(parents=True, exist_ok=True)
    for stale in (RESULT, PARTIAL):
        (d / stale).unlink(missing_ok=True)
    shutil.rmtree(d / WORK, ignore_errors=True)


def record_failure(d: Path, run, error_type: str, message: str, tb: str = "", partial: dict | None = None,
                   **extra) -> dict:
    """A failed run's record (keeping what `partial` measured), with `extra` keys."""
    rec = failure_record(run, error_type, message, tb, partial)
    rec.update(extra)
    _write(d, rec)
    return rec


def finished_record(d: Path) -> dict | None:
    """The record the notebook finished with, or None if it wrote none that counts."""
    p = Path(d) / RESULT
    res = load(p) if p.exists() else None
    return res if res and res.get("status") in ("ok", "failed", "check_failed") else None


def complete(d: Path, run, res: dict | None, error: tuple | None, runner_fields: dict,
             env_fields: dict | None = None) -> dict:
    """After an execution: the notebook's record completed with what only the
    runner knows (`runner_fields`: cache key, wall time, the Slurm node...;
    `env_fields` go under "environment"), or, where it finished none, a failure
    record from `error` (type, message, traceback) keeping the partial one."""
    if res is None:
        res = failure_record(run, *error, partial=load_partial(d))
    res.update(runner_fields)
    if env_fields:
        res.setdefault("environment", {}).update(env_fields)
    res.pop("reused", None)
    _write(d, res)
    return res


def set_resume(d: Path, record: dict) -> dict:
    """-p resume_check: the second kernel's comparison (or its failure) as the run's `resume`."""
    res = load(Path(d) / RESULT)
    res["resume"] = record
    _write(d, res)
    return res


def mark_reused(d: Path) -> dict:
    """A cached result the plan reuses: marked, so the report can say so."""
    res = load(Path(d) / RESULT)
    res["reused"] = True
    _write(d, res)
    return res


def planned_dir(out: Path, run, repeat: int | None = None) -> Path:
    """The folder of a planned run (plan.Run): the one place its fields become a
    path, so a new axis of the plan (a sweep's tag) reaches every reader at once."""
    return run_dir(out, run.fw_key, run.workload, run.mode, run.device, run.repeat if repeat is None else repeat, run.tag,
                   run.seed_dir)


def merge_repeats(out: Path, runs, repeats: int) -> None:
    """Put every ok repeat's steady epoch time into the first repeat's result."""
    if repeats <= 1:
        return
    for run in (r for r in runs if r.repeat == 1):
        steady = []
        for k in range(1, repeats + 1):
            p = planned_dir(out, run, k) / RESULT
            if p.exists():
                r = load(p)
                if r.get("status") == "ok":
                    steady.append(r.get("steady_epoch_s"))
        first = planned_dir(out, run, 1)
        if (first / RESULT).exists():
            r = load(first / RESULT)
            r["repeats"] = steady
            _write(first, r)


def any_failed(out: Path, runs) -> bool:
    """Any planned run whose result is missing or not ok (other runs in the folder do not count)."""
    for run in runs:
        p = planned_dir(out, run) / RESULT
        if not p.exists() or load(p).get("status") not in ("ok", NOT_OFFERED):  # declined: a result (#69)
            return True
    return False


__all__ = ["run_dir", "planned_dir", "load", "load_runs", "failure_record", "load_partial", "clear_for_run",
           "record_failure", "finished_record", "complete", "mark_reused", "merge_repeats", "any_failed",
           "RESULT", "PARTIAL", "WORK"]

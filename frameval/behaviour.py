"""Tensor behaviour against NumPy, and each framework's error messages (#40):
the behaviour cases and common mistakes of `frameval/envscripts/behaviour.py` run in
every framework's environment (through frameval/envscripts/__init__.py: cached per
environment, machine and the scripts' source), NumPy's own outcomes of the
same cases computed here, and both written to `<out>/behaviour.json`.

The file holds outcomes, never verdicts: `verdict()` turns a framework's
outcome and NumPy's into "same", "differs", "raises" or "na", so the report
and the tests judge from one rule and a changed rule needs no new run.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from . import envscripts, files, frameworks

BEHAVIOUR = "behaviour.json"  # <out>/behaviour.json
MODULE = "frameval.envscripts.behaviour"
# The framework-side modules the script imports (with the framework's own parts:
# `sources`): a change to any of them runs the cases again.
SOURCES = ("frameval.envscripts.behaviour_cases", "frameval.envscripts.behaviour_adapters", "frameval.envscripts.mistakes")
PARTS = ("behaviour", "mistakes", "support")


def sources(framework: str) -> tuple:
    return SOURCES + frameworks.part_modules(framework, PARTS)
VERDICTS = ("same", "differs", "raises", "na")
RTOL = 1e-5


def reference() -> dict:
    """NumPy's outcome of every case, in this process (the runner's numpy)."""
    import numpy as np
    from .envscripts.behaviour import run_cases
    from .envscripts.behaviour_adapters import Numpy
    return {"numpy": np.__version__, "cases": run_cases(Numpy())}


def measure(env_by_fw: dict, say=print, use_cache: bool = True) -> dict:
    """The reference and every built environment's outcomes (its error a one-line "error")."""
    t0, load = time.perf_counter(), _load()
    out = {"reference": reference(), "frameworks": {}}
    for key, env in sorted(env_by_fw.items()):
        if not hasattr(env, "python"):  # did not build: its runs are recorded failed
            continue
        fw = key.split("==")[0]
        got = envscripts.run(env, MODULE, [fw], also=sources(fw), timeout=600, use_cache=use_cache)
        out["frameworks"][key] = got
    out.update(load_before=load, load_after=_load(), seconds=round(time.perf_counter() - t0, 2),
               measured=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    fresh = [k for k, g in out["frameworks"].items() if not g.get("cached")]
    bad = [k for k, g in out["frameworks"].items() if "error" in g]
    say(f"frameval: tensor behaviour against NumPy and error messages: {len(out['frameworks'])} framework(s) in "
        f"{out['seconds']:.1f} s ({'run: ' + ', '.join(fresh) if fresh else 'all cached'}; load {load})"
        + (f"; could not run: {', '.join(bad)}" if bad else ""))
    return out


def _cache_path(env, fw: str):
    return envscripts.cache_path(env, MODULE, [fw], also=sources(fw))


def plan_line(env_by_fw: dict) -> str:
    """What --behaviour would do, for --dry-run: each built environment's outcomes cached or to be run."""
    ready = {k: e for k, e in sorted(env_by_fw.items()) if getattr(e, "ready", False)}
    cached = [k for k, e in ready.items() if _cache_path(e, k.split("==")[0]).exists()]
    todo = [k for k in ready if k not in cached]
    unbuilt = sorted(set(env_by_fw) - set(ready))
    return ("frameval: --behaviour: " + (f"run in {', '.join(todo)}" if todo else "nothing to run")
            + (f"; cached: {', '.join(cached)}" if cached else "")
            + (f"; environment not built yet: {', '.join(unbuilt)}" if unbuilt else ""))


def record(out_dir, say=print, env_by_fw: dict | None = None, use_cache: bool = True) -> dict:
    """Measure and write `<out_dir>/behaviour.json`."""
    m = measure(env_by_fw or {}, say, use_cache)
    files.atomic_write_json(Path(out_dir) / BEHAVIOUR, m)
    return m


def read(folder) -> dict | None:
    """`<folder>/behaviour.json`, or None."""
    m = files.read_json(Path(folder) / BEHAVIOUR, None)
    return m if isinstance(m, dict) else None


def _load():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


# ------------------------------------------------------------------ judging
def expected(case) -> dict:
    """A case's hand-written `expect` as an outcome (what NumPy must answer)."""
    import numpy as np
    from .envscripts.behaviour_cases import Raises
    if isinstance(case.expect, Raises):
        return {"raises": case.expect.type}
    if isinstance(case.expect, tuple):
        dtype, value = case.expect
        return {"value": {"dtype": dtype, "shape": list(np.shape(value)), "data": value}}
    return {"value": case.expect}


def verdict(ref: dict, got: dict, values_only: bool = False) -> str:
    """"na" where the framework has nothing to ask; "raises" where only it
    raised; "same" where both raised or both gave equal values (dtype, shape,
    values to RTOL); else "differs"."""
    if not isinstance(got, dict) or "na" in got:
        return "na"
    if "raises" in got:
        return "same" if "raises" in ref else "raises"
    if "raises" in ref or "value" not in got:
        return "differs"
    return "same" if equal(ref.get("value"), got["value"], values_only) else "differs"


def equal(a, b, values_only: bool = False) -> bool:
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return a == b and type(a) is type(b)
    import numpy as np
    if a.get("shape") != b.get("shape") or (not values_only and a.get("dtype") != b.get("dtype")):
        return False
    try:
        x, y = np.asarray(a.get("data"), dtype=float), np.asarray(b.get("data"), dtype=float)
    except (TypeError, ValueError):
        return a.get("data") == b.get("data")
    return x.shape == y.shape and bool(np.allclose(x, y, rtol=RTOL, atol=0, equal_nan=True))


def show(outcome) -> str:
    """An outcome in a few words: "float32 [4, 2]", "IndexError: ...", the reason."""
    if not isinstance(outcome, dict):
        return "not available"
    if "na" in outcome:
        return str(outcome["na"])
    if "raises" in outcome:
        return f"{outcome['raises']}: {outcome.get('message', '')}".rstrip(": ")
    v = outcome.get("value")
    if isinstance(v, dict):
        data = json.dumps(v.get("data"))
        data = data if len(data) <= 80 else data[:77] + "…"
        shape = "" if len(v.get("shape") or []) <= 1 else f" shape {tuple(v['shape'])}"
        return f"{v.get('dtype')}{shape} {data}"
    return json.dumps(v)


def judged(m: dict) -> dict:
    """{fw_key: {case_id: {"verdict", "numpy", "got"}}} for every framework that ran
    (a framework whose script failed: every case "not available" with the error)."""
    from .envscripts.behaviour_cases import CASES
    ref = ((m or {}).get("reference") or {}).get("cases") or {}
    out = {}
    for key, got in ((m or {}).get("frameworks") or {}).items():
        cases = (got or {}).get("cases") or {}
        row = {}
        for c in CASES:
            if c.id not in cases:
                row[c.id] = {"verdict": "na", "numpy": show(ref.get(c.id)),
                             "got": f"could not run: {(got or {}).get('error') or 'not available'}"}
                continue
            row[c.id] = {"verdict": verdict(ref.get(c.id) or {}, cases[c.id], c.values_only),
                         "numpy": show(ref.get(c.id)), "got": show(cases[c.id])}
        out[key] = row
    return out

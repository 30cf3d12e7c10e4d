"""Every behaviour case (frameval/envscripts/behaviour_cases.py) and every common
mistake (frameval/envscripts/mistakes.py) run in one framework's environment:
`python -m frameval.envscripts.behaviour FRAMEWORK` prints one JSON line,

    {"framework", "version", "api", "cases": {id: outcome}, "mistakes": {id: record}}

An outcome is what the framework did, never a verdict: {"value": ...} (an
array as {"dtype", "shape", "data"}), {"raises": type, "message": first line},
or {"na": why}. The runner compares each with NumPy's own outcome of the same
case (frameval/behaviour.py), so the reference is one NumPy for every column.
One process for both: a framework is imported once (TensorFlow's import alone
takes seconds). numpy + standard library + the framework.
"""
from __future__ import annotations

import json
import sys

import numpy as np

MAX_ITEMS = 64  # an outcome's data is cut here (no case returns more)


def encode(value, xp) -> dict:
    """A case's return value as JSON: arrays with their dtype and shape."""
    if xp.is_tensor(value) and not isinstance(value, (np.ndarray, np.generic)):
        value = xp.np(value)
    if isinstance(value, (np.ndarray, np.generic)):
        a = np.asarray(value)
        if a.dtype == object:
            return {"value": {"dtype": "object", "shape": list(a.shape), "data": repr(a.tolist())[:200]}}
        data = a.ravel()[:MAX_ITEMS].tolist()
        return {"value": {"dtype": str(a.dtype), "shape": [int(n) for n in a.shape],
                          "data": np.asarray(data).reshape(a.shape).tolist() if a.size <= MAX_ITEMS else data}}
    if isinstance(value, (bool, int, float, str)) or value is None:
        return {"value": value}
    if isinstance(value, (list, tuple)):
        return {"value": [v if isinstance(v, (bool, int, float, str)) else str(v) for v in value]}
    return {"value": f"<{type(value).__name__}>"}


def first_line(exc: BaseException) -> str:
    """The message's first line; where it opens with a C++ traceback (MXNet), its last line, which says what."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    if lines and lines[0].startswith("Traceback"):
        return lines[-1][:300]
    return (lines[0] if lines else "")[:300]


def run_case(case, xp) -> dict:
    from frameval.envscripts.behaviour_adapters import NotApplicable
    try:
        value = case.fn(xp)
        xp.sync()
        return encode(value, xp)
    except NotApplicable as e:
        return {"na": str(e)}
    except Exception as e:  # noqa: BLE001 - what a framework raises is the finding
        return {"raises": type(e).__name__, "message": first_line(e)}


def run_cases(xp) -> dict:
    from frameval.envscripts.behaviour_cases import CASES
    return {c.id: run_case(c, xp) for c in CASES}


def main(framework: str) -> dict:
    import warnings
    warnings.simplefilter("ignore")  # deprecation chatter is not a behaviour
    from frameval.envscripts.behaviour_adapters import adapter
    from frameval.envscripts import mistakes
    xp = adapter(framework)()
    return {"framework": framework, "version": xp.version(), "api": xp.api, "numpy": np.__version__,
            "cases": run_cases(xp), "mistakes": mistakes.run_all(framework, xp.sync)}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))

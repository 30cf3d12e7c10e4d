"""One run's `result.json`, as its readers (the report, the comparison) see it.

Standard library only: `frameval.nb` (numpy + standard library, inside the
framework environments) imports the check's section names from here.
"""
from __future__ import annotations

import math

# The parts of the numerical check (result["check"], written by
# frameval/nb/check.py), in the order the check prints them and the report shows them.
CHECK_SECTIONS = ("forward", "losses", "grads", "update", "running")
# The check before its second version (one optimizer step where "update" now
# takes k) wrote "step"; the report still reads it in results of that time.
LEGACY_CHECK_SECTIONS = ("step",)
# What a reader of any result looks for, in the report's column order.
CHECK_SECTIONS_READ = CHECK_SECTIONS[:3] + LEGACY_CHECK_SECTIONS + CHECK_SECTIONS[3:]


# ------------------------------------------------------------------ reading values
def number(v) -> float | None:
    """A recorded value as a finite float, or None: not measured (None), the
    text of a non-finite number ("nan", "inf": JSON has none, so the recorder
    writes them as text), a bool, or anything else that is not a number."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        x = float(v)
    except OverflowError:  # an integer beyond any float
        return None
    return x if math.isfinite(x) else None


def as_dict(v) -> dict:
    """A value that should be a JSON object: itself, or {} when it is not one."""
    return v if isinstance(v, dict) else {}


def as_list(v) -> list:
    """A value that should be a JSON array: itself, or [] when it is not one."""
    return v if isinstance(v, list) else []

"""One run's `result.json`, as its readers (the report, the comparison) see it.

Standard library only: `frameval.nb` (numpy + standard library, inside the
framework environments) imports the check's section names from here.
"""
from __future__ import annotations

# The parts of the numerical check (result["check"], written by
# frameval/nb/check.py), in the order the check prints them and the report shows them.
CHECK_SECTIONS = ("forward", "losses", "grads", "update", "running")
# The check before its second version (one optimizer step where "update" now
# takes k) wrote "step"; the report still reads it in results of that time.
LEGACY_CHECK_SECTIONS = ("step",)
# What a reader of any result looks for, in the report's column order.
CHECK_SECTIONS_READ = CHECK_SECTIONS[:3] + LEGACY_CHECK_SECTIONS + CHECK_SECTIONS[3:]

"""The fault tests' hook, read in one place: FRAMEVAL_INJECT_FAULT holds
"<framework>/<workload>:<kind>" specs, several separated by ";" (one per run).
The kinds a run's first epoch acts on (raise, abort, sleep, grow, kill) are
nb/record.py's; the serving faults (serve-full, serve-corrupt) nb/serving.py's;
the resume faults (resume-missing: the runner deletes the checkpoint before
the second kernel; resume-fresh-optimizer: the second kernel's optimizer state
is reset after the restore, the mutation the comparison must catch) are
frameval/execute.py's and nb/resume.py's. Standard library only."""
from __future__ import annotations

import os

VAR = "FRAMEVAL_INJECT_FAULT"


def injected(framework: str, workload: str, prefix: str) -> str:
    """The kind injected into this framework's workload that starts with `prefix`, or ""."""
    for spec in os.environ.get(VAR, "").split(";"):
        target, _, kind = spec.partition(":")
        if target == f"{framework}/{workload}" and kind.startswith(prefix):
            return kind
    return ""

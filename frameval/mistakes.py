"""The scores of an error message (#40), properties anyone can check against
the record of one mistake (frameval/envscripts/mistakes.py, run by frameval/behaviour.py):

- "sizes": the message names the sizes (or types) involved: every one of the
  mistake's `sizes` patterns appears in it;
- "op": it names the operation (one of the mistake's `op` words);
- "line": the traceback's last frame is the user's line, not a frame deep in
  the framework (an error that surfaced only at a later synchronisation points
  at no line of the user's);
- "short": it fits in a few lines (FEW_LINES, each line counted as wrapped at
  WRAP characters).

A score is True, False, or None where it cannot apply: the mistake ran without
an error, or has nothing to name (no sizes are involved). Standard library only.
"""
from __future__ import annotations

import math
import re

from .envscripts.mistakes import BY_ID, MISTAKES

SCORES = ("sizes", "op", "line", "short")
FEW_LINES = 4
WRAP = 100


def wrapped_lines(message: str) -> int:
    return sum(max(1, math.ceil(len(line) / WRAP)) for line in (message or "").splitlines() or [""])


def score(mistake_id: str, rec: dict) -> dict:
    """{score: True/False/None} for one framework's record of one mistake."""
    m = BY_ID[mistake_id]
    if not isinstance(rec, dict) or not rec.get("raised"):
        return dict.fromkeys(SCORES)
    msg = rec.get("message") or ""
    chars = rec.get("chars") or len(msg)
    return {"sizes": all(re.search(p, msg, re.IGNORECASE) for p in m.sizes) if m.sizes else None,
            "op": any(w.lower() in msg.lower() for w in m.op),
            "line": bool(rec.get("last_is_user")),
            "short": chars <= FEW_LINES * WRAP and wrapped_lines(msg) <= FEW_LINES}


def counts(records: dict) -> dict:
    """Per score, how many of a framework's mistakes earned it and how many could
    ({"sizes": [earned, possible], ...}), plus "raised" and "silent" (ran without an error)."""
    out = {s: [0, 0] for s in SCORES}
    raised = silent = 0
    for m in MISTAKES:
        rec = (records or {}).get(m.id)
        if isinstance(rec, dict) and "na" not in rec:
            raised += bool(rec.get("raised"))
            silent += not rec.get("raised")
        for s, v in score(m.id, rec).items():
            if v is not None:
                out[s][0] += bool(v)
                out[s][1] += 1
    return dict(out, raised=raised, silent=silent)

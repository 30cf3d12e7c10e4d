"""The report is never lost: every chart, GIF, table, section and finding is
built under a guard. One that raises is replaced, in both formats, by a
visible "could not draw <what>: <reason>" and listed in the errors summary;
the rest of the report is written. Only a report that cannot be written at
all is fatal (`ReportError`, one line saying why).

    problems = Problems(S)
    chart = problems.run(S("what_chart", name=title), charts.bars, ..., default=None)

Test hook: FRAMEVAL_REPORT_FAULT="<text>" makes every part whose description
contains <text> fail, the way a real bug would (e.g. "GIF", "the table").
"""
from __future__ import annotations

import os
import re

REASON_CHARS = 300


class ReportError(RuntimeError):
    """No report could be written; the message says why, in one line."""


class ReportIncomplete(RuntimeError):
    """The report was written, but some of its parts could not be drawn."""


def one_line(exc: BaseException, limit: int = REASON_CHARS) -> str:
    """`Type: message` on one line, shortened."""
    msg = re.sub(r"\s+", " ", str(exc)).strip()
    text = f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__
    return text if len(text) <= limit else text[:limit - 1] + "…"


class Problems:
    """The parts of the report that could not be drawn, in order, without repeats."""

    def __init__(self, S):
        self.S = S
        self.items: list = []
        self.fault = os.environ.get("FRAMEVAL_REPORT_FAULT", "")

    def inject(self, what: str):
        """Raise when the test hook names this part."""
        if self.fault and self.fault in str(what):
            raise RuntimeError(f"injected failure (FRAMEVAL_REPORT_FAULT={self.fault})")

    def add(self, what: str, exc: BaseException) -> dict:
        reason = one_line(exc)
        for it in self.items:
            if it["what"] == what and it["reason"] == reason:
                return it
        it = {"what": str(what), "reason": reason, "text": self.S("could_not_draw", what=what, reason=reason)}
        self.items.append(it)
        return it

    def run(self, what: str, fn, *args, default=None, **kw):
        """fn(*args, **kw), or `default` (called when callable) after recording the failure."""
        try:
            self.inject(what)
            return fn(*args, **kw)
        except Exception as e:  # noqa: BLE001 - that is the point: one part fails, the report goes on
            it = self.add(what, e)
            return default(it) if callable(default) else default

    def texts(self) -> list:
        return [it["text"] for it in self.items]

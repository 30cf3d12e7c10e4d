"""One sentence of the report's summary, typed: what the findings modules
(report/findings.py, peak.py, scaling.py and the workloads' own) return and
the templates lay out."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    kind: str    # speed, memory, quality (one list per workload) or another group
    text: str
    anchor: str  # the section that backs the sentence
    flag: bool = False   # shown with a warning mark
    alert: bool = False  # also among the report's first lines
    details: tuple = ()  # the sentences that back `text`, one claim each (shown as sub-points)

    @property
    def full(self) -> str:
        return " ".join((self.text, *self.details))

"""What the report derives from its rows, kept beside them: the rows are
frozen (report/model.py), and what is computed from several of them lives
here, built once per report by `analyse`:

- each row's speed against the fastest of its ranking group, the ratio's 95%
  interval and verdict (speed.ratio_interval): `an.interval(w)`;
- each row's GFLOP/s and its shares of the machine's peak and of its
  framework's own GEMM (report/peak.py): `an.peak(w)`.

A row is its own key (rows compare by identity), so two rows that read alike
never share an analysis.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from .. import speed
from .model import fastest_by_group, run_windows, speed_ratio
from .peak import NO_PEAK, Peak, peak_of


@dataclass(frozen=True)
class Analysis:
    intervals: Mapping = field(default_factory=lambda: MappingProxyType({}))
    peaks: Mapping = field(default_factory=lambda: MappingProxyType({}))

    def interval(self, w):
        """speed.ratio_interval's dict for w against its group's fastest, or
        None (the fastest itself, a failed run, a group of one)."""
        return self.intervals.get(w)

    def verdict(self, w):
        """"slower", "faster" or "same" against the fastest, or None."""
        iv = self.interval(w)
        return iv.get("verdict") if iv else None

    def peak(self, w) -> Peak:
        return self.peaks.get(w, NO_PEAK)


def speed_intervals(rows) -> dict:
    """{row: the ratio's interval} against the fastest of its workload,
    device and size (speed.ratio_interval on the runs' windows)."""
    out = {}
    for wl in {w.workload for w in rows}:
        wrows = [w for w in rows if w.workload == wl]
        for best in fastest_by_group(wrows).values():
            base = run_windows(best)
            for w in wrows:
                if w is not best and speed_ratio(w, best) is not None:
                    out[w] = speed.ratio_interval(base, run_windows(w))
    return out


def analyse(rows, by_source=None, problems=None, S=None) -> Analysis:
    """The report's analysis of its rows. `by_source`: each output folder's
    machine record (report/peak.machines); without it no peak is known. Under
    `problems`, a peak that cannot be computed is reported and left out, and
    the rest of the report goes on."""
    intervals = speed_intervals(rows)
    peaks = {}
    if by_source is not None:
        def all_peaks():
            return {w: peak_of(w, by_source) for w in rows}
        peaks = all_peaks() if problems is None else problems.run(S("what_section", name=S("h_peak")), all_peaks,
                                                                   default=lambda it: {})
    return Analysis(MappingProxyType(intervals), MappingProxyType(peaks or {}))

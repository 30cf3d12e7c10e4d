"""Where the report calls a quality ranking, and how it writes quality
figures: read by the tables (bold only where a ranking is called), the charts
and the summary's sentences alike, so the three never disagree (issue #49)."""
from __future__ import annotations

import math

from collections.abc import Mapping

from .. import speed, stats, workloads
from ..catalog import WORKLOAD_BY_KEY
from . import fmt

# Each Quality.format: how a figure is written, and a difference of two (over seeds: report/findings.py).
FORMATS = {"percent": (fmt.percent, lambda d: f"{d * 100:.2f} pt"),
           "fixed1": (lambda v: fmt.fixed(v, 1), lambda d: fmt.fixed(d, 1)),
           "fixed4": (lambda v: fmt.fixed(v, 4), lambda d: fmt.fixed(d, 4)),
           "sig": (fmt.sig, fmt.sig)}


class _ByMetric(Mapping):
    """{quality key: writer}, read from the registered workloads' records when asked
    (a workload registered later, a test's toy, is seen too): no table of names here."""

    def __init__(self, which: int):
        self.which = which

    def _table(self) -> dict:
        return {w.quality.key: FORMATS[w.quality.format][self.which] for w in workloads.REGISTRY.values()}

    def __getitem__(self, key):
        return self._table()[key]

    def __iter__(self):
        return iter(self._table())

    def __len__(self):
        return len(self._table())


# How the tables and the findings write a workload's quality figure, and a difference of two.
QUALITY_FORMAT, QUALITY_DIFF = _ByMetric(0), _ByMetric(1)


def extremes(vals, higher_is_better=True):
    """The best and the worst (run, value) in the figure's direction (a
    distance: the lowest is the best)."""
    hi, lo = max(vals, key=lambda x: x[1]), min(vals, key=lambda x: x[1])
    return (hi, lo) if higher_is_better is not False else (lo, hi)


# Beside a verdict that rests on a between-run spread measured on another machine (#67).
PROVISIONAL_MARK = "‡"


def noise_where(rows, S, an) -> str:
    """Where the between-run spread that widened these rows was measured: this
    machine (pairs, SD with its interval, when), or another machine, which makes
    every verdict provisional, with the command that measures this one (#67)."""
    rows = list(rows)
    recs = [an.noises.get(w) for w in rows]
    if rows and all(recs):
        r = max(recs, key=lambda n: n["sd"])
        return S("noise_here", pairs=len(r.get("pairs") or []), sd=f"{r['sd']:.3f}", lo=f"{r['lo']:.3f}",
                 hi=f"{r['hi']:.3f}", pct=f"{(math.exp(r['sd']) - 1) * 100:.1f}", when=str(r.get("measured", "?"))[:10])
    sd = speed.BETWEEN_RUN_SD
    return S("noise_elsewhere", sd=f"{sd:.3f}", pct=f"{(math.exp(sd) - 1) * 100:.1f}",
             cores=speed.MEASURED_ON["cores"], cpu=speed.MEASURED_ON["cpu"])


def measured_where(rows, S) -> str:
    """Where the spreads the report quotes were measured (speed.MEASURED_ON), as
    the sentence needs it: "on this machine" where every row is a CPU run on a
    machine of that kind, else the development machine, named, and not this one."""
    def like(w):
        m = w.result.environment.get("machine") if isinstance(w.result.environment.get("machine"), dict) else {}
        return ((w.device or "cpu") == speed.MEASURED_ON["device"] and m.get("cores") == speed.MEASURED_ON["cores"]
                and speed.MEASURED_ON["cpu"] in str(m.get("cpu") or ""))
    rows = list(rows)
    if rows and all(like(w) for w in rows):
        return S("measured_here")
    return S("measured_elsewhere", cores=speed.MEASURED_ON["cores"], cpu=speed.MEASURED_ON["cpu"])


def seed_spread(workload, rows):
    """The seed-to-seed spread measured for the rows' data set (docs/workloads.md),
    where all rows train on one data set and it was measured; else None."""
    names = {workload.data_name(dict(w.result.params or {})) for w in rows}
    return workload.seed_spread.get(names.pop()) if len(names) == 1 else None


def quality_called(wl, wrows, an) -> bool:
    """Whether the summary calls a best final quality for this workload from
    one seed each (quality_finding's "the best ... is"): a direction, two runs
    or more that differ at the precision shown, and a gap beyond the seed noise
    measured for the data set. Only then is a quality cell bold; over seeds the
    table shows means with intervals and no bold."""
    workload = WORKLOAD_BY_KEY.get(wl)
    ok = [w for w in wrows if w.counted]
    if workload is None or workload.quality.higher_is_better is None:
        return False
    if any(an.quality(w).n >= stats.MIN_SEEDS for w in ok):
        return False
    vals = [x for x in ((w, fmt.num(w.result.quality())) for w in ok) if x[1] is not None]
    if len(vals) < 2:
        return False
    show = QUALITY_FORMAT[workload.quality.key]
    best, worst = extremes(vals, workload.quality.higher_is_better)
    spread = seed_spread(workload, ok)
    return (show(best[1]) != show(worst[1]) and spread is not None
            and abs(best[1] - worst[1]) > stats.seed_noise(spread.sd))

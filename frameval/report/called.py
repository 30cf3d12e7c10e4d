"""Where the report calls a quality ranking, and how it writes quality
figures: read by the tables (bold only where a ranking is called), the charts
and the summary's sentences alike, so the three never disagree (issue #49)."""
from __future__ import annotations

from .. import stats
from ..catalog import WORKLOAD_BY_KEY
from . import fmt

# How the tables and the findings write a workload's quality figure (catalog.Quality.key).
QUALITY_FORMAT = {"test_acc": fmt.percent, "exact_match": fmt.percent, "val_r2": lambda v: fmt.fixed(v, 4), "fid": lambda v: fmt.fixed(v, 1)}
# How a difference of two quality figures is written (over seeds: report/findings.py).
QUALITY_DIFF = {"test_acc": lambda d: f"{d * 100:.2f} pt", "exact_match": lambda d: f"{d * 100:.2f} pt", "val_r2": lambda d: fmt.fixed(d, 4), "fid": lambda d: fmt.fixed(d, 1)}


def extremes(vals, higher_is_better=True):
    """The best and the worst (run, value) in the figure's direction (a
    distance: the lowest is the best)."""
    hi, lo = max(vals, key=lambda x: x[1]), min(vals, key=lambda x: x[1])
    return (hi, lo) if higher_is_better is not False else (lo, hi)


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

"""Time to a target quality (MLPerf's and AlgoPerf's measure): the training
time, samples and epochs a run took until its quality metric, evaluated at
fixed points during training (result["evaluation"]["points"]), first reached
the workload's target (`Workload.target(params)`).

Standard library only, like frameval/speed.py: the notebooks' recorder
computes result["time_to_target"] with it inside every framework's kernel, and
the report recomputes the same figure from the recorded points, so the two can
never disagree silently (tests/test_time_to_target.py compares them).
"""
from __future__ import annotations

import math

# What a point records cumulatively up to its evaluation (training only: the
# evaluation's own seconds are kept out of train_s).
CUMULATIVE = ("train_s", "samples", "epochs")


def _finite(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    x = float(v)
    return x if math.isfinite(x) else None


def reaches(value, target, higher_is_better: bool) -> bool:
    """Whether a metric value meets the target; exactly equal counts as reached."""
    return value >= target if higher_is_better else value <= target


def time_to_target(points, metric, target, higher_is_better) -> dict:
    """{"metric", "target", "higher_is_better", "reached", "train_s", "samples",
    "epochs"} at the first point, in recorded order, whose value reaches the
    target; a point whose value is not a finite number (a diverged run's
    "nan") reaches nothing. Not reached: the three figures are None; reached
    at a point that lacks one of them: that one is None."""
    out = {"metric": metric, "target": target, "higher_is_better": bool(higher_is_better), "reached": False,
           **{k: None for k in CUMULATIVE}}
    for p in points if isinstance(points, list) else []:
        v = _finite(p.get("value")) if isinstance(p, dict) else None
        if v is not None and reaches(v, target, higher_is_better):
            # a figure the point did not record as a finite number is not available (None)
            return dict(out, reached=True, **{k: _finite(p.get(k)) for k in CUMULATIVE})
    return out


def from_evaluation(evaluation, target) -> dict | None:
    """result["time_to_target"] from a run's result["evaluation"] and its
    workload's target ((metric, value, higher_is_better), or None): None where
    there is no target, no evaluation points, or the points measured another
    metric than the target's."""
    ev = evaluation if isinstance(evaluation, dict) else {}
    points = ev.get("points")
    if not target or not isinstance(points, list) or not points:
        return None
    metric, value, higher = target
    if ev.get("metric") not in (None, metric):
        return None
    return time_to_target(points, metric, value, higher)

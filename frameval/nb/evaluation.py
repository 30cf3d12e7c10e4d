"""Evaluation during training (numpy + standard library only).

A notebook hands the recorder one function that evaluates its quality metric
(`rec.evaluate_during_training(fn)`); `ep.timed` then calls it at fixed points,
`PER_EPOCH` a epoch, and keeps it out of the training clock and out of the
timing windows (AlgoPerf's rule: evaluation time is not training time). The
points are what time to a target is read from (frameval/target.py).
"""
from __future__ import annotations

import math
import time

# Four points an epoch: a target crossing is placed to a quarter epoch, at an
# evaluation cost that stays small beside the epoch (docs/workloads.md).
PER_EPOCH = 4


def due_steps(steps: int, per_epoch: int = PER_EPOCH) -> set:
    """The step counts (1-based: after that many steps of the epoch) at which to
    evaluate: `per_epoch` points spread evenly, the last after the last step."""
    if steps <= 0 or per_epoch <= 0:
        return set()
    return {max(1, math.ceil(steps * q / per_epoch)) for q in range(1, per_epoch + 1)}


def _clean_metrics(out, metric: str) -> dict:
    """The evaluation function may return the metric alone, or a dict holding it."""
    if not isinstance(out, dict):
        out = {metric: out}
    clean = {}
    for k, v in out.items():
        try:
            clean[k] = float(v)
        except (TypeError, ValueError):
            clean[k] = None
    if metric not in clean:
        raise ValueError(f"the evaluation function returned {sorted(clean)}, without the workload's metric {metric!r}")
    return clean


class Schedule:
    """The notebook's evaluation function and the points it has produced."""

    def __init__(self, fn, metric: str, higher_is_better, per_epoch: int = PER_EPOCH, epochs: int | None = None):
        """`epochs`: evaluate in that (1-based, the last) epoch only; None: in every epoch."""
        self.fn, self.metric, self.higher = fn, metric, higher_is_better
        self.per_epoch = int(per_epoch)
        self.only_epoch = epochs
        self.points: list = []
        self.eval_s = 0.0

    def due_in(self, epoch: int) -> bool:
        return self.only_epoch is None or int(epoch) == int(self.only_epoch)

    def evaluate(self, sync, *, epoch: int, step: int, steps: int, samples: int, train_s: float) -> float:
        """Run the evaluation between two synchronisations and record a point;
        returns the seconds it took, which the caller leaves out of training."""
        sync()
        t0 = time.perf_counter()
        metrics = _clean_metrics(self.fn(), self.metric)
        sync()
        secs = time.perf_counter() - t0
        self.eval_s += secs
        self.points.append({"epoch": epoch, "epochs": round(epoch - 1 + step / steps, 6), "step": step,
                            "samples": int(samples), "train_s": round(train_s, 6), "eval_s": round(secs, 6),
                            "value": metrics[self.metric], **{k: v for k, v in metrics.items() if k != self.metric}})
        return secs

    def record(self) -> dict:
        return {"per_epoch": self.per_epoch, "only_epoch": self.only_epoch, "metric": self.metric, "higher_is_better": self.higher,
                "points": self.points, "eval_s": round(self.eval_s, 6)}

"""Parameter combinations that cannot train, in one place: each planned run's
parameters checked against each other and against the sizes of its data,
before anything is built. Standard library only.

Every notebook drops the last incomplete batch of an epoch (`nb.batches`), so
a training set smaller than one batch takes no step at all: MXNet fails deep
inside the framework, the others train nothing. The LSTM slides a window over
the series and splits the windows chronologically (75% train, the rest
validation), so the window must leave at least one batch of training windows
and one validation window.
"""
from __future__ import annotations

from .catalog import MNIST_SIZES, SERIES_POINTS, SERIES_TRAIN_FRACTION


def train_samples(run) -> int:
    """How many training samples (images, or windows) the run's epoch visits."""
    p = run.params
    if run.workload == "lstm":
        n = SERIES_POINTS.get(p.get("series", "co2"), 0) - int(p.get("window", 20))
        n_train = int(n * SERIES_TRAIN_FRACTION) if n > 0 else 0
    else:
        n_train = MNIST_SIZES.get(p.get("dataset", "embedded"), {}).get("train", 0)
    cap = int(p.get("max_train_samples", 0) or 0)
    return min(n_train, cap) if cap > 0 else n_train


def problem(run) -> str:
    """One line naming the values that cannot train together, or ""."""
    p, where = run.params, f"({run.fw_key}/{run.workload})"
    batch = int(p.get("batch_size", 1))
    if run.workload == "lstm":
        points, window = SERIES_POINTS.get(p.get("series", "co2"), 0), int(p.get("window", 20))
        n = points - window
        if n <= 0 or n - int(n * SERIES_TRAIN_FRACTION) < 1:
            return (f"-p window={window}: the {p.get('series', 'co2')} series has {points} points, too few for "
                    f"windows of {window} plus a validation split {where}")
    n_train = train_samples(run)
    if n_train < batch:
        cap = int(p.get("max_train_samples", 0) or 0)
        what = (f"-p max_train_samples={cap}" if 0 < cap < batch else
                f"-p window={p.get('window')} leaves {n_train} training windows" if run.workload == "lstm" else
                f"dataset={p.get('dataset')} has {n_train} training samples")
        return (f"{what} with batch_size={batch}: fewer training samples than one batch, so an epoch takes "
                f"no step {where}")
    return ""


def first_problem(runs) -> str:
    """The first planned run's problem, or ""."""
    return next((msg for msg in (problem(r) for r in runs) if msg), "")

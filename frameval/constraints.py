"""Parameter combinations that cannot train, in one place: each planned run's
parameters checked against each other and against the sizes of its data,
before anything is built, from the sizes each workload record gives
(frameval/workloads/). Standard library only.

Every notebook drops the last incomplete batch of an epoch (`nb.batches`), so
a training set smaller than one batch takes no step at all: MXNet fails deep
inside the framework, the others train nothing. The LSTM slides a window over
the series and splits the windows chronologically (75% train, the rest
validation), so the window must leave at least one batch of training windows
and one validation window.
"""
from __future__ import annotations

from . import workloads


def train_samples(run) -> int:
    """How many training samples (images, or windows) the run's epoch visits."""
    p = run.params
    n_train = workloads.get(run.workload).train_samples(p)
    cap = int(p.get("max_train_samples", 0) or 0)
    return min(n_train, cap) if cap > 0 else n_train


def problem(run) -> str:
    """One line naming the values that cannot train together, or ""."""
    p, where, wl = run.params, f"({run.fw_key}/{run.workload})", workloads.get(run.workload)
    batch = int(p.get("batch_size", 1))
    data = wl.data_problem(p)
    if data:
        return f"{data} {where}"
    n_train = train_samples(run)
    if n_train < batch:
        cap = int(p.get("max_train_samples", 0) or 0)
        what = f"-p max_train_samples={cap}" if 0 < cap < batch else wl.too_few(p, n_train)
        return (f"{what} with batch_size={batch}: fewer training samples than one batch, so an epoch takes "
                f"no step {where}")
    return ""


def first_problem(runs) -> str:
    """The first planned run's problem, or ""."""
    return next((msg for msg in (problem(r) for r in runs) if msg), "")

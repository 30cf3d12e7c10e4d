"""The workload registry: each workload is one module (lenet.py, dcgan.py,
lstm.py) holding one `base.Workload`; every other module asks the record
(`get(key)`) instead of comparing the workload's name, so a fourth workload is
its module, one line below and its notebooks. A test (tests/test_workloads.py)
fails on a new name switch outside this package.

Standard library only: `frameval.catalog` and the notebook kernels import it.
The imports are static on purpose: `frameval.sources` follows them to know
which files a kernel runs (the run cache key).
"""
from __future__ import annotations

from contextlib import contextmanager

from . import dcgan, lenet, lstm
from .base import Workload

# The default matrix's order. A dict that stays the same object, so that
# `catalog.WORKLOAD_BY_KEY` sees a workload registered later (a test's toy).
REGISTRY: dict = {}


def register(workload: Workload) -> Workload:
    if workload.key in REGISTRY and REGISTRY[workload.key] is not workload:
        raise ValueError(f"workload {workload.key!r} is registered already")
    REGISTRY[workload.key] = workload
    return workload


def get(key: str) -> Workload:
    try:
        return REGISTRY[key]
    except KeyError:
        raise KeyError(f"unknown workload {key!r}; known: {', '.join(REGISTRY)}") from None


def find(key: str) -> Workload | None:
    return REGISTRY.get(key)


@contextmanager
def registered(workload: Workload):
    """A workload registered for the block only (the tests' toy)."""
    register(workload)
    try:
        yield workload
    finally:
        REGISTRY.pop(workload.key, None)


for _module in (lenet, dcgan, lstm):
    register(_module.WORKLOAD)
BUILT_IN = tuple(REGISTRY)

"""The workload registry: each workload is one folder here
(`frameval/workloads/<name>/`) whose `__init__.py` holds one `base.Workload`
named WORKLOAD; beside it the workload's float64 reference (reference.py),
its data loading (data.py) and its report media (media.py), loaded lazily by
the record's hooks. Every other module asks the record (`get(key)`) instead of
comparing the workload's name, so a fourth workload is its folder, its
notebooks and a docs section. A test (tests/test_workloads.py) fails on a new
name switch outside this package, and adds a toy workload by one folder alone.

The registry finds the workloads by listing the subfolders that have an
`__init__.py` (a folder without one is no workload) and orders them by the
record's `order` (the default matrix's order), then by name.

Standard library only: `frameval.catalog` and the notebook kernels import it.
A record's `__init__.py` is standard library only too (the runner reads it
before its own environment exists); numpy stays in its reference.py and
data.py. The imports are dynamic, so `frameval.sources` lists each run's
workload folder explicitly for the run cache key.
"""
from __future__ import annotations

import importlib
from contextlib import contextmanager
from pathlib import Path

from .base import Workload

HOME = Path(__file__).resolve().parent

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


def folders(home: Path = HOME) -> list:
    """The workload folders: subfolders with an `__init__.py`, by name."""
    return sorted(d for d in home.iterdir()
                  if d.is_dir() and d.name.isidentifier() and not d.name.startswith("_")
                  and (d / "__init__.py").is_file())


def _discover() -> None:
    records = [importlib.import_module(f"{__name__}.{d.name}").WORKLOAD for d in folders()]
    for w in sorted(records, key=lambda w: (w.order, w.key)):
        register(w)


_discover()
BUILT_IN = tuple(REGISTRY)

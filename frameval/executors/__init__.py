"""Executors, registered by name (as the env backends and papermill's engines
are): how the runs that must execute get executed. Each module holds an
`Executor` class with

    dry_run(ctx, n_execute)   what --dry-run says about it
    execute(ctx, jobs) -> bool   run the jobs; True if any failed

and is handed a narrow `ExecContext` (frameval/executors/context.py), never
the pipeline. A module is imported only when its executor is used, so the
registry is standard library only (the names are checked before the runner
environment exists)."""
from __future__ import annotations

import importlib

_REGISTRY: dict = {}


def register(name: str, module: str) -> None:
    _REGISTRY[name] = module


def names() -> list:
    return list(_REGISTRY)


def get(name: str):
    """An instance of the executor registered as `name`."""
    return importlib.import_module(_REGISTRY[name]).Executor()


register("local", "frameval.executors.local")
register("slurm", "frameval.executors.slurm")

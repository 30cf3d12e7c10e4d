"""The subcommands of `run_all.py`, registered by name (as papermill registers
its engines): each is a module with `main(argv) -> int` that owns its options
and their validation. A command's module is imported only when that command
runs, so the registry is standard library only, and so is every command's
validation (bad input exits 2 before the runner environment exists).

    run_all.py [run] [options]      the default: plan -> environments -> runs -> report
    run_all.py test | lab | bench | defects | bundle | compare | lock | reproduce ...
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    name: str
    module: str    # imported when the command runs; has main(argv) -> int
    summary: str


_REGISTRY: dict = {}
DEFAULT = "run"


def register(name: str, module: str, summary: str) -> None:
    _REGISTRY[name] = Command(name, module, summary)


def names() -> list:
    return list(_REGISTRY)


def get(name: str) -> Command:
    return _REGISTRY[name]


def dispatch(argv) -> int:
    """Run the command argv[0] names, or the default command with all of argv."""
    argv = list(argv)
    if argv and argv[0] in _REGISTRY:
        name, rest = argv[0], argv[1:]
    else:
        name, rest = DEFAULT, argv
    return importlib.import_module(_REGISTRY[name].module).main(rest)


register("run", "frameval.commands.run", "plan -> environments -> runs -> report (the default command)")
register("test", "frameval.commands.test", "the test suite (real notebooks, tiny sizes); --fast: unit-level only")
register("lab", "frameval.commands.lab", "JupyterLab on your copy of notebooks/, every kernel registered")
register("bench", "frameval.commands.bench", "a benchmark from bench/, in the runner environment")
register("defects", "frameval.commands.defects", "each framework defect's reproduction: present / fixed")
register("bundle", "frameval.commands.bundle", "wheels and data for machines with no network (docs/offline.md)")
register("lock", "frameval.commands.lock", "resolve environment specs into their lock files (hashes; docs/reproduce.md)")
register("compare", "frameval.commands.compare", "faster, slower or no significant change between two output folders")
register("reproduce", "frameval.commands.reproduce", "a report made again from its own record, run by run: agrees or differs")

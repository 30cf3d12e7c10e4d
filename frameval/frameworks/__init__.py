"""The framework registry: each framework is one folder here, found by name
(as executors and papermill's engines are):

    frameworks/<fw>/__init__.py   FRAMEWORK, its record (record.Framework): plain data, standard library only
    frameworks/<fw>/support.py    what its three notebooks share (imports the framework)
    frameworks/<fw>/switches.py   its determinism and precision switches (nb/determinism.py, nb/precision.py)
    frameworks/<fw>/behaviour.py  its tensor adapter for the behaviour cases (fw/behaviour_adapters.py)
    frameworks/<fw>/mistakes.py   its spelling of the common mistakes (fw/mistakes.py)
    frameworks/<fw>/gemm.py       its own float32 matrix product (fw/gemm.py)

Shared code asks the record (`get(key)`) or loads a part by name (`part(key,
"gemm")`); it never imports a framework folder, so an eighth framework is one
folder, its environment specs, its notebooks and a docs page. A test
(tests/test_frameworks.py) fails on a framework-name switch outside this package.

Standard library only: `frameval.catalog` and the notebook kernels import it.
"""
from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

from .record import Framework

HERE = Path(__file__).resolve().parent
# The parts a notebook's kernel runs besides the record: the run cache key hashes them (frameval/sources.py).
KERNEL_PARTS = ("support", "switches")


def folders(base: Path = HERE) -> list:
    """The framework folders under `base`: those with an __init__.py, by name."""
    return sorted(d for d in Path(base).iterdir() if (d / "__init__.py").is_file() and not d.name.startswith("_"))


def _load() -> dict:
    found = {}
    for d in folders():
        rec = importlib.import_module(f"{__name__}.{d.name}").FRAMEWORK
        if rec.key != d.name:
            raise ValueError(f"frameval/frameworks/{d.name}: its record's key is {rec.key!r}; the folder is the key")
        found[rec.key] = rec
    return dict(sorted(found.items(), key=lambda kv: (kv[1].order, kv[0])))


REGISTRY: dict = _load()


def names() -> tuple:
    """Every framework's key, in the default matrix's order."""
    return tuple(REGISTRY)


def records() -> tuple:
    return tuple(REGISTRY.values())


def get(key: str) -> Framework:
    try:
        return REGISTRY[key]
    except KeyError:
        raise KeyError(f"unknown framework {key!r}; known: {', '.join(REGISTRY)}") from None


def find(key: str):
    """The record, or None for a name that is no framework (e.g. the runner's environment)."""
    return REGISTRY.get(key)


def has_part(key: str, name: str) -> bool:
    return key in REGISTRY and importlib.util.find_spec(module_name(key, name)) is not None


def part(key: str, name: str):
    """The framework's part module `name` (e.g. "gemm"), imported on first use:
    most parts import the framework, so only its own environment loads them."""
    get(key)  # an unknown framework: a one-line error naming the known ones
    return importlib.import_module(module_name(key, name))


def part_or_none(key: str, name: str):
    """The part, or None where the framework has none (a framework without precision switches)."""
    return part(key, name) if has_part(key, name) else None


def folder(key: str) -> Path:
    """The framework's folder (the record's, support module's and parts' home)."""
    return HERE / key


def part_modules(key: str, parts) -> tuple:
    """The dotted names of those of `parts` the framework has (what a script run
    in its environment imports: envscripts hashes them into its cache key)."""
    return tuple(module_name(key, p) for p in parts if has_part(key, p))


def module_name(key: str, name: str = "") -> str:
    """The dotted name of the framework's folder, or of one of its parts."""
    return f"{__name__}.{key}" + (f".{name}" if name else "")

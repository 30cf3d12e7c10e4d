"""Each framework's determinism switches, read as the run had them (issue #41).

frameval never turns them on: the report measures frameworks as users run
them, and the reproduce comparison measures whether the same seed gives the
same losses twice. This records what was set, so that a reader who finds a
framework not bit-identical knows which switch it ran without. What each
switch would change is documented in docs/reproduce.md ("Determinism").

Each framework's switches are its folder's part (frameval/frameworks/<fw>/switches.py:
DETERMINISM), found by name. Read in the kernel at record time, from the
framework the notebook has already imported (`sys.modules`: the framework is
not imported here), so numpy + standard library only. A switch that cannot be read is None ("not readable"), never False.
"""
from __future__ import annotations

import os
import sys

from .. import frameworks

UNSET = "unset"  # an environment variable the run did not have: the framework's default


def env_var(name):
    return lambda mod: os.environ.get(name, UNSET)


def call(path):
    """A zero-argument function of the framework module at dotted `path`, called."""
    def read(mod):
        obj = mod
        for part in path.split("."):
            obj = getattr(obj, part)
        return obj()
    return read


def attr(path):
    def read(mod):
        obj = mod
        for part in path.split("."):
            obj = getattr(obj, part)
        return obj
    return read


def table(framework: str) -> tuple:
    """[(switch, reader)]: the framework's switches part (frameworks/<fw>/switches.py:
    DETERMINISM); none for a framework without one. The switches' meanings:
    docs/reproduce.md, one row each."""
    part = frameworks.part_or_none(framework, "switches")
    return tuple(getattr(part, "DETERMINISM", ()))


def framework_module(framework: str):
    """The framework's module as the notebook imported it, or None (not imported, or no framework)."""
    rec = frameworks.find(framework)
    return sys.modules.get(rec.import_name) if rec else None


def _plain(v):
    """A switch's value as JSON holds it: bools, numbers and text as they are, the rest as text."""
    return v if v is None or isinstance(v, (bool, int, float, str)) else str(v)


def switches(framework: str) -> dict:
    """{switch: its value in this process} for `framework` (None: not readable,
    e.g. the framework not imported; "unset": a variable the process did not have)."""
    mod = framework_module(framework)
    out = {}
    for name, read in table(framework):
        try:
            out[name] = _plain(read(mod))
        except Exception:  # noqa: BLE001 - a reader an old or new version lacks: not readable, never a crash
            out[name] = None
    return out

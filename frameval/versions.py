"""Framework versions as a matrix axis (standard library only: it runs before
the runner environment exists).

`--frameworks paddle==3.2.2,paddle` plans PaddlePaddle twice: once from
`envs/paddle.yml` with its framework pin replaced by 3.2.2, once as the spec
pins it. A pinned framework is known by its key, `paddle@3.2.2`: its runs go to
`runs/paddle@3.2.2/...`, its environment is the spec with one line changed
(so it has its own hash, and is cached like any other), its kernel is
`frameval-paddle-v3.2.2`. A pin equal to the spec's own is the bare name.
The key and the pinned spec are the environments' business
(frameval/envs/spec.py); this module reads the entries and checks the pins.

Before anything is built, `check_pins` asks the package index whether each
pinned version exists there (frameval/envs/index.py, with the user's pip
settings as uv is given them). A pin whose environment is already in the
cache is not asked about.
"""
from __future__ import annotations

import re

from .envs.backends import choose_backend
from .envs.index import check_pin, norm_version
from .envs.model import env_for
from .envs.spec import PinError, framework_spec, key, own_spec, pin_line

PIN = re.compile(r"^([A-Za-z][A-Za-z0-9_.-]*)\s*==\s*([0-9][0-9A-Za-z.+!_-]*)$")
OPERATORS = ("=", "<", ">", "~", "!", "@", " ")


def parse_entry(raw: str) -> tuple:
    """"paddle==3.2.2" -> ("paddle", "3.2.2"); "paddle" -> ("paddle", "")."""
    raw = raw.strip()
    m = PIN.match(raw)
    if m:
        return m.group(1), m.group(2)
    if any(op in raw for op in OPERATORS):
        raise PinError(f"--frameworks {raw!r}: a version is given as FRAMEWORK==VERSION (one exact pin, "
                       "e.g. paddle==3.2.2)")
    return raw, ""


def normalise(framework: str, version: str, device: str = "cpu") -> str:
    """The pin to plan: "" where it equals the spec's own (the bare name's run)."""
    if not version:
        return ""
    try:
        spec = own_spec(framework, device)
    except ValueError as e:
        raise PinError(str(e)) from None
    package, own = pin_line(spec)
    if not package:
        raise PinError(f"--frameworks {framework}=={version}: {spec.path.name} names no {framework} package "
                       "whose version could be replaced")
    return "" if norm_version(version) == norm_version(own) else version


def check_pins(pins, device: str = "cpu", backend: str = "auto") -> str:
    """The first problem with the planned pins [(framework, version)], or "".
    Pins whose environment is already built are not asked about. Each
    command checks once, before it re-executes in the runner env."""
    for fw, version in dict.fromkeys(pins):
        if not version or env_for(framework_spec(key(fw, version), device), choose_backend(backend)).ready:
            continue
        why = check_pin(fw, version, device)
        if why:
            return why
    return ""

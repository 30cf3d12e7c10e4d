"""Each framework's environment spec and what it pins: `envs/<fw>[-gpu].yml`,
its framework requirement line ("torch==2.13.0"), and the spec of a pinned
version.

A pinned framework is known by its key, `paddle@3.2.2` (frameval/versions.py
plans them): its spec is the framework's own with that one requirement line
changed, so it has its own hash and is cached like any other environment, and
its kernel name gets `kernel_suffix`.

The bottom of frameval.envs: the model, the builds, the index check and
frameval/versions.py all read specs through here. Standard library only.
"""
from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

from ..catalog import BY_KEY
from ..paths import REPO
from .specfile import EnvSpec, parse_spec

# FRAMEVAL_ENV_SPECS points at another folder of <fw>.yml specs (custom pins; the tests' broken env).
ENVS_SPEC_DIR = Path(os.environ.get("FRAMEVAL_ENV_SPECS") or REPO / "envs")


class PinError(ValueError):
    """A --frameworks entry that cannot be used; the message is one line."""


def has_gpu_spec(framework: str) -> bool:
    return (ENVS_SPEC_DIR / f"{framework}-gpu.yml").exists()


def spec_path(framework: str, device: str = "cpu") -> Path:
    # a framework without a -gpu spec uses its CPU spec on GPU too
    return ENVS_SPEC_DIR / (f"{framework}-gpu.yml" if device == "gpu" and has_gpu_spec(framework)
                            else f"{framework}.yml")


def own_spec(framework: str, device: str = "cpu") -> EnvSpec:
    """The framework's spec as its file pins it."""
    return parse_spec(spec_path(framework, device))


# ----------------------------------------------------------- a version's key
def key(framework: str, version: str = "") -> str:
    """The name a planned framework version goes by: run folders, environments/, --force."""
    return f"{framework}@{version}" if version else framework


def split_key(fw_key: str) -> tuple:
    fw, _, version = str(fw_key).partition("@")
    return fw, version


def kernel_suffix(version: str) -> str:
    # Jupyter kernel names allow letters, digits and - . _ only
    return f"-v{re.sub(r'[^A-Za-z0-9._-]', '_', version)}" if version else ""


# ------------------------------------------------------- the framework's pin
def spec_pin(spec: EnvSpec) -> str:
    """The framework's requirement line in its spec, e.g. "torch==2.13.0"."""
    fw = spec.name[len("frameval-"):] if spec.name.startswith("frameval-") else spec.name
    fw = fw[:-len("-gpu")] if fw.endswith("-gpu") else fw
    want = re.sub(r"[-_.]+", "-", (BY_KEY[fw].package if fw in BY_KEY else fw)).lower()
    for line in spec.pip:
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", line)
        if m and re.sub(r"[-_.]+", "-", m.group(1)).lower().startswith(want):
            return line.strip()
    return ""


def pin_line(spec: EnvSpec) -> tuple:
    """(package, version) of the framework's requirement line in a spec, e.g.
    ("paddlepaddle", "3.3.1"); version "" when the line is not an exact pin."""
    line = spec_pin(spec)
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*(==\s*([^\s;,]+))?", line)
    if not line or not m:
        return "", ""
    return m.group(1), (m.group(4) or "")


def spec_version(framework: str, device: str = "cpu") -> str:
    """The version the framework's own spec pins ("" if none)."""
    return pin_line(own_spec(framework, device))[1]


def pinned_spec(spec: EnvSpec, version: str) -> EnvSpec:
    """The spec with the framework's pin replaced by `version` (its key changes with it)."""
    line = spec_pin(spec)
    package, _ = pin_line(spec)
    if not package:
        raise PinError(f"{spec.path.name}: names no framework package whose version could be replaced")
    marker = line.split(";", 1)[1] if ";" in line else ""
    new = f"{package}=={version}" + (f"; {marker.strip()}" if marker else "")
    # the recorded spec text says what was built (the report's reproduce section shows it)
    text = re.sub(rf"(?m)^(\s*-\s*){re.escape(line)}[ \t]*$", lambda m: m.group(1) + new, spec.text, count=1)
    text = f"# frameval: {package} pinned to {version} (--frameworks), in place of {spec.path.name}'s {line}\n" + text
    return replace(spec, pip=tuple(new if ln == line else ln for ln in spec.pip), text=text)


def framework_spec(fw_key: str, device: str = "cpu") -> EnvSpec:
    """The environment spec of a planned framework key ("paddle" or "paddle@3.2.2")."""
    fw, version = split_key(fw_key)
    spec = own_spec(fw, device)
    return pinned_spec(spec, version) if version else spec

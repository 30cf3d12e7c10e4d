"""The install experience of one environment, measured: build time, what the
installer downloaded, the installed size, the Python versions and numpy the
framework's wheel allows, and the installer's warnings and errors.

`measure` runs right after a build (build.ensure_env) and its figures go into
the environment's ready marker as `install`. For an environment built before
this existed, `measure(..., at_build=False)` reads what it can from the
environment itself and its build log; a figure that was not recorded is None
("not available"), never 0.

Standard library only (it runs while environments are built).
"""
from __future__ import annotations

import email.parser
import os
import re
from pathlib import Path

from .. import frameworks

_SIZE = {"b": 1e-6, "kb": 1e-3, "kib": 1024 / 1e6, "mb": 1.0, "mib": 1024 ** 2 / 1e6, "gb": 1e3, "gib": 1024 ** 3 / 1e6}
# pip: "  Downloading mxnet-1.9.1-py3-none-manylinux2014_x86_64.whl (49.1 MB)"; uv: "Downloading tensorstore (20.8MiB)"
_DOWNLOAD = re.compile(r"^\s*Downloading\s+(\S+?)(?:-\d[^\s]*)?\s+\((\d+(?:\.\d+)?)\s*([KMG]i?B|[kKMG]?B)\)", re.M)
_WARN = re.compile(r"^\s*(?:WARNING|warning|DEPRECATION|Warning):?\s+(.*)$", re.M)
_ERROR = re.compile(r"^\s*(?:ERROR|error):\s+(.*)$", re.M)


def framework_dist(fw: str) -> str:
    """The distribution that is "the framework" in the environment (its record's
    package; "" for the runner's own environment, which has none)."""
    rec = frameworks.find(fw)
    return rec.package if rec else ("" if fw == "runner" else fw)


def framework_of(spec_name: str) -> str:
    return re.sub(r"-gpu$", "", re.sub(r"^frameval-", "", spec_name))


def downloads(log_text: str) -> list:
    """[(package, MB)] the installer logged as downloaded (uv logs files over
    about 1 MiB; a file from a local index or the installer's cache is none)."""
    return [(name, round(float(n) * _SIZE[unit.lower()], 2)) for name, n, unit in _DOWNLOAD.findall(log_text)]


def _collapse(lines) -> list:
    """Messages that differ only in a quoted path or name, once each, with a count."""
    seen: dict = {}
    for ln in lines:
        key = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", ln.strip())[:300]
        seen[key] = seen.get(key, 0) + 1
    return [k if n == 1 else f"{k} (x{n})" for k, n in seen.items()]


def dir_mb(path: Path):
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return round(total / 1e6, 1)


def dist_info(prefix: Path, dist: str):
    """The installed distribution's dist-info folder (case and - _ . insensitive)."""
    want = re.sub(r"[-_.]+", "_", dist).lower()
    for d in sorted(Path(prefix).glob("lib*/python*/site-packages/*.dist-info")) + sorted(
            Path(prefix).glob("Lib/site-packages/*.dist-info")):
        name = d.name[: -len(".dist-info")].rsplit("-", 1)[0]
        if re.sub(r"[-_.]+", "_", name).lower() == want:
            return d
    return None


def wheel_facts(prefix: Path, dist: str) -> dict:
    """Version, Requires-Python, wheel tags and numpy requirement of an installed distribution."""
    d = dist_info(prefix, dist) if dist else None
    if d is None:
        return {}
    try:
        meta = email.parser.Parser().parsestr((d / "METADATA").read_text(errors="replace"), headersonly=True)
    except OSError:
        return {}
    try:
        tags = [ln.split(":", 1)[1].strip() for ln in (d / "WHEEL").read_text().splitlines() if ln.startswith("Tag:")]
    except OSError:
        tags = []
    numpy = [r for r in (meta.get_all("Requires-Dist") or []) if re.match(r"numpy\b", r.strip(), re.I)]
    return {"name": meta.get("Name"), "version": meta.get("Version"), "requires_python": meta.get("Requires-Python"),
            "wheel_tags": tags, "numpy_requires": [r.strip() for r in numpy]}


def _python_version(prefix: Path):
    try:
        for ln in (Path(prefix) / "pyvenv.cfg").read_text().splitlines():
            k, _, v = ln.partition("=")
            if k.strip() in ("version", "version_info"):
                return v.strip()
    except OSError:
        pass
    return None


def measure(spec, prefix, log_path, build_s=None, installer=None, at_build=True) -> dict:
    """The install facts of one environment (see the module docstring)."""
    prefix = Path(prefix)
    fw = framework_of(spec.name)
    try:
        log = Path(log_path).read_text(errors="replace")
    except OSError:
        log = None
    got = downloads(log) if log is not None else None
    numpy_pin = [ln.strip() for ln in spec.pip if re.match(r"numpy\b", ln.strip(), re.I)]
    np_facts = wheel_facts(prefix, "numpy")
    return {
        "recorded": "at build" if at_build else "afterwards, from the environment and its build log",
        "framework": fw, "installer": installer, "build_s": build_s,
        "downloaded_mb": round(sum(mb for _, mb in got), 1) if got is not None else None,
        "downloads": sorted(got, key=lambda x: -x[1])[:8] if got is not None else None,
        "installed_mb": dir_mb(prefix), "python": _python_version(prefix) or spec.python,
        "spec_python": spec.python, "framework_wheel": wheel_facts(prefix, framework_dist(fw)),
        "numpy_spec": numpy_pin, "numpy_installed": np_facts.get("version"),
        "warnings": _collapse(_WARN.findall(log))[:20] if log is not None else None,
        "errors": _collapse(_ERROR.findall(log))[:10] if log is not None else None,
        "spec_note": spec_note(spec),
    }


def spec_note(spec) -> str:
    """The spec's leading comment: why it pins what it pins (e.g. "no wheel for Python 3.11+")."""
    lines = []
    for ln in (spec.text or "").splitlines():
        if not ln.startswith("#"):
            break
        lines.append(ln.lstrip("# ").strip())
    return " ".join(x for x in lines if x)

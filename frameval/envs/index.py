"""Whether a pinned framework version exists in the package index (with a file
this Python and platform can install), asked before anything is built
(frameval/versions.py's check_pins): the user's indexes and find-links, read
from their pip settings as uv is given them (pipconf.py): index-url,
extra-index-url, find-links, no-index, cert, timeout, proxy.

Standard library only: the check runs before the runner environment exists.
"""
from __future__ import annotations

import html
import platform
import re
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from ..versionkey import version_key
from .pipconf import pip_settings
from .spec import own_spec, pin_line

DEFAULT_INDEX = "https://pypi.org/simple"


def _norm_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def norm_version(v: str) -> str:
    """A version as pip compares it, near enough: "3.2.0" == "3.2", local "+cu118" dropped."""
    v = v.lower().strip()
    return re.sub(r"(\.0+)+$", "", v.split("+")[0]) if re.fullmatch(r"[0-9.]+(\+.*)?", v) else v


def file_version(filename: str, package: str):
    """The version in a wheel's or sdist's file name, if it is `package`'s."""
    name = _norm_name(package).replace("-", "_")
    base = filename.split("#")[0].split("/")[-1]
    m = re.match(r"^([A-Za-z0-9_.]+)-([^-]+)-(.+)\.whl$", base)
    if m and _norm_name(m.group(1)).replace("-", "_") == name:
        return m.group(2), m.group(3)
    for ext in (".tar.gz", ".zip", ".tar.bz2"):
        if base.endswith(ext):
            stem = base[:-len(ext)]
            pre, sep, ver = stem.rpartition("-")
            if sep and _norm_name(pre).replace("-", "_") == name:
                return ver, "sdist"
    return None


def _compatible(tags: str, python: str) -> bool:
    """Whether a wheel's python-abi-platform tags (or an sdist) can install for
    `python` ("3.11") on this machine."""
    if tags == "sdist":
        return True
    parts = tags.split("-")
    if len(parts) < 3:
        return False
    py, abi, plat = parts[-3], parts[-2], parts[-1]
    xy = python.replace(".", "")
    py_ok = any(t in (f"cp{xy}", f"py{xy}", "py3", f"py{xy[0]}") or (abi == "abi3" and t.startswith("cp3")
                                                                     and int(t[3:] or 0) <= int(xy[1:]))
                for t in py.split("."))
    machine = platform.machine().lower()
    system = {"linux": "linux", "darwin": "macosx", "win32": "win"}.get(sys.platform, sys.platform)
    plat_ok = any(p == "any" or (system in p and (machine in p or (machine == "amd64" and "amd64" in p)
                                                    or (system == "macosx" and "universal" in p)))
                  for p in plat.split("."))
    return py_ok and plat_ok


def _opener(settings: dict):
    ctx = ssl.create_default_context(cafile=settings.get("cert") or None)
    handlers = [urllib.request.HTTPSHandler(context=ctx)]
    if settings.get("proxy"):
        handlers.append(urllib.request.ProxyHandler({"http": settings["proxy"], "https": settings["proxy"]}))
    return urllib.request.build_opener(*handlers)


def _read(url: str, settings: dict) -> str:
    if url.startswith("file:"):
        path = Path(urllib.request.url2pathname(urllib.parse.urlparse(url).path))
        path = path / "index.html" if path.is_dir() else path
        return path.read_text(errors="replace")
    try:
        timeout = float(settings.get("timeout") or settings.get("default-timeout") or 30)
    except ValueError:
        timeout = 30.0
    req = urllib.request.Request(url, headers={"Accept": "text/html", "User-Agent": "frameval"})
    with _opener(settings).open(req, timeout=min(timeout, 60)) as r:
        return r.read().decode("utf-8", errors="replace")


def _hrefs(text: str) -> list:
    return [html.unescape(h) for h in re.findall(r"""href\s*=\s*["']([^"']+)["']""", text)]


def index_files(package: str, settings: dict) -> tuple:
    """([(version, tags)], [sources asked], [errors]) over the user's indexes and find-links."""
    found, asked, errors = [], [], []
    indexes = [] if str(settings.get("no-index", "")).lower() in ("1", "true", "yes", "on") else (
        (settings.get("index-url", "").split() or [DEFAULT_INDEX])[:1] + settings.get("extra-index-url", "").split())
    targets = [(u.rstrip("/") + "/" + _norm_name(package) + "/", u) for u in indexes]
    for loc in settings.get("find-links", "").split():
        if "://" not in loc and Path(loc).expanduser().is_dir():
            asked.append(loc)
            found += [fv for f in Path(loc).expanduser().iterdir() if (fv := file_version(f.name, package))]
        else:
            targets.append((loc, loc))
    for url, label in targets:
        asked.append(label)
        try:
            text = _read(url, settings)
        except FileNotFoundError:
            continue  # a file index without this package
        except (OSError, urllib.error.URLError, ValueError) as e:
            if getattr(e, "code", None) == 404:
                continue  # the index does not have the package at all
            errors.append(f"{label}: {getattr(e, 'reason', None) or e}")
            continue
        found += [fv for h in _hrefs(text) if (fv := file_version(h, package))]
    return found, asked, errors


def check_pin(fw: str, version: str, device: str = "cpu", settings: dict | None = None) -> str:
    """"" if the index has `version` of the framework's package for the spec's
    Python on this platform, else the one-line reason."""
    spec = own_spec(fw, device)
    package, _ = pin_line(spec)
    found, asked, errors = index_files(package, pip_settings() if settings is None else settings)
    entry = f"--frameworks {fw}=={version}"
    same = [tags for v, tags in found if norm_version(v) == norm_version(version)]
    if not same:
        if errors and not found:
            return f"{entry}: cannot check that {package} {version} exists: {'; '.join(errors)[:300]}"
        known = sorted({v for v, _ in found}, key=version_key)
        return (f"{entry}: {package} {version} is not in the package index ({', '.join(asked) or 'none configured'})"
                + (f"; it has {', '.join(known[-8:])}" if known else f"; it has no {package} at all"))
    if not any(_compatible(t, spec.python) for t in same):
        return (f"{entry}: {package} {version} has no file for Python {spec.python} on "
                f"{sys.platform} {platform.machine()} (the spec's Python, {spec.path.name})")
    return ""


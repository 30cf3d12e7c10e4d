"""Framework versions as a matrix axis (standard library only: it runs before
the runner environment exists).

`--frameworks paddle==3.2.2,paddle` plans PaddlePaddle twice: once from
`envs/paddle.yml` with its framework pin replaced by 3.2.2, once as the spec
pins it. A pinned framework is known by its key, `paddle@3.2.2`: its runs go to
`runs/paddle@3.2.2/...`, its environment is the spec with one line changed
(so it has its own hash, and is cached like any other), its kernel is
`frameval-paddle-v3.2.2`. A pin equal to the spec's own is the bare name.

Before anything is built, `check_pins` asks the package index whether each
pinned version exists there (with a file this Python and platform can
install), reading the user's pip settings as `envs.uv_options` passes them
to uv: index-url, extra-index-url, find-links, no-index, cert, timeout,
proxy. A pin whose environment is already in the cache is not asked about.
"""
from __future__ import annotations

import html
import json
import os
import platform
import re
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import replace
from pathlib import Path

PIN = re.compile(r"^([A-Za-z][A-Za-z0-9_.-]*)\s*==\s*([0-9][0-9A-Za-z.+!_-]*)$")
OPERATORS = ("=", "<", ">", "~", "!", "@", " ")
CHECKED_VAR = "FRAMEVAL_PINS_CHECKED"  # pins checked before the re-exec into the runner env
DEFAULT_INDEX = "https://pypi.org/simple"


class PinError(ValueError):
    """A --frameworks entry that cannot be used; the message is one line."""


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


def key(framework: str, version: str = "") -> str:
    """The name a planned framework version goes by: run folders, environments/, --force."""
    return f"{framework}@{version}" if version else framework


def split_key(fw_key: str) -> tuple:
    fw, _, version = str(fw_key).partition("@")
    return fw, version


def kernel_suffix(version: str) -> str:
    # Jupyter kernel names allow letters, digits and - . _ only
    return f"-v{re.sub(r'[^A-Za-z0-9._-]', '_', version)}" if version else ""


def _spec(framework: str, device: str):
    from .envs import spec_path
    from .envspec import parse_spec
    return parse_spec(spec_path(framework, device))


def pin_line(spec) -> tuple:
    """(package, version) of the framework's requirement line in a spec, e.g.
    ("paddlepaddle", "3.3.1"); version "" when the line is not an exact pin."""
    from .envs import spec_pin
    line = spec_pin(spec)
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*(==\s*([^\s;,]+))?", line)
    if not line or not m:
        return "", ""
    return m.group(1), (m.group(4) or "")


def spec_version(framework: str, device: str = "cpu") -> str:
    """The version the framework's own spec pins ("" if none)."""
    return pin_line(_spec(framework, device))[1]


def pinned_spec(spec, version: str):
    """The spec with the framework's pin replaced by `version` (its key changes with it)."""
    from .envs import spec_pin
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


def framework_spec(fw_key: str, device: str = "cpu"):
    """The environment spec of a planned framework key ("paddle" or "paddle@3.2.2")."""
    fw, version = split_key(fw_key)
    spec = _spec(fw, device)
    return pinned_spec(spec, version) if version else spec


def normalise(framework: str, version: str, device: str = "cpu") -> str:
    """The pin to plan: "" where it equals the spec's own (the bare name's run)."""
    if not version:
        return ""
    try:
        spec = _spec(framework, device)
    except ValueError as e:
        raise PinError(str(e)) from None
    package, own = pin_line(spec)
    if not package:
        raise PinError(f"--frameworks {framework}=={version}: {spec.path.name} names no {framework} package "
                       "whose version could be replaced")
    return "" if _norm_version(version) == _norm_version(own) else version


# ------------------------------------------------------------ the index
def _norm_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _norm_version(v: str) -> str:
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
    from .envs import pip_settings
    spec = _spec(fw, device)
    package, _ = pin_line(spec)
    found, asked, errors = index_files(package, pip_settings() if settings is None else settings)
    entry = f"--frameworks {fw}=={version}"
    same = [tags for v, tags in found if _norm_version(v) == _norm_version(version)]
    if not same:
        if errors and not found:
            return f"{entry}: cannot check that {package} {version} exists: {'; '.join(errors)[:300]}"
        known = sorted({v for v, _ in found}, key=_sort_key)
        return (f"{entry}: {package} {version} is not in the package index ({', '.join(asked) or 'none configured'})"
                + (f"; it has {', '.join(known[-8:])}" if known else f"; it has no {package} at all"))
    if not any(_compatible(t, spec.python) for t in same):
        return (f"{entry}: {package} {version} has no file for Python {spec.python} on "
                f"{sys.platform} {platform.machine()} (the spec's Python, {spec.path.name})")
    return ""


def _sort_key(v: str):
    return [int(x) if x.isdigit() else -1 for x in re.split(r"[.+-]", v)]


def check_pins(pins, device: str = "cpu", backend: str = "auto") -> str:
    """The first problem with the planned pins [(framework, version)], or "".
    Pins whose environment is already built, or checked by this invocation
    before it re-executed in the runner env, are not asked about again."""
    from .envs import choose_backend, env_for
    done = set(json.loads(os.environ.get(CHECKED_VAR) or "[]"))
    for fw, version in dict.fromkeys(pins):
        if not version or key(fw, version) in done:
            continue
        if env_for(framework_spec(key(fw, version), device), choose_backend(backend)).ready:
            continue
        why = check_pin(fw, version, device)
        if why:
            return why
        done.add(key(fw, version))
    os.environ[CHECKED_VAR] = json.dumps(sorted(done))
    return ""

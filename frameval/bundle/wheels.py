"""An environment's wheels for a target Python and platform: its requirement
lines resolved to exact pins by uv (`uv pip compile --python-version
--python-platform`, so markers are evaluated for the target, not for this
machine), then the pinned files fetched by pip (`pip download --no-deps
--only-binary=:all: --python-version --platform`: uv has no download). A
package with no wheel at all (an sdist only, e.g. fontmeta) is built into one
here with `pip wheel`; that works for pure-Python packages.

For --dry-run, the sizes come from the index's metadata (its JSON pages, one
request per package): nothing is downloaded. Runs in the runner environment.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..envs.installers import EnvBuildError, requirements_file, run_logged, uv_executable
from ..envs.index import DEFAULT_INDEX, file_version, norm_version
from ..envs.pipconf import pip_settings, uv_options


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def uv_platform(plat: str) -> str:
    """pip's platform tag as uv's --python-platform: manylinux_2_28_x86_64 -> x86_64-manylinux_2_28."""
    m = re.fullmatch(r"(manylinux_\d+_\d+)_(\w+)", plat)
    return f"{m.group(2)}-{m.group(1)}" if m else ""


def compile_pins(lines, python: str, plat: str, log) -> list:
    """The requirement lines resolved for the target: ["numpy==2.4.1", ...]."""
    uv = uv_executable(None)
    if not uv:
        raise EnvBuildError("uv is needed to resolve a bundle's pins for another Python and platform")
    args, env = uv_options()
    target = ["--python-platform", uv_platform(plat)] if uv_platform(plat) else []
    req = requirements_file(lines)
    out = req + ".pins"
    try:
        run_logged([uv, "pip", "compile", "--python-version", python, *target, *args, "--no-header",
                    "--no-annotate", "--quiet", req, "-o", out], log, env=dict(os.environ, **env),
                   what="uv pip compile")
        pins = [ln.strip() for ln in Path(out).read_text().splitlines()
                if ln.strip() and not ln.lstrip().startswith(("#", "-"))]
    finally:
        for f in (req, out):
            if os.path.exists(f):
                os.unlink(f)
    return [p.split(";")[0].strip() for p in pins]


def _pip(*args) -> list:
    return [sys.executable, "-m", "pip", *args, "--disable-pip-version-check", "--no-input"]


def platforms(plat: str) -> list:
    """Every platform tag a wheel for `plat` may carry: pip does not expand
    manylinux_2_36 to the older glibc tags it includes (manylinux_2_28, manylinux2014, ...)."""
    m = re.fullmatch(r"manylinux_2_(\d+)_(\w+)", plat)
    if not m:
        return [plat]
    y, arch = int(m.group(1)), m.group(2)
    tags = [f"manylinux_2_{i}_{arch}" for i in range(y, 4, -1)]
    return tags + [f"{old}_{arch}" for old, since in (("manylinux2014", 17), ("manylinux2010", 12),
                                                     ("manylinux1", 5)) if since <= y]


def _target(python: str, plat: str) -> list:
    return ["--only-binary=:all:", "--python-version", python, "--implementation", "cp",
            *[a for p in platforms(plat) for a in ("--platform", p)]]


NO_WHEEL = re.compile(r"No matching distribution found for ([A-Za-z0-9._-]+)==(\S+)")


def download(pins, python: str, plat: str, dest: Path, log) -> tuple:
    """Fetch each pin's file for the target into a new folder; returns the
    file paths, and the pins without any wheel, which are built into one here (`pip wheel`)."""
    tmp = Path(tempfile.mkdtemp(prefix="frameval-wheels-", dir=dest))
    todo, built = list(pins), []
    while todo:
        req = requirements_file(todo)
        log.flush()
        start = Path(log.name).stat().st_size
        try:
            run_logged(_pip("download", "--no-deps", *_target(python, plat), "-d", tmp, "-r", req), log,
                       what="pip download")
            todo = []
        except EnvBuildError:
            log.flush()
            with open(log.name, errors="replace") as f:
                f.seek(start)
                missing = NO_WHEEL.findall(f.read())
            pin = next((f"{n}=={v}" for n, v in missing if f"{n}=={v}" in todo), None)
            if pin is None:
                raise
            todo.remove(pin)
            _build_pure(pin, tmp, log)
            built.append(pin)
        finally:
            os.unlink(req)
    if built:
        log.write(f"# built from sdists: {', '.join(built)}\n")
    return sorted(tmp.iterdir()), built


def _build_pure(pin: str, dest: Path, log) -> None:
    """A package with no wheel for the target (an sdist only): built into a
    wheel here, which serves any target only where it is pure Python."""
    with tempfile.TemporaryDirectory() as d:
        run_logged(_pip("wheel", "--no-deps", "--no-binary", pin.split("==")[0], "-w", d, pin), log,
                   what=f"pip wheel {pin}")
        made = list(Path(d).glob("*.whl"))
        if not made or not made[0].name.endswith("-none-any.whl"):
            raise EnvBuildError(f"{pin} has no wheel for the target, and the one built from its sdist here is "
                                f"not pure Python ({made[0].name if made else 'none'})")
        shutil.move(str(made[0]), dest / made[0].name)


# ------------------------------------------------------------- sizes only
def _tag_rank(filename: str, python: str, plat: str) -> int:
    """How well a file fits the target (higher is better; 0: it does not)."""
    if not filename.endswith(".whl"):
        return 1  # an sdist: built where no wheel fits
    py, abi, platforms = filename[:-4].split("-")[-3:]
    xy = python.replace(".", "")
    m = re.fullmatch(r"manylinux_(\d+)_(\d+)_(\w+)", plat)
    glibc, arch = ((int(m.group(1)), int(m.group(2))), m.group(3)) if m else ((0, 0), plat)
    old = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}

    def plat_ok(p):
        if p == "any":
            return True
        mm = re.fullmatch(r"(manylinux\d+|manylinux_(\d+)_(\d+))_(\w+)", p)
        if not mm or mm.group(4) != arch:
            return p == plat
        need = old.get(mm.group(1)) or (int(mm.group(2)), int(mm.group(3)))
        return need <= glibc
    if not any(plat_ok(p) for p in platforms.split(".")):
        return 0
    tags = py.split(".")
    if f"cp{xy}" in tags and abi in (f"cp{xy}", f"cp{xy}m", "none"):
        return 4
    if abi == "abi3" and any(t.startswith("cp3") and int(t[3:] or 99) <= int(xy[1:]) for t in tags):
        return 3
    return 2 if abi == "none" and any(t in ("py3", f"py{xy}", f"py{xy[0]}") for t in tags) else 0


def _best(files, name: str, version: str, python: str, plat: str):
    """The best-fitting (rank, file name, bytes) of `name` `version` among [(file name, bytes)], or None."""
    ranked = [(_tag_rank(f, python, plat), f, b) for f, b in files
              if (fv := file_version(f, name)) and norm_version(fv[0]) == norm_version(version)]
    ranked = [x for x in ranked if x[0]]
    return max(ranked) if ranked else None


def _local_files(links) -> list:
    """[(file name, bytes)] in the user's find-links folders (the index's JSON pages do not cover them)."""
    return [(f.name, f.stat().st_size) for d in links if Path(d).is_dir() for f in Path(d).iterdir() if f.is_file()]


def pin_size(pin: str, python: str, plat: str, index: str, local=(), timeout: float = 60) -> tuple:
    """(file name, bytes) of the file pip would take for `pin`: from a find-links
    folder where it is there (an exact version match, e.g. torch 2.13.0+cpu), else
    from the index's JSON page (PEP 691, with PEP 700's sizes: PyPI has both)."""
    name, _, version = pin.partition("==")
    found = [x for x in [(f, b) for f, b in local] if (fv := file_version(x[0], name)) and fv[0] == version]
    best = _best(found, name, version, python, plat)
    if best:
        return best[1], best[2]
    url = f"{index.rstrip('/')}/{norm(name)}/"
    req = urllib.request.Request(url, headers={"User-Agent": "frameval",
                                               "Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            files = json.load(r).get("files", [])
    except (OSError, ValueError) as e:
        raise EnvBuildError(f"{pin}: its sizes cannot be read from {url}: {getattr(e, 'reason', None) or e}") from None
    best = _best([(f["filename"], f.get("size") or 0) for f in files], name, version, python, plat)
    if not best:
        raise EnvBuildError(f"{pin}: no file for Python {python} on {plat} in {url}")
    return best[1], best[2]


def sizes(pins, python: str, plat: str) -> list:
    """[(file name, bytes)] for each pin, asked in parallel (no download)."""
    s = pip_settings()
    index = (s.get("index-url", "").split() or [DEFAULT_INDEX])[0]
    local = _local_files(s.get("find-links", "").split())
    with ThreadPoolExecutor(max_workers=8) as ex:
        return list(ex.map(lambda p: pin_size(p, python, plat, index, local), pins))


def move_into(files, wheels: Path) -> list:
    """Move downloaded files into the bundle's one wheels folder (shared by the
    environments; a file already there is the same file, by name)."""
    wheels.mkdir(parents=True, exist_ok=True)
    names = []
    for f in files:
        if not (wheels / f.name).exists():
            shutil.move(str(f), wheels / f.name)
        names.append(f.name)
    return names

"""The runner on the user's own interpreter, from a trimmed bundle (`bundle
--runner-only --target-python/--target-freeze`, trim.py): a venv made with
that interpreter which sees its packages, with the bundle's wheels installed
into it offline (`--no-index --find-links`, `--no-deps`: exactly the packed
pins). The bundle is made elsewhere; `--offline BUNDLE --python torch=PATH`
then needs no Python 3.11 and no network on the target.

Why not `venv --system-site-packages`: that shows the *base* installation's
packages, and a GPU box's python3 is often itself a venv (/opt/torch/.venv)
whose packages it would hide. A `.pth` file runs `site.addsitedir` on each of
the target's site folders instead (their own .pth files included), after the
venv's own: the packed versions win, the target's fill in the rest.

The chosen interpreter travels to the re-executed runner in VAR. Standard
library only: it runs before the runner environment exists.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ..files import atomic_write
from ..locks import file_lock
from ..paths import envs_dir
from . import offline
from .manifest import WHEELS, read

VAR = "FRAMEVAL_RUNNER_BASE"
MARKER = "frameval-ready.json"  # as envs.model.MARKER: an Env over this prefix reads it
SITE_DIRS = ("import json, site, sys, sysconfig; p = sysconfig.get_paths(); print(json.dumps({'version': "
             "'%d.%d' % sys.version_info[:2], 'site': list(dict.fromkeys(site.getsitepackages() + "
             "[p['purelib'], p['platlib']]))}))")


def trimmed_entry(manifest: dict) -> dict:
    """The bundle's runner entry where it is trimmed for a target interpreter, else {}."""
    entry = manifest.get("environments", {}).get("runner", {})
    return entry if entry.get("trimmed") else {}


def describe(python) -> dict:
    """{version: "3.12", site: [folders]} of an interpreter, or {} where it does not run."""
    try:
        p = subprocess.run([str(python), "-c", SITE_DIRS], capture_output=True, text=True, timeout=120,
                           stdin=subprocess.DEVNULL, env={k: v for k, v in os.environ.items()
                                                           if k not in ("PYTHONPATH", "PYTHONHOME")})
        return json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else {}
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return {}


def choose_base(candidates, python: str) -> str:
    """The first of `candidates` (the --python interpreters, then the one running frameval) that is
    Python `python` (the bundle's target), or ""."""
    for c in dict.fromkeys(str(x) for x in candidates):
        if describe(c).get("version") == python:
            return c
    return ""


def activate(base: str) -> None:
    os.environ[VAR] = base


def active() -> tuple:
    """(base interpreter, bundle, the bundle's trimmed runner entry) in a trimmed --offline run, else ()."""
    base, bundle = os.environ.get(VAR, "").strip(), offline.active()
    if not (base and bundle):
        return ()
    entry = trimmed_entry(read(bundle))
    return (base, bundle, entry) if entry else ()


def prefix(base: str, entry: dict) -> Path:
    """Where the runner on `base` lives: keyed by the interpreter and the packed pins."""
    h = hashlib.sha256(json.dumps([base, entry.get("requirements", []), entry.get("lock", "")]).encode())
    return envs_dir() / f"frameval-runner-on-{Path(base).parent.parent.name or 'python'}-{h.hexdigest()[:12]}"


def ensure(base: str, bundle: Path, entry: dict, echo=print) -> Path:
    """The runner venv on `base` (made once, under a lock; the marker last); returns its prefix."""
    where = prefix(base, entry)
    with file_lock(where.with_suffix(".lock")):
        if (where / MARKER).is_file():
            return where
        shutil.rmtree(where, ignore_errors=True)
        log_path = where.with_suffix(".log")
        try:
            with open(log_path, "w") as log:
                _build(base, bundle, entry, where, log, echo)
        except Exception:
            shutil.rmtree(where, ignore_errors=True)
            raise
    return where


def _build(base: str, bundle: Path, entry: dict, where: Path, log, echo) -> None:
    from ..envs.installers import EnvBuildError, requirements_file, run_logged
    info = describe(base)
    if not info:
        raise EnvBuildError(f"{base} does not run")
    run_logged([base, "-m", "venv", "--without-pip", where], log, what=f"{base} -m venv")
    py = where / "bin" / "python"
    site_dir = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   capture_output=True, text=True, check=True).stdout.strip())
    dirs = [d for d in info["site"] if Path(d).is_dir()]
    atomic_write(site_dir / "frameval-target.pth", f"import site; list(map(site.addsitedir, {dirs!r}))\n")
    req = requirements_file(entry.get("requirements", []))
    wheels = ["--no-index", "--find-links", str(Path(bundle) / WHEELS), "--no-deps", "-r", req]
    try:
        uv = shutil.which("uv")
        if _has_pip(py):
            run_logged([py, "-m", "pip", "install", "--disable-pip-version-check", "--no-input", *wheels], log,
                       what="pip install (the bundle's wheels)")
        elif uv:
            run_logged([uv, "pip", "install", "--python", py, "--offline", *wheels], log,
                       what="uv pip install (the bundle's wheels)")
        else:
            raise EnvBuildError(f"{base} has no pip and no uv is on PATH: the bundle's wheels cannot be installed")
    finally:
        os.unlink(req)
    _check(py, log, echo)
    freeze = subprocess.run([str(py), "-c", "import importlib.metadata as m; print('\\n'.join(sorted("
                             "'%s==%s' % (d.metadata['Name'], d.version) for d in m.distributions())))"],
                            capture_output=True, text=True).stdout
    atomic_write(where / "frameval-freeze.txt", freeze)
    atomic_write(where / MARKER, json.dumps({"runner_on": base, "python": info["version"], "offline_bundle":
                                             str(bundle), "installer": "pip", "packed": entry.get("requirements"),
                                             "target_site": dirs}, indent=1))
    echo(f"frameval: the runner on your {base} (Python {info['version']}): {len(entry.get('requirements', []))} "
         f"packages from the bundle, the rest your own ({where})")


def _has_pip(py: Path) -> bool:
    return subprocess.run([str(py), "-c", "import pip"], capture_output=True).returncode == 0


def _check(py: Path, log, echo) -> None:
    """`pip check` of the result: a conflict between a packed package and the target's is said, not fatal."""
    if not _has_pip(py):
        return
    p = subprocess.run([str(py), "-m", "pip", "check", "--disable-pip-version-check"], capture_output=True,
                       text=True)
    log.write(f"$ pip check\n{p.stdout}{p.stderr}")
    bad = [ln for ln in p.stdout.splitlines() if ln.strip() and "No broken requirements" not in ln]
    if bad:
        echo(f"frameval: warning: pip check in the runner on your interpreter: {len(bad)} line(s), e.g. {bad[0]} "
             f"(log: {log.name})")

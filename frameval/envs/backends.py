"""Environment backends, registered by name like papermill's engines: `venv`
is always there; `conda` is used when conda/mamba/micromamba is on PATH or
asked for (`choose_backend`). The venv backend installs with uv where it can
be had, else pip (installers.py); conda creates the environment with conda's
packages and installs the pip ones with pip.

Standard library only: the runner's own environment is built with this module.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

from .. import frameworks, notebook
from ..paths import NOTEBOOKS, REPO
from . import lockfile
from .installers import (EnvBuildError, installer_name, pip_install, run_logged, uv_cannot_be_installed,
                         uv_executable, uv_found, uv_install)
from .model import Env
from .pythons import find_python
from .specfile import EnvSpec


class Backend:
    NAME = ""

    def available(self) -> bool:
        raise NotImplementedError

    def create(self, spec: EnvSpec, prefix: Path, log, echo=print) -> str:
        """Build the environment into `prefix`; return the installer used ("uv 0.x", "pip")."""
        raise NotImplementedError

    def freeze(self, env: Env) -> str:
        """The environment's package list, recorded when it is built."""
        uv = uv_found()
        cmd = ([uv, "pip", "freeze", "--python", str(env.python)] if uv
               else [str(env.python), "-m", "pip", "freeze", "--all"])
        out = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        return out.stdout


def lock_for(spec: EnvSpec, log):
    """The lock file to build `spec` from (lockfile.py), or None (its pip lines,
    unlocked); which, and why, goes into the build log."""
    lock, why = lockfile.status(spec)
    log.write(f"# from the lock {lock.path} (hash-checked)\n" if lock else f"# {why}\n")
    return lock.path if lock else None


def _pip_install_spec(python: Path, spec: EnvSpec, log, locked: bool = True) -> None:
    """The spec's lock (else its pip lines) with pip (a spec without any runs nothing)."""
    if spec.pip:
        pip_install(python, spec.pip, log, lock_file=lock_for(spec, log) if locked else None)


# ------------------------------------------------------------ the venv backend
# uv writes no .pyc files (pip compiles all of site-packages, minutes for these
# environments on 2 cores). Kernels and scripts of the environments frameval
# builds write them at first import (Env.bytecode_vars), so only what is imported
# is compiled, once. What a process will import is compiled here, at build time,
# while the other environments are still installing: the runner's own modules
# (it starts on every invocation, under the user's environment), and in a
# framework's environment its kernel, frameval.nb, its parts, what its notebooks
# import and what it loads at its first compile (its record's warm_imports).
# Left to the first run, that compiling took 3 to 10 s of each framework's first
# run and of both its GEMM processes, one after another.
# FRAMEVAL_COMPILE_BYTECODE=1 compiles everything at build time, as pip does.
#
# An entry is a module to import, or "module:function" to import and call with
# no arguments (what a library loads lazily, e.g. Pillow's image plugins).
# KERNEL_START is what a kernel's start imports (read from sys.modules in a started
# kernel: ipykernel and the IPython shell), less debugpy: ipykernel's debugger loads
# its pydevd (112 modules), whose compile took 1.5-1.9 s in each of eight
# environments building at once, to save each framework's first kernel 0.35 s.
# (Starting a real kernel here instead cost 0.9 s in each.) The runner's list adds
# the report's kernel and what the report draws with (matplotlib, Pillow's
# plugins, jinja2): left out, the report compiled 545 modules at its start.
KERNEL_START = ("ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel_launcher", "IPython.core.debugger",
                "IPython.core.completerlib", "IPython.core.oinspect", "IPython.utils.wildcard",
                "IPython.extensions.storemagic", "IPython.core.logger", "psutil", "tornado.queues",
                "tornado.platform.asyncio")
KERNEL_WARM = (*KERNEL_START, "frameval.nb", "frameval.nb.check", "frameval.nb.reference", "frameval.nb.evaluation")
WARM_IMPORTS = {
    "runner": ("frameval.pipeline", "papermill", "nbclient", "nbformat", "jupyter_client.manager",
               "jupyter_client.provisioning", "pytest", *KERNEL_START, "frameval.report.build",
               "frameval.report.media", "frameval.report.render", "matplotlib.pyplot",
               "matplotlib.backends.backend_agg", "PIL.Image:init", "imageio.v3", "jinja2"),
}


def warm_modules(spec: EnvSpec) -> tuple:
    short = spec.name[len("frameval-"):] if spec.name.startswith("frameval-") else spec.name
    if short in WARM_IMPORTS:
        return tuple(WARM_IMPORTS[short])
    rec = frameworks.find(short[:-len("-gpu")] if short.endswith("-gpu") else short)
    if rec is None:
        return ()
    parts = [frameworks.module_name(rec.key, p) for p in (*frameworks.KERNEL_PARTS, "gemm")
             if frameworks.has_part(rec.key, p)]
    from_notebooks = [m for path in sorted((REPO / NOTEBOOKS / rec.key).glob("*.ipynb"))
                      for m in notebook.imported_modules(notebook.read(path))]
    return tuple(dict.fromkeys((*KERNEL_WARM, *parts, *from_notebooks, *rec.warm_imports)))


def warm_key(spec: EnvSpec) -> str:
    """What the environment's warm list is, in a few characters: its marker keeps
    the one it was built (or last warmed) with, and an environment built before
    the list grew is warmed again once (build.py, _backfill_warm)."""
    return hashlib.sha256("\n".join(warm_modules(spec)).encode()).hexdigest()[:12]


WARM = r"""
import importlib, sys, time
for m in sys.argv[1:]:
    t0 = time.perf_counter()
    try:
        name, _, call = m.partition(":")
        mod = importlib.import_module(name)
        if call:
            getattr(mod, call)()
        print("warm import %s: %.1f s" % (m, time.perf_counter() - t0), flush=True)
    except BaseException as e:  # noqa - a note in the log; the build itself succeeded
        print("warm import %s failed: %s: %s" % (m, type(e).__name__, e), flush=True)
"""


def warm_imports(python: Path, modules, log) -> None:
    """Import `modules` once with bytecode writing on, so that their .pyc files exist."""
    if not modules:
        return
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    log.write(f"$ {python} -c <import {' '.join(modules)}>  (writes .pyc files)\n")
    log.flush()
    try:
        # in the environment's folder: a framework may write files where it is imported (MindSpore's rank_0/)
        subprocess.run([str(python), "-c", WARM, *modules], stdout=log, stderr=subprocess.STDOUT, env=env,
                       stdin=subprocess.DEVNULL, timeout=900, cwd=str(python.parent.parent))
    except (OSError, subprocess.TimeoutExpired) as e:
        log.write(f"warm imports stopped: {e}\n")


_ensurepip_cache: dict = {}


def _seed_packages(base: Path, spec: EnvSpec) -> list:
    """Requirement lines for what `python -m venv` puts in an environment
    (ensurepip's pip, and setuptools where that Python bundles it), pinned to
    ensurepip's versions and found among its bundled wheels; none that the spec names itself.
    Installed before the spec's packages, which may upgrade them, as with pip."""
    if base not in _ensurepip_cache:
        code = ("import ensurepip as e, os; print(getattr(e, '_PIP_VERSION', '')); "
                "print(getattr(e, '_SETUPTOOLS_VERSION', '')); print(os.path.join(os.path.dirname(e.__file__), '_bundled'))")
        try:
            out = subprocess.run([str(base), "-c", code], capture_output=True, text=True, timeout=60,
                                 stdin=subprocess.DEVNULL).stdout.splitlines()
        except (OSError, subprocess.TimeoutExpired):
            out = []
        out += [""] * 3
        _ensurepip_cache[base] = (out[0].strip(), out[1].strip(), out[2].strip())
    pip_v, st_v, bundled = _ensurepip_cache[base]
    named = {re.sub(r"[-_.]+", "-", m.group(1)).lower() for m in
             (re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", ln) for ln in spec.pip) if m}
    lines = [] if "pip" in named else [f"pip=={pip_v}" if pip_v else "pip"]
    if st_v and "setuptools" not in named:
        lines.append(f"setuptools=={st_v}")
    if Path(bundled).is_dir() and lines:
        lines.insert(0, f"--find-links {bundled}")
    return lines


class VenvBackend(Backend):
    NAME = "venv"

    def available(self) -> bool:
        return True

    def create(self, spec, prefix, log, echo=print):
        if spec.conda:
            log.write(f"note: conda-only packages {list(spec.conda)} are ignored by the venv backend\n")
        base = find_python(spec.python)
        if base is None:
            raise EnvBuildError(
                f"{spec.path.name} needs Python {spec.python}, which is neither on PATH as "
                f"python{spec.python} nor under pyenv: install it (e.g. `pyenv install {spec.python}`) "
                f"or use --env-backend conda")
        python = prefix / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
        uv = uv_executable(echo)
        if uv is None:
            run_logged([base, "-m", "venv", prefix], log, what="python -m venv")
            locked = not uv_cannot_be_installed()
            if not locked:
                # uv itself cannot be had here (the runner's spec and lock list it): build without it, unlocked
                spec = replace(spec, pip=tuple(ln for ln in spec.pip if not re.match(r"uv\s*($|[=<>!~;])", ln)))
            _pip_install_spec(python, spec, log, locked)
            return "pip"
        # uv: no ensurepip (seconds); what ensurepip would add (pip, and setuptools
        # before Python 3.12: Paddle and MegEngine import it) is installed with the
        # rest, from the same bundled wheels, so the environment matches one pip built.
        run_logged([base, "-m", "venv", "--without-pip", prefix], log, what="python -m venv")
        seeds = _seed_packages(base, spec)
        if seeds:  # first, as ensurepip does: the spec may then upgrade them (torch needs a newer setuptools)
            uv_install(uv, python, seeds, log)
        uv_install(uv, python, list(spec.pip), log, lock_file=lock_for(spec, log))
        warm_imports(python, warm_modules(spec), log)
        return installer_name()


# ----------------------------------------------------------- the conda backend
class CondaBackend(Backend):
    NAME = "conda"

    def exe(self):
        for name in ("mamba", "micromamba", "conda"):
            if shutil.which(name):
                return shutil.which(name)
        return None

    def available(self) -> bool:
        return self.exe() is not None

    def create(self, spec, prefix, log, echo=print):
        exe = self.exe()
        if exe is None:
            raise EnvBuildError("--env-backend conda asked for, but none of mamba, micromamba, conda is on PATH")
        chans = [a for c in (spec.channels or ("conda-forge",)) for a in ("-c", c)]
        run_logged([exe, "create", "-y", "-p", prefix, *chans, f"python={spec.python}", "pip", *spec.conda], log,
                   what=f"{Path(exe).name} create")
        _pip_install_spec(prefix / "bin" / "python", spec, log)
        return "pip"

    def freeze(self, env):
        out = subprocess.run([self.exe(), "list", "-p", str(env.prefix), "--explicit"],
                             capture_output=True, text=True)
        return out.stdout + "\n# pip\n" + super().freeze(env)


# ------------------------------------------------------------------ by name
BACKENDS = {b.NAME: b for b in (VenvBackend(), CondaBackend())}


def choose_backend(name: str = "auto") -> Backend:
    """The backend called `name`; "auto" is conda where conda, mamba or micromamba is on PATH, else venv."""
    if name == "auto":
        return BACKENDS["conda"] if BACKENDS["conda"].available() else BACKENDS["venv"]
    if name not in BACKENDS:
        raise ValueError(f"unknown environment backend {name!r}; choose one of auto, {', '.join(BACKENDS)}")
    return BACKENDS[name]

"""Framework environments: build them (conda or venv backend), cache them per
user keyed by their spec's hash, and register one Jupyter kernel each in a
project-scoped path.

Backends are registered by name, like papermill's engines: `venv` is always
there; `conda` is used when conda/mamba/micromamba is on PATH or asked for.
The venv backend installs with uv (the runner environment's, one on PATH, or
one bootstrapped into the cache with pip) and falls back to pip, saying so in
one line, where uv cannot be had. uv does not read pip's configuration, so the
user's pip settings (`pip config list`, PIP_* variables) are passed to it.
An environment directory is complete only when its `frameval-ready.json`
marker exists, so a build killed half-way is rebuilt, never half-used; its
location is keyed by the spec alone, so an environment built with uv is reused
like one built with pip.

A user may bring an environment of their own (`--python torch=/path/to/python`):
`user_env` checks the framework imports there, adds only the kernel-side
packages (ipykernel, numpy) if missing and allowed, and registers a kernel.

Standard library only: the runner's own environment is built with this module.
"""
from __future__ import annotations

import ast
import configparser
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from .envspec import EnvSpec, SpecError, parse_spec
from . import files
from .files import atomic_write
from .locks import file_lock
from .paths import FRAMEWORK_KEY_ENV, REPO, envs_dir, user_cache_dir
from .catalog import BY_KEY, FRAMEWORKS, framework_name
from .versions import framework_spec, kernel_suffix, key, split_key

# FRAMEVAL_ENV_SPECS points at another folder of <fw>.yml specs (custom pins; the tests' broken env).
ENVS_SPEC_DIR = Path(os.environ.get("FRAMEVAL_ENV_SPECS") or REPO / "envs")
# Kernels are registered here (git-ignored), and JUPYTER_PATH points at it for
# papermill and JupyterLab: nothing is written into the user's own Jupyter dirs.
# FRAMEVAL_JUPYTER_DIR moves it (bench/pipeline.py's throwaway builds, tests).
JUPYTER_DIR = Path(os.environ.get("FRAMEVAL_JUPYTER_DIR") or REPO / ".frameval" / "jupyter")
MARKER = "frameval-ready.json"


class EnvBuildError(RuntimeError):
    pass


@dataclass
class Env:
    spec: EnvSpec
    prefix: Path
    backend: str  # "venv", "conda", or "user" (an environment the user brought with --python)
    python_path: Path | None = None  # set for a user's environment
    kernel: str = ""  # the Jupyter kernel registered for it
    user: dict = field(default_factory=dict)  # a user's environment: what the probe found, its freeze
    built_now: bool = False  # built by this call (not reused from the cache)

    @property
    def provided_by_user(self) -> bool:
        return self.backend == "user"

    @property
    def python(self) -> Path:
        if self.python_path is not None:
            return self.python_path
        if os.name == "nt":
            return self.prefix / ("python.exe" if self.backend == "conda" else "Scripts/python.exe")
        return self.prefix / "bin" / "python"

    @property
    def ready(self) -> bool:
        if self.provided_by_user:
            return self.python.exists()
        return (self.prefix / MARKER).is_file() and self.python.exists()

    def info(self) -> dict:
        if self.provided_by_user:
            return dict(self.user)
        try:
            return json.loads((self.prefix / MARKER).read_text())
        except (OSError, ValueError):
            return {}

    @property
    def freeze(self) -> str:
        """The locked package list, as recorded when the environment was built
        (a user's environment: `pip freeze` of it, taken in this invocation)."""
        if self.provided_by_user:
            return self.user.get("freeze", "")
        try:
            return (self.prefix / "frameval-freeze.txt").read_text()
        except OSError:
            return ""

    @property
    def key_text(self) -> str:
        """What the run cache key hashes for this environment: its freeze (and,
        for a user's environment, which interpreter and Python version)."""
        if self.provided_by_user:
            return f"# user python {self.user.get('python_version', '?')} {self.python}\n{self.freeze}"
        return self.freeze

    def result_fields(self) -> dict:
        """Added to each run's result["environment"]: where the environment came from."""
        out = {"provided_by_user": self.provided_by_user, "spec_pin": spec_pin(self.spec)}
        if self.provided_by_user:
            out.update(python_executable=str(self.python), prefix=str(self.prefix), freeze=self.freeze,
                       installed_by_frameval=self.user.get("installed", []))
        else:
            out.update(installer=self.info().get("installer", "pip"))
        return out


def spec_path(framework: str, device: str = "cpu") -> Path:
    gpu = ENVS_SPEC_DIR / f"{framework}-gpu.yml"
    if device == "gpu" and gpu.exists():
        return gpu
    return ENVS_SPEC_DIR / f"{framework}.yml"


def kernel_name(framework: str, device: str = "cpu") -> str:
    return f"frameval-{framework}" + ("-gpu" if device == "gpu" and (ENVS_SPEC_DIR / f"{framework}-gpu.yml").exists() else "")


# --------------------------------------------------------------------- backends
class Backend:
    NAME = ""

    def available(self) -> bool:
        raise NotImplementedError

    def create(self, spec: EnvSpec, prefix: Path, log, echo=print) -> str:
        """Build the environment into `prefix`; return the installer used ("uv 0.x", "pip")."""
        raise NotImplementedError

    def freeze(self, env: Env) -> str:
        uv = _uv_state.get("exe")
        cmd = ([uv, "pip", "freeze", "--python", str(env.python)] if uv
               else [str(env.python), "-m", "pip", "freeze", "--all"])
        out = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        return out.stdout


def _run(cmd, log, env=None, what: str = ""):
    log.write(f"$ {' '.join(map(str, cmd))}\n")
    log.flush()
    t0 = time.perf_counter()
    p = subprocess.run([str(c) for c in cmd], stdout=log, stderr=subprocess.STDOUT, env=env,
                       stdin=subprocess.DEVNULL)
    log.write(f"# exit {p.returncode} after {time.perf_counter() - t0:.1f} s\n")
    log.flush()
    if p.returncode != 0:
        raise EnvBuildError(f"{what or Path(str(cmd[0])).name} failed with exit {p.returncode}")


def _requirements_file(lines) -> str:
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(lines) + "\n")
        return f.name


def _pip_install(python: Path, spec: EnvSpec, log) -> None:
    if not spec.pip:
        return
    req = _requirements_file(spec.pip)
    try:
        _run([python, "-m", "pip", "install", "--no-input", "-r", req], log, what="pip install")
    finally:
        os.unlink(req)


# ------------------------------------------------------- pip's settings, for uv
PIP_RANK = {"global": 0, "install": 1, ":env:": 2}  # pip: PIP_* beats [install] beats [global]


def _pip_config_list():
    """(key, value) pairs from `pip config list` (its files and PIP_* variables), or None."""
    try:
        p = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                           timeout=120, stdin=subprocess.DEVNULL,
                           env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"))
    except (OSError, subprocess.TimeoutExpired):
        return None
    if p.returncode != 0:
        return None
    items = []
    for line in p.stdout.splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            pass
        items.append((key.strip(), str(value)))
    return items


def _pip_config_files():
    """The same pairs read from pip's configuration files directly (a Python without pip)."""
    files = []
    if os.environ.get("PIP_CONFIG_FILE") != os.devnull:
        for d in (os.environ.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(os.pathsep):
            files.append(Path(d) / "pip" / "pip.conf")
        files += [Path("/etc/pip.conf"), Path.home() / ".pip" / "pip.conf",
                  Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "pip" / "pip.conf",
                  Path(sys.prefix) / "pip.conf"]
        if os.environ.get("PIP_CONFIG_FILE"):
            files.append(Path(os.environ["PIP_CONFIG_FILE"]))
    items = []
    for f in files:
        cp = configparser.RawConfigParser()
        try:
            cp.read(f)
        except (configparser.Error, OSError):
            continue
        for section in cp.sections():
            items += [(f"{section}.{k}", v) for k, v in cp.items(section)]
    return items


_settings_cache: dict = {}


def pip_settings(items=None) -> dict:
    """The pip options that decide where packages come from, as pip applies them
    (read once per process and set of PIP_* variables)."""
    if items is None:
        key = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("PIP_")))
        if key not in _settings_cache:
            _settings_cache[key] = pip_settings(_pip_config_list() or _pip_config_files())
        return dict(_settings_cache[key])
    best: dict = {}
    for key, value in items:
        section, _, name = key.partition(".")
        if section in PIP_RANK and (name not in best or PIP_RANK[section] >= best[name][0]):
            best[name] = (PIP_RANK[section], value)
    for var, value in os.environ.items():  # again, in case `pip config list` could not run
        if var.startswith("PIP_") and var != "PIP_CONFIG_FILE":
            best[var[4:].lower().replace("_", "-")] = (PIP_RANK[":env:"], value)
    return {k: v for k, (_, v) in best.items()}


def _true(value) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def uv_options(settings: dict | None = None) -> tuple:
    """uv's arguments and environment for the user's pip settings: its indexes
    (index-url, extra-index-url, find-links, no-index, trusted-host, pre), cache
    (no-cache-dir), certificates, timeout and proxy. With several indexes uv
    resolves as pip does only with --index-strategy unsafe-best-match."""
    s = pip_settings() if settings is None else settings
    args = ["--index-strategy", "unsafe-best-match"]
    if s.get("index-url", "").split():
        args += ["--index-url", s["index-url"].split()[0]]
    for url in s.get("extra-index-url", "").split():
        args += ["--extra-index-url", url]
    for loc in s.get("find-links", "").split():
        args += ["--find-links", loc]
    for host in s.get("trusted-host", "").split():
        args += ["--allow-insecure-host", host]
    if _true(s.get("no-index")):
        args.append("--no-index")
    if _true(s.get("pre")):
        args += ["--prerelease", "allow"]
    if "no-cache-dir" in s:  # pip: any value of PIP_NO_CACHE_DIR turns the cache off
        args.append("--no-cache")
    env = {}
    if s.get("cert") and not os.environ.get("SSL_CERT_FILE"):
        env["SSL_CERT_FILE"] = s["cert"]
    if s.get("client-cert") and not os.environ.get("SSL_CLIENT_CERT"):
        env["SSL_CLIENT_CERT"] = s["client-cert"]
    timeout = s.get("timeout") or s.get("default-timeout")
    if timeout and not os.environ.get("UV_HTTP_TIMEOUT"):
        try:
            env["UV_HTTP_TIMEOUT"] = str(max(1, int(float(timeout))))
        except ValueError:
            pass
    if s.get("proxy"):
        for var in ("HTTPS_PROXY", "HTTP_PROXY"):
            if not os.environ.get(var):
                env[var] = s["proxy"]
    return args, env


# ------------------------------------------------------------------------ uv
_uv_lock = threading.Lock()
_uv_state: dict = {}


def _uv_works(exe) -> str:
    """uv's version if `exe` runs, else ""."""
    try:
        p = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    m = re.match(r"uv (\S+)", p.stdout.strip())
    return m.group(1) if p.returncode == 0 and m else ""


def _tools_uv() -> Path:
    return user_cache_dir() / "tools" / "uv" / ("Scripts/uv.exe" if os.name == "nt" else "bin/uv")


def _bootstrap_uv() -> Path:
    """Install the PyPI package `uv` into the cache's tools folder with this
    Python's pip (the standard library's path: the runner environment may not
    exist yet). Once per machine; the runner environment then has its own."""
    exe = _tools_uv()
    root = exe.parent.parent
    root.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(root.with_suffix(".lock")):
        if _uv_works(exe):
            return exe
        tmp = root.with_name(f"uv.tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        with open(root.with_suffix(".log"), "w") as log:
            _run([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
                  "--target", tmp, "uv"], log, what="pip install uv")
        shutil.rmtree(root, ignore_errors=True)
        os.replace(tmp, root)
    if not _uv_works(exe):
        raise EnvBuildError(f"{exe} does not run")
    return exe


def _find_uv():
    if os.environ.get("FRAMEVAL_INSTALLER", "").strip().lower() == "pip":
        return None, "", "FRAMEVAL_INSTALLER=pip"
    here = Path(sys.executable).parent / ("uv.exe" if os.name == "nt" else "uv")  # the runner env's own
    for cand in (os.environ.get("FRAMEVAL_UV"), here, shutil.which("uv"), _tools_uv()):
        if cand and Path(cand).exists():
            version = _uv_works(cand)
            if version:
                return str(cand), version, ""
    try:
        exe = _bootstrap_uv()
        return str(exe), _uv_works(exe), ""
    except (EnvBuildError, OSError) as e:
        return None, "", f"could not install it: {e}; see {_tools_uv().parent.parent.with_suffix('.log')}"


def uv_executable(echo=print) -> str | None:
    """The uv to install with, found or bootstrapped once per process; None
    (after one printed line) where there is none: then pip installs."""
    with _uv_lock:
        if "exe" not in _uv_state:
            _uv_state["exe"], _uv_state["version"], why = _find_uv()
            _uv_state["why"] = why
            if _uv_state["exe"] is None and echo:
                echo(f"uv unavailable ({why}); installing with pip instead, which is slower")
        return _uv_state["exe"]


def installer_name(echo=None) -> str:
    return f"uv {_uv_state.get('version', '')}".strip() if uv_executable(echo) else "pip"


def _uv_install(uv: str, python: Path, lines, log) -> None:
    args, env = uv_options()
    req = _requirements_file(lines)
    try:
        if _true(os.environ.get("FRAMEVAL_COMPILE_BYTECODE")):
            args.append("--compile-bytecode")
        _run([uv, "pip", "install", "--python", python, *args, "-r", req], log,
             what="uv pip install", env=dict(os.environ, **env))
    finally:
        os.unlink(req)


def install_packages(python: Path, lines, log, echo=print) -> str:
    """Install requirement lines into an existing interpreter's environment with
    uv, else pip. Returns the installer used."""
    uv = uv_executable(echo)
    if uv:
        _uv_install(uv, Path(python), lines, log)
        return installer_name()
    req = _requirements_file(lines)
    try:
        _run([python, "-m", "pip", "install", "--no-input", "-r", req], log, what="pip install")
    finally:
        os.unlink(req)
    return "pip"


_python_cache: dict = {}


def _python_candidates(version: str):
    roots = [os.environ.get("PYENV_ROOT"), str(Path.home() / ".pyenv")]
    try:
        roots.append(subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip())
    except OSError:
        pass
    for root in dict.fromkeys(filter(None, roots)):
        vdir = Path(root) / "versions"
        if vdir.is_dir():
            key = lambda p: [int(x) if x.isdigit() else 0 for x in re.split(r"[.\-]", p.name)]
            for d in sorted(vdir.iterdir(), key=key, reverse=True):
                if re.fullmatch(rf"{re.escape(version)}\.\d+", d.name):
                    yield d / "bin" / "python"
    for name in (f"python{version}", "python3"):
        exe = shutil.which(name)
        if exe:
            yield Path(exe)
    yield Path(getattr(sys, "_base_executable", sys.executable))


def find_python(version: str) -> Path | None:
    """A working Python `version` (with venv): pyenv's versions folder first, then
    PATH. Each candidate is run once, since a pyenv shim on PATH may refuse."""
    if version in _python_cache:
        return _python_cache[version]
    found = None
    for exe in _python_candidates(version):
        if not exe.exists():
            continue
        try:
            out = subprocess.run([str(exe), "-c", "import sys, venv; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode == 0 and out.stdout.strip() == version:
            found = exe
            break
    _python_cache[version] = found
    return found


# uv writes no .pyc files (pip compiles all of site-packages, minutes for these
# environments on 2 cores). Kernels of the environments frameval builds write
# them at first import (kernel.json sets PYTHONDONTWRITEBYTECODE empty), so only
# what is imported is compiled, once. The runner's own process is compiled here,
# at build time: it starts on every invocation, under the user's environment.
# FRAMEVAL_COMPILE_BYTECODE=1 compiles everything at build time, as pip does.
WARM_IMPORTS = {
    "runner": ("frameval.pipeline", "papermill", "nbclient", "nbformat", "jupyter_client.manager",
               "jupyter_client.provisioning", "pytest"),
}


def warm_modules(spec: EnvSpec) -> tuple:
    short = spec.name[len("frameval-"):] if spec.name.startswith("frameval-") else spec.name
    return tuple(WARM_IMPORTS.get(short, ()))


WARM = r"""
import importlib, sys, time
for m in sys.argv[1:]:
    t0 = time.perf_counter()
    try:
        importlib.import_module(m)
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
        subprocess.run([str(python), "-c", WARM, *modules], stdout=log, stderr=subprocess.STDOUT, env=env,
                       stdin=subprocess.DEVNULL, timeout=900)
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
            _run([base, "-m", "venv", prefix], log, what="python -m venv")
            if _uv_state.get("why", "").startswith("could not install"):
                # uv itself cannot be had here (the runner's spec lists it): build without it
                spec = replace(spec, pip=tuple(ln for ln in spec.pip if not re.match(r"uv\s*($|[=<>!~;])", ln)))
            _pip_install(python, spec, log)
            return "pip"
        # uv: no ensurepip (seconds); what ensurepip would add (pip, and setuptools
        # before Python 3.12: Paddle and MegEngine import it) is installed with the
        # rest, from the same bundled wheels, so the environment matches one pip built.
        _run([base, "-m", "venv", "--without-pip", prefix], log, what="python -m venv")
        seeds = _seed_packages(base, spec)
        if seeds:  # first, as ensurepip does: the spec may then upgrade them (torch needs a newer setuptools)
            _uv_install(uv, python, seeds, log)
        _uv_install(uv, python, list(spec.pip), log)
        warm_imports(python, warm_modules(spec), log)
        return installer_name()


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
        _run([exe, "create", "-y", "-p", prefix, *chans, f"python={spec.python}", "pip", *spec.conda], log,
             what=f"{Path(exe).name} create")
        _pip_install(prefix / "bin" / "python", spec, log)
        return "pip"

    def freeze(self, env):
        out = subprocess.run([self.exe(), "list", "-p", str(env.prefix), "--explicit"],
                             capture_output=True, text=True)
        return out.stdout + "\n# pip\n" + super().freeze(env)


BACKENDS = {b.NAME: b for b in (VenvBackend(), CondaBackend())}


def choose_backend(name: str = "auto") -> Backend:
    if name == "auto":
        return BACKENDS["conda"] if BACKENDS["conda"].available() else BACKENDS["venv"]
    if name not in BACKENDS:
        raise ValueError(f"unknown environment backend {name!r}; choose one of auto, {', '.join(BACKENDS)}")
    return BACKENDS[name]


# --------------------------------------------------------------------- building
def env_for(spec: EnvSpec, backend: Backend) -> Env:
    return Env(spec=spec, prefix=envs_dir() / f"{spec.name}-{backend.NAME}-{spec.key}", backend=backend.NAME)


def ensure_env(spec: EnvSpec, backend: Backend, echo=print, announce: bool = True) -> Env:
    """Build the environment unless a complete one with the same key exists.
    `announce`: print a line when the build starts and one when it ends (off
    when the caller prints its own progress line)."""
    say = echo if (announce and echo) else (lambda m: None)
    env = env_for(spec, backend)
    if env.ready:
        _backfill_install(env)
        return env
    env.prefix.parent.mkdir(parents=True, exist_ok=True)
    lock = env.prefix.with_suffix(".lock")
    with file_lock(lock):
        if env.ready:  # another process built it while we waited
            return env
        if env.prefix.exists():
            shutil.rmtree(env.prefix)  # a half-built leftover
        log_path = env.prefix.with_suffix(".log")
        say(f"building environment {spec.name} ({backend.NAME}, Python {spec.python}) -> {env.prefix}")
        t0 = time.perf_counter()
        with open(log_path, "w") as log:
            try:
                installer = backend.create(spec, env.prefix, log, echo=echo) or "pip"
            except EnvBuildError as e:
                log.flush()
                why = _failure_line(log_path)
                raise EnvBuildError(f"{spec.name}: {e}{': ' + why if why else ''}; log: {log_path}\n"
                                    f"{files.tail(log_path, 12)}") from None
            t1 = time.perf_counter()
            (env.prefix / "frameval-freeze.txt").write_text(backend.freeze(env))
            log.write(f"# freeze: {time.perf_counter() - t1:.1f} s; build: {time.perf_counter() - t0:.1f} s\n")
        info = {"spec": spec.name, "key": spec.key, "backend": backend.NAME, "installer": installer,
                "python": spec.python, "build_s": round(time.perf_counter() - t0, 1),
                "built": time.strftime("%Y-%m-%dT%H:%M:%S")}
        info["install"] = _install_facts(spec, env.prefix, log_path, info["build_s"], installer, at_build=True)
        atomic_write(env.prefix / MARKER, json.dumps(info, indent=1))
        say(f"built {spec.name} with {installer} in {info['build_s']} s")
        env.built_now = True
    return env


def _install_facts(spec, prefix, log_path, build_s, installer, at_build) -> dict | None:
    """frameval/install.py's measurement; a failure to measure never fails a build."""
    try:
        from .install import measure
        return measure(spec, prefix, log_path, build_s=build_s, installer=installer, at_build=at_build)
    except Exception as e:  # noqa: BLE001
        return {"recorded": "failed", "error": f"{type(e).__name__}: {e}"}


def _backfill_install(env: Env) -> None:
    """An environment built before install facts were recorded: read what can be
    read from it (and its build log, when that is still there) once, into its marker."""
    info = env.info()
    if not info or "install" in info:
        return
    info["install"] = _install_facts(env.spec, env.prefix, env.prefix.with_suffix(".log"), info.get("build_s"),
                                     info.get("installer"), at_build=False)
    try:
        atomic_write(env.prefix / MARKER, json.dumps(info, indent=1))
    except OSError:
        pass  # a read-only shared environment: measured again next time


def _failure_line(log_path: Path) -> str:
    """The line of a build log that says why it failed (pip's ERROR, uv's reason)."""
    try:
        lines = [ln.strip(" ×╰─▶│") for ln in log_path.read_text(errors="replace").splitlines()]
    except OSError:
        return ""
    lines = [ln.strip() for ln in lines if ln.strip() and not ln.startswith(("$ ", "# "))]
    because = [ln[ln.index("Because "):] for ln in lines if "Because " in ln]  # uv's reason
    if because:
        return because[0][:300]
    for pat in (r"^(ERROR|error):", r"(not found|No matching|unsatisfiable|No solution)"):
        hits = [ln for ln in lines if re.search(pat, ln)]
        if hits:
            return re.sub(r"^(ERROR|error):\s*", "", hits[-1])[:300]
    return ""




# --------------------------------------------------------------------- kernels
def kernel_env() -> dict:
    """Environment variables every framework kernel gets, set in kernel.json so
    that a notebook opened by hand behaves as under papermill."""
    return {
        "PYTHONPATH": str(REPO),  # the light frameval.nb module, from this clone
        "PYTHONWARNINGS": "ignore::DeprecationWarning",
        "IPYTHONDIR": str(REPO / ".frameval" / "ipython"),
    }


# Per-framework log and device settings. GLOG_v means opposite things to
# MindSpore (a level: 4 = critical only) and Paddle (verbosity: 4 = very loud).
FRAMEWORK_KERNEL_ENV = {
    "tensorflow": {"TF_CPP_MIN_LOG_LEVEL": "3"},
    "mindspore": {"GLOG_v": "4"},
    "paddle": {"GLOG_v": "0", "GLOG_minloglevel": "2"},
    "megengine": {"MGE_DEFAULT_DEVICE": "cpu0"},  # CPU kernel only; the GPU one picks gpu0
}


def register_kernel(env: Env, name: str, display: str, extra_env: dict | None = None) -> Path:
    kdir = JUPYTER_DIR / "kernels" / name
    kdir.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [str(env.python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": display,
        "language": "python",
        "env": {**kernel_env(), **({} if env.provided_by_user else {"PYTHONDONTWRITEBYTECODE": ""}),
                **(extra_env or {})},
        "metadata": {"frameval": {"env": str(env.prefix), "spec": env.spec.name, "key": env.spec.key,
                                  "provided_by_user": env.provided_by_user}},
    }
    atomic_write(kdir / "kernel.json", json.dumps(spec, indent=1))
    return kdir


def jupyter_env(base: dict | None = None) -> dict:
    """os.environ plus the project-scoped Jupyter path, for papermill and lab."""
    env = dict(os.environ if base is None else base)
    env["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(JUPYTER_DIR), env.get("JUPYTER_PATH", "")]))
    env.setdefault("IPYTHONDIR", str(REPO / ".frameval" / "ipython"))
    return env


def registered_kernels() -> list[str]:
    kdir = JUPYTER_DIR / "kernels"
    return sorted(p.name for p in kdir.iterdir() if (p / "kernel.json").exists()) if kdir.is_dir() else []




def _kernel_extra(framework: str, device: str, version: str = "") -> dict:
    """The kernel's own environment variables: the framework's log and device
    settings, and for a pinned version its key (hand runs go to runs/<key>/)."""
    extra = dict(FRAMEWORK_KERNEL_ENV.get(framework, {}))
    if device == "gpu":
        extra.pop("MGE_DEFAULT_DEVICE", None)
    if version:
        extra[FRAMEWORK_KEY_ENV] = key(framework, version)
    return extra


def ensure_framework(framework: str, device: str = "cpu", backend: str = "auto", echo=print,
                     announce: bool = True) -> Env:
    """Build (or reuse) one framework's environment and register its kernel.
    `framework` may be a pinned version's key, "paddle@3.2.2" (frameval/versions.py):
    the spec with that pin, its own kernel."""
    framework, version = split_key(framework)
    spec = framework_spec(key(framework, version), device)
    env = ensure_env(spec, choose_backend(backend), echo=echo, announce=announce)
    env.kernel = kernel_name(framework, device) + kernel_suffix(version)
    register_kernel(env, env.kernel,
                    f"frameval · {framework_name(framework)}" + (f" {version}" if version else "")
                    + (" (GPU)" if device == "gpu" else ""),
                    _kernel_extra(framework, device, version))
    return env


def ensure_frameworks(frameworks, device: str = "cpu", backend: str = "auto", echo=print,
                      user_pythons: dict | None = None, on_done=None, jobs: int = 0) -> dict:
    """Every framework's environment (or the user's, for those in
    `user_pythons`), built in parallel: {framework: Env or the exception}.
    `on_done(framework, env_or_exception, seconds)` is called as each finishes
    (from a worker thread, one at a time): one progress line each."""
    user_pythons = dict(user_pythons or {})
    frameworks = list(dict.fromkeys(frameworks))
    b = choose_backend(backend)
    lock = threading.Lock()
    pending = []
    for fw in frameworks:
        if fw in user_pythons:
            continue
        try:
            if not env_for(framework_spec(fw, device), b).ready:
                pending.append(fw)
        except ValueError:  # SpecError, PinError
            pass  # reported by its own job
    if pending:
        how = installer_name(echo) if b.NAME == "venv" else b.NAME  # uv found or bootstrapped once, up front
        echo(f"building {len(pending)} environment(s) {'in parallel ' if len(pending) > 1 else ''}with {how}: "
             f"{', '.join(pending)} (logs: {envs_dir()}/<name>.log)")

    def one(fw):
        t0 = time.perf_counter()
        try:
            if fw in user_pythons:
                python, probe = (user_pythons[fw] if isinstance(user_pythons[fw], tuple)
                                 else (user_pythons[fw], None))
                res = user_env(fw, python, device, echo=echo, probe=probe)
            else:
                res = ensure_framework(fw, device, backend, echo=echo, announce=False)
        except Exception as e:  # noqa: BLE001 - a failed build fails only this framework
            res = e
        with lock:
            if on_done:
                on_done(fw, res, time.perf_counter() - t0)
        return res

    if not frameworks:
        return {}
    with ThreadPoolExecutor(max_workers=max(1, min(len(frameworks), jobs or 6))) as ex:
        futures = {fw: ex.submit(one, fw) for fw in frameworks}
        return {fw: f.result() for fw, f in futures.items()}


# ------------------------------------------------------- the user's environments
# What a kernel needs besides the framework: the kernel itself, and numpy for
# frameval.nb (numpy + standard library, imported from this clone).
KERNEL_SIDE = ("ipykernel", "numpy")

PROBE = r"""
import importlib, importlib.util, json, os, sys, sysconfig
fw, mods = sys.argv[1], sys.argv[2:]
paths = sysconfig.get_paths()
managed = sys.prefix == getattr(sys, "base_prefix", sys.prefix) and os.path.exists(
    os.path.join(paths["stdlib"], "EXTERNALLY-MANAGED"))
info = {"python_version": "%d.%d.%d" % sys.version_info[:3], "prefix": sys.prefix, "purelib": paths["purelib"],
        "missing": [m for m in mods if importlib.util.find_spec(m) is None],
        "externally_managed": managed, "writable": os.access(paths["purelib"], os.W_OK) and not managed,
        "venv": sys.prefix != getattr(sys, "base_prefix", sys.prefix), "pip": importlib.util.find_spec("pip") is not None}
print("FRAMEVAL-PROBE " + json.dumps(info), flush=True)
try:
    m = importlib.import_module(fw)
    res = {"version": str(getattr(m, "__version__", "") or "unknown")}
except BaseException as e:
    msg = str(e).strip().splitlines()
    res = {"error": type(e).__name__ + (": " + msg[0] if msg else "")}
print("FRAMEVAL-IMPORT " + json.dumps(res), flush=True)
"""


class UserEnvError(ValueError):
    """A --python environment that cannot be used; the message is one line."""


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


def probe_user_python(framework: str, python: str, timeout: float = 600) -> dict:
    """Run the user's interpreter once: where it lives, whether `import
    <framework>` works there, which kernel-side packages are missing and whether
    frameval may install them. Raises UserEnvError with a one-line message."""
    label = f"--python {framework}={python}"
    exe = Path(python).expanduser()
    if not exe.exists():
        raise UserEnvError(f"{label}: no such file")
    if exe.is_dir() or not os.access(exe, os.X_OK):
        raise UserEnvError(f"{label}: not an executable file (give the interpreter, e.g. <env>/bin/python)")
    module = (BY_KEY[framework].import_name if framework in BY_KEY else framework)
    env = dict(os.environ, **FRAMEWORK_KERNEL_ENV.get(framework, {}), PYTHONWARNINGS="ignore")
    for var in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"):
        env.pop(var, None)
    try:
        p = subprocess.run([str(exe), "-c", PROBE, module, *KERNEL_SIDE], capture_output=True, text=True,
                           timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    except OSError as e:
        raise UserEnvError(f"{label}: cannot run it ({e.strerror or e})") from None
    except subprocess.TimeoutExpired:
        raise UserEnvError(f"{label}: `import {module}` did not finish in {timeout:g} s") from None
    found = {k: json.loads(v) for k, _, v in (ln.partition(" ") for ln in p.stdout.splitlines())
             if k in ("FRAMEVAL-PROBE", "FRAMEVAL-IMPORT")}
    if "FRAMEVAL-PROBE" not in found:
        last = (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
        raise UserEnvError(f"{label}: not a Python 3.8+ interpreter frameval can use ({last[:200]})")
    info = found["FRAMEVAL-PROBE"]
    if tuple(int(x) for x in info["python_version"].split(".")[:2]) < (3, 8):
        raise UserEnvError(f"{label}: Python {info['python_version']}; frameval's kernels need 3.8 or newer")
    if "FRAMEVAL-IMPORT" not in found:
        raise UserEnvError(f"{label}: `import {module}` crashed the interpreter (exit {p.returncode})")
    imp = found["FRAMEVAL-IMPORT"]
    if "error" in imp:
        raise UserEnvError(f"{label}: `import {module}` fails there: {imp['error'][:300]}")
    info.update(framework_version=imp["version"], python=str(exe.absolute()), framework=framework)
    missing = info["missing"]
    if missing and not info["writable"]:
        why = ("externally managed (PEP 668)" if info["externally_managed"] else "not writable")
        raise UserEnvError(
            f"{label}: {', '.join(missing)} missing there, and frameval may not install into {info['purelib']} "
            f"({why}): install {'them' if len(missing) > 1 else 'it'} yourself "
            f"(`{exe} -m pip install {' '.join(missing)}`) or give an environment frameval may write to")
    return info


def user_freeze(python) -> str:
    """`pip freeze --all` of an interpreter's environment (importlib.metadata where pip is missing)."""
    try:
        p = subprocess.run([str(python), "-m", "pip", "freeze", "--all", "--disable-pip-version-check"],
                           capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        if p.returncode == 0:
            return p.stdout
        p = subprocess.run([str(python), "-c", "import importlib.metadata as m; print('\\n'.join(sorted("
                            "'%s==%s' % (d.metadata['Name'], d.version) for d in m.distributions())))"],
                           capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        return p.stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def user_kernel_name(framework: str, python, device: str = "cpu") -> str:
    h = hashlib.sha256(str(Path(python).expanduser().absolute()).encode()).hexdigest()[:8]
    return f"{kernel_name(framework, device)}-user-{h}"


def user_env(framework: str, python, device: str = "cpu", echo=print, probe: dict | None = None) -> Env:
    """The user's own interpreter as a framework environment: checked, the
    missing kernel-side packages installed (only those), a kernel registered.
    Nothing else in it is touched."""
    info = dict(probe or probe_user_python(framework, str(python)))
    exe = Path(info.get("python") or Path(python).expanduser().absolute())
    spec = parse_spec(spec_path(framework, device))
    installed = []
    if info.get("missing"):
        # each with the spec's own constraint where it has one (numpy<2 for MindSpore ...)
        lines = [next((ln for ln in spec.pip if re.match(rf"{m}\s*($|[=<>!~\[;])", ln)), m) for m in info["missing"]]
        kname = user_kernel_name(framework, exe, device)
        log_path = envs_dir() / f"{kname}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "w") as log:
            try:
                how = install_packages(exe, lines, log, echo=echo)
            except EnvBuildError as e:
                why = _failure_line(log_path)
                raise EnvBuildError(f"{exe}: installing {', '.join(lines)} failed ({e}{': ' + why if why else ''}); "
                                    f"log: {log_path}") from None
        echo(f"installed {', '.join(lines)} into {info['prefix']} with {how} (needed by the kernel)")
        installed = lines
    info.update(installed=installed, freeze=user_freeze(exe))
    env = Env(spec=spec, prefix=Path(info["prefix"]), backend="user", python_path=exe,
              kernel=user_kernel_name(framework, exe, device), user=info)
    register_kernel(env, env.kernel, f"frameval · {framework_name(framework)} (your {exe})",
                    _kernel_extra(framework, device))
    return env


if __name__ == "__main__":  # python -m frameval.envs torch mxnet ...: build by hand
    for fw in sys.argv[1:] or FRAMEWORKS:
        e = ensure_framework(fw)
        print(fw, e.prefix)

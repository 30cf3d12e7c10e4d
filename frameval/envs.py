"""Framework environments: build them (conda or venv backend), cache them per
user keyed by their spec's hash, and register one Jupyter kernel each in a
project-scoped path.

Backends are registered by name, like papermill's engines: `venv` is always
there; `conda` is used when conda/mamba/micromamba is on PATH or asked for.
An environment directory is complete only when its `frameval-ready.json`
marker exists, so a build killed half-way is rebuilt, never half-used.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .envspec import EnvSpec, parse_spec
from .paths import envs_dir

REPO = Path(__file__).resolve().parent.parent
# FRAMEVAL_ENV_SPECS points at another folder of <fw>.yml specs (custom pins; the tests' broken env).
ENVS_SPEC_DIR = Path(os.environ.get("FRAMEVAL_ENV_SPECS") or REPO / "envs")
# Kernels are registered here (git-ignored), and JUPYTER_PATH points at it for
# papermill and JupyterLab: nothing is written into the user's own Jupyter dirs.
JUPYTER_DIR = REPO / ".frameval" / "jupyter"
MARKER = "frameval-ready.json"


class EnvBuildError(RuntimeError):
    pass


@dataclass
class Env:
    spec: EnvSpec
    prefix: Path
    backend: str

    @property
    def python(self) -> Path:
        if os.name == "nt":
            return self.prefix / ("python.exe" if self.backend == "conda" else "Scripts/python.exe")
        return self.prefix / "bin" / "python"

    @property
    def ready(self) -> bool:
        return (self.prefix / MARKER).is_file() and self.python.exists()

    def info(self) -> dict:
        try:
            return json.loads((self.prefix / MARKER).read_text())
        except (OSError, ValueError):
            return {}

    @property
    def freeze(self) -> str:
        """The locked package list, as recorded when the environment was built."""
        try:
            return (self.prefix / "frameval-freeze.txt").read_text()
        except OSError:
            return ""


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

    def create(self, spec: EnvSpec, prefix: Path, log) -> None:
        raise NotImplementedError

    def freeze(self, env: Env) -> str:
        out = subprocess.run([str(env.python), "-m", "pip", "freeze", "--all"],
                             capture_output=True, text=True)
        return out.stdout


def _run(cmd, log, env=None):
    log.write(f"$ {' '.join(map(str, cmd))}\n")
    log.flush()
    p = subprocess.run([str(c) for c in cmd], stdout=log, stderr=subprocess.STDOUT, env=env)
    if p.returncode != 0:
        raise EnvBuildError(f"command failed with exit {p.returncode}: {' '.join(map(str, cmd))}")


def _pip_install(python: Path, spec: EnvSpec, log) -> None:
    if not spec.pip:
        return
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(spec.pip) + "\n")
        req = f.name
    try:
        _run([python, "-m", "pip", "install", "--no-input", "-r", req], log)
    finally:
        os.unlink(req)


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
    for exe in _python_candidates(version):
        if not exe.exists():
            continue
        try:
            out = subprocess.run([str(exe), "-c", "import sys, venv; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode == 0 and out.stdout.strip() == version:
            return exe
    return None


class VenvBackend(Backend):
    NAME = "venv"

    def available(self) -> bool:
        return True

    def create(self, spec, prefix, log):
        if spec.conda:
            log.write(f"note: conda-only packages {list(spec.conda)} are ignored by the venv backend\n")
        base = find_python(spec.python)
        if base is None:
            raise EnvBuildError(
                f"{spec.path.name} needs Python {spec.python}, which is neither on PATH as "
                f"python{spec.python} nor under pyenv: install it (e.g. `pyenv install {spec.python}`) "
                f"or use --env-backend conda")
        _run([base, "-m", "venv", prefix], log)
        _pip_install(prefix / "bin" / "python", spec, log)


class CondaBackend(Backend):
    NAME = "conda"

    def exe(self):
        for name in ("mamba", "micromamba", "conda"):
            if shutil.which(name):
                return shutil.which(name)
        return None

    def available(self) -> bool:
        return self.exe() is not None

    def create(self, spec, prefix, log):
        exe = self.exe()
        if exe is None:
            raise EnvBuildError("--env-backend conda asked for, but none of mamba, micromamba, conda is on PATH")
        chans = [a for c in (spec.channels or ("conda-forge",)) for a in ("-c", c)]
        _run([exe, "create", "-y", "-p", prefix, *chans, f"python={spec.python}", "pip", *spec.conda], log)
        _pip_install(prefix / "bin" / "python", spec, log)

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


def ensure_env(spec: EnvSpec, backend: Backend, echo=print) -> Env:
    """Build the environment unless a complete one with the same key exists."""
    env = env_for(spec, backend)
    if env.ready:
        return env
    env.prefix.parent.mkdir(parents=True, exist_ok=True)
    lock = env.prefix.with_suffix(".lock")
    with _file_lock(lock):
        if env.ready:  # another process built it while we waited
            return env
        if env.prefix.exists():
            shutil.rmtree(env.prefix)  # a half-built leftover
        log_path = env.prefix.with_suffix(".log")
        echo(f"building environment {spec.name} ({backend.NAME}, Python {spec.python}) -> {env.prefix}")
        t0 = time.perf_counter()
        with open(log_path, "w") as log:
            try:
                backend.create(spec, env.prefix, log)
            except EnvBuildError as e:
                log.flush()
                raise EnvBuildError(f"{spec.name}: {e}; log: {log_path}\n{_tail(log_path)}") from None
        (env.prefix / "frameval-freeze.txt").write_text(backend.freeze(env))
        info = {"spec": spec.name, "key": spec.key, "backend": backend.NAME, "python": spec.python,
                "build_s": round(time.perf_counter() - t0, 1), "built": time.strftime("%Y-%m-%dT%H:%M:%S")}
        _atomic_write(env.prefix / MARKER, json.dumps(info, indent=1))
        echo(f"built {spec.name} in {info['build_s']} s")
    return env


def _tail(path: Path, n: int = 12) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


class _file_lock:
    """An exclusive flock, so two runners never build the same env at once."""

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self):
        import fcntl
        self.f = open(self.path, "w")
        fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        import fcntl
        fcntl.flock(self.f, fcntl.LOCK_UN)
        self.f.close()


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
        "env": {**kernel_env(), **(extra_env or {})},
        "metadata": {"frameval": {"env": str(env.prefix), "spec": env.spec.name, "key": env.spec.key}},
    }
    _atomic_write(kdir / "kernel.json", json.dumps(spec, indent=1))
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


DISPLAY = {"torch": "PyTorch", "tensorflow": "TensorFlow", "paddle": "PaddlePaddle",
           "mindspore": "MindSpore", "megengine": "MegEngine", "mxnet": "MXNet"}


def ensure_framework(framework: str, device: str = "cpu", backend: str = "auto", echo=print) -> Env:
    """Build (or reuse) one framework's environment and register its kernel."""
    spec = parse_spec(spec_path(framework, device))
    env = ensure_env(spec, choose_backend(backend), echo=echo)
    extra = dict(FRAMEWORK_KERNEL_ENV.get(framework, {}))
    if device == "gpu":
        extra.pop("MGE_DEFAULT_DEVICE", None)
    register_kernel(env, kernel_name(framework, device),
                    f"frameval · {DISPLAY.get(framework, framework)}" + (" (GPU)" if device == "gpu" else ""), extra)
    return env


if __name__ == "__main__":  # python -m frameval.envs torch mxnet ...: build by hand
    for fw in sys.argv[1:] or DISPLAY:
        e = ensure_framework(fw)
        print(fw, e.prefix)

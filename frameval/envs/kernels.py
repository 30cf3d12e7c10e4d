"""Jupyter kernels, one per environment, registered in a project-scoped path
(`.frameval/jupyter`, git-ignored): JUPYTER_PATH points at it for papermill
and JupyterLab (`jupyter_env`), so nothing is written into the user's own
Jupyter folders. Each kernel.json carries the variables a kernel needs, so a
notebook opened by hand behaves as under papermill.

Standard library only.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from .. import frameworks
from ..files import atomic_write
from ..paths import FRAMEWORK_KEY_ENV, REPO
from .model import Env
from .spec import has_gpu_spec, key

# FRAMEVAL_JUPYTER_DIR moves it (bench/pipeline.py's throwaway builds, tests).
JUPYTER_DIR = Path(os.environ.get("FRAMEVAL_JUPYTER_DIR") or REPO / ".frameval" / "jupyter")


def kernel_name(framework: str, device: str = "cpu") -> str:
    """The kernel of the framework's own spec (the name the notebooks carry): a
    -gpu one only where the framework has a GPU spec."""
    return f"frameval-{framework}" + ("-gpu" if device == "gpu" and has_gpu_spec(framework) else "")


def kernel_env() -> dict:
    """Environment variables every framework kernel gets, set in kernel.json so
    that a notebook opened by hand behaves as under papermill."""
    return {
        "PYTHONPATH": str(REPO),  # the light frameval.nb module, from this clone
        "PYTHONWARNINGS": "ignore::DeprecationWarning",
        "IPYTHONDIR": str(REPO / ".frameval" / "ipython"),
    }


# On a GPU (issue #48): NVML's device index is the framework's (CUDA's default order is
# fastest-first, NVML's is the PCI bus). Each framework's own log, device and GPU memory
# settings are in its record (frameworks/<fw>/__init__.py: kernel_env, cpu_kernel_env,
# gpu_kernel_env): no framework takes a GPU's memory up front.
GPU_KERNEL_ENV = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}


def framework_kernel_env(framework: str, device: str = "cpu") -> dict:
    """The framework's own kernel variables on `device` ({} for a name that is no framework)."""
    rec = frameworks.find(framework)
    return rec.kernel_vars(device) if rec else {}


def register_kernel(env: Env, name: str, display: str, extra_env: dict | None = None) -> Path:
    """Write kernel.json for `env` under `name` in JUPYTER_DIR; return its folder."""
    kdir = JUPYTER_DIR / "kernels" / name
    kdir.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [str(env.python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": display,
        "language": "python",
        "env": {**kernel_env(), **env.bytecode_vars,
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


def kernel_extra(framework: str, device: str, version: str = "") -> dict:
    """The kernel's own environment variables: the framework's log and device
    settings, and for a pinned version its key (hand runs go to runs/<key>/)."""
    extra = dict(GPU_KERNEL_ENV) if device == "gpu" else {}
    extra.update(framework_kernel_env(framework, device))
    if version:
        extra[FRAMEWORK_KEY_ENV] = key(framework, version)
    return extra

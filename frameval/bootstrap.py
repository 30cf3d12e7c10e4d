"""The runner's own environment: `python3 run_all.py` starts with nothing but
Python 3, builds the environment `environment.yml` describes (cached per
user like every framework env), and re-executes itself inside it."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from .envs import choose_backend, ensure_env, env_for, jupyter_env, register_kernel
from .envspec import parse_spec
from .plan import REPO

RUNNER_SPEC = REPO / "environment.yml"
RUNNER_KERNEL = "frameval-runner"


def runner_env(backend: str = "auto"):
    return env_for(parse_spec(RUNNER_SPEC), choose_backend(backend))


def inside_runner(backend: str = "auto") -> bool:
    try:
        return Path(sys.prefix).resolve() == runner_env(backend).prefix.resolve()
    except OSError:
        return False


def ensure_runner(argv, backend: str = "auto") -> None:
    """Return when running inside the runner env; otherwise build it and exec into it."""
    if inside_runner(backend) or os.environ.get("FRAMEVAL_NO_BOOTSTRAP"):
        return
    spec = parse_spec(RUNNER_SPEC)
    env = ensure_env(spec, choose_backend(backend), echo=lambda m: print(f"frameval: {m}", flush=True))
    sys.stdout.flush()
    os.execv(str(env.python), [str(env.python), str(REPO / "run_all.py"), *argv])


def register_runner_kernel():
    """The collector notebook runs in the runner env, under this kernel name."""
    env = runner_env()
    if not inside_runner():
        return
    register_kernel(env, RUNNER_KERNEL, "frameval · runner (collector)")


def run_tests(pytest_args) -> int:
    ensure_runner(["test", *pytest_args])
    os.chdir(REPO)
    env = jupyter_env()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    os.execve(sys.executable, [sys.executable, "-m", "pytest", *(pytest_args or ["tests"])], env)

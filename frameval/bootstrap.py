"""The runner's own environment: `python3 run_all.py` starts with nothing but
Python 3, builds the environment `environment.yml` describes (cached per
user like every framework env, with the same backend and installer: uv where
it can be had), and re-executes itself inside it. Standard library only."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from . import phases
from .bundle import runner_venv
from .envs import (Env, EnvBuildError, SpecError, choose_backend, ensure_env, ensure_frameworks, env_for, parse_spec,
                   register_kernel)
from .paths import REPO

RUNNER_SPEC = REPO / "environment.yml"
RUNNER_KERNEL = "frameval-runner"


def runner_env(backend: str = "auto"):
    """The runner's environment: the one environment.yml builds, or, `--offline` with a bundle trimmed
    for the user's interpreter, the venv on that interpreter (bundle/runner_venv.py)."""
    on = runner_venv.active()
    if on:
        return Env(spec=parse_spec(RUNNER_SPEC), prefix=runner_venv.prefix(on[0], on[2]), backend="venv")
    return env_for(parse_spec(RUNNER_SPEC), choose_backend(backend))


def inside_runner(backend: str = "auto") -> bool:
    try:
        return Path(sys.prefix).resolve() == runner_env(backend).prefix.resolve()
    except OSError:
        return False


def ensure_runner(argv, backend: str = "auto", script: Path | str | None = None, prebuild=()) -> None:
    """Return when running inside the runner env; otherwise build it and exec
    into it: `script` (default run_all.py) with `argv`. When the runner env
    must be built, the framework environments in `prebuild` ((framework,
    device) pairs) are built beside it, in parallel, rather than after it."""
    try:
        if inside_runner(backend) or os.environ.get("FRAMEVAL_NO_BOOTSTRAP"):
            return
        spec = parse_spec(RUNNER_SPEC)
    except SpecError as e:  # e.g. a layout the bare-Python reader refuses: one line, before anything builds
        print(f"frameval: error: {e}", file=sys.stderr)
        sys.exit(2)
    say = lambda m: print(f"frameval: {m}", flush=True)  # noqa: E731
    b = choose_backend(backend)
    started = time.time()
    try:
        env = _build_runner(spec, b, backend, say, prebuild)
    except EnvBuildError as e:
        lines = str(e).splitlines()
        print(f"frameval: error: the runner environment did not build: {lines[0]}", file=sys.stderr)
        print("\n".join(lines[1:]), file=sys.stderr)
        sys.exit(1)
    sys.stdout.flush()
    sys.stderr.flush()
    # The command's clock starts here, not after the exec: the environments built above are its first phase
    os.environ[phases.BOOTSTRAP_VAR] = phases.bootstrap_mark(started)
    os.execv(str(env.python), [str(env.python), str(script or REPO / "run_all.py"), *argv])


def _build_runner(spec, b, backend, say, prebuild):
    on = runner_venv.active()
    if on:  # a trimmed bundle: no framework environment to build beside it (each is the user's, --python)
        runner_venv.ensure(*on, echo=print)
        return runner_env(backend)
    if prebuild and not env_for(spec, b).ready:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=1) as ex:
            runner = ex.submit(ensure_env, spec, b, say)
            by_device: dict = {}
            for fw, device in prebuild:
                by_device.setdefault(device, []).append(fw)
            for device, fws in by_device.items():  # failures are reported again by the pipeline
                ensure_frameworks(fws, device, backend, echo=say, on_done=_prebuilt(say))
            return runner.result()
    return ensure_env(spec, b, echo=say)


def _prebuilt(say):
    def done(fw, env, secs):
        if isinstance(env, Exception):
            say(f"environment {fw} failed to build ({secs:.1f} s): {str(env).splitlines()[0]}")
        elif getattr(env, "built_now", False):
            say(f"environment {fw} built with {env.info().get('installer', 'pip')} in {secs:.1f} s")
    return done


def bootstrap_script(script: str | Path, argv=None, backend: str | None = None) -> None:
    """For bench/*.py: re-execute `script` inside the runner env (built first if
    needed), as run_all.py does. `--env-backend X` in argv chooses the backend."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if backend is None:
        backend = os.environ.get("FRAMEVAL_ENV_BACKEND", "auto")
        for i, a in enumerate(argv):
            if a == "--env-backend" and i + 1 < len(argv):
                backend = argv[i + 1]
            elif a.startswith("--env-backend="):
                backend = a.split("=", 1)[1]
        if backend not in ("auto", "conda", "venv"):
            backend = "auto"  # the script's own parser reports it
    ensure_runner(argv, backend=backend, script=Path(script).resolve())


def register_runner_kernel(backend: str = "auto"):
    """The collector notebook runs under this kernel name, in the interpreter running frameval: the
    runner env, or the user's own where there is none (FRAMEVAL_NO_BOOTSTRAP). Its kernel.json puts
    this clone on PYTHONPATH (kernels.kernel_env), so the collector imports frameval from any of them."""
    env = runner_env(backend)
    if not inside_runner(backend):
        env = Env(spec=env.spec, prefix=Path(sys.prefix), backend="user", python_path=Path(sys.executable))
    register_kernel(env, RUNNER_KERNEL, "frameval · runner (collector)")

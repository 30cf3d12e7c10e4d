"""Building environments: `ensure_env` builds one spec's environment into the
per-user cache unless a complete one with the same key is there (a lock per
environment, so parallel invocations build it once); `ensure_framework` does
so for a framework (or a pinned version of it) and registers its kernel;
`ensure_frameworks` builds every planned framework's in parallel, a user's
own interpreter (`--python`) standing in where given.

Standard library only: the runner's own environment is built with this module.
"""
from __future__ import annotations

import json
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from .. import files
from ..bundle import offline
from ..catalog import framework_name
from ..files import atomic_write
from ..locks import file_lock
from ..paths import envs_dir
from . import lockfile
from .backends import Backend, choose_backend, warm_imports, warm_key, warm_modules
from .install_facts import measure
from .installers import EnvBuildError, failure_line, installer_name
from .kernels import kernel_extra, kernel_name, register_kernel
from .model import MARKER, Env, env_for
from .spec import framework_spec, kernel_suffix, key, split_key
from .specfile import EnvSpec
from .user import user_env


def ensure_env(spec: EnvSpec, backend: Backend, echo=print, announce: bool = True) -> Env:
    """Build the environment unless a complete one with the same key exists.
    `announce`: print a line when the build starts and one when it ends (off
    when the caller prints its own progress line)."""
    say = echo if (announce and echo) else (lambda m: None)
    env = env_for(spec, backend)
    if env.ready:
        _backfill_install(env)
        _backfill_warm(env, backend, echo)
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
        locked = lockfile.record(spec)
        if locked.get("reason") in ("stale", lockfile.NOT_MADE) and echo:
            echo(f"{spec.name}: {locked['why']}")  # a lock that is there but cannot be used is said, always
        t0 = time.perf_counter()
        with open(log_path, "w") as log:
            try:
                installer = backend.create(spec, env.prefix, log, echo=echo) or "pip"
            except EnvBuildError as e:
                log.flush()
                why = failure_line(log_path)
                raise EnvBuildError(f"{spec.name}: {e}{': ' + why if why else ''}; log: {log_path}\n"
                                    f"{files.tail(log_path, 12)}") from None
            t1 = time.perf_counter()
            (env.prefix / "frameval-freeze.txt").write_text(backend.freeze(env))
            log.write(f"# freeze: {time.perf_counter() - t1:.1f} s; build: {time.perf_counter() - t0:.1f} s\n")
        info = {"spec": spec.name, "key": spec.key, "backend": backend.NAME, "installer": installer,
                "python": spec.python, "build_s": round(time.perf_counter() - t0, 1),
                "built": time.strftime("%Y-%m-%dT%H:%M:%S"), "lock": locked}
        if backend.NAME == "venv":  # the only backend that warms (backends.py)
            info["warm"] = warm_key(spec)
        if offline.active():  # --offline BUNDLE: the report says where the packages came from
            info["offline_bundle"] = str(offline.active())
        info["install"] = _install_facts(spec, env.prefix, log_path, info["build_s"], installer, at_build=True)
        atomic_write(env.prefix / MARKER, json.dumps(info, indent=1))
        say(f"built {spec.name} with {installer} in {info['build_s']} s")
        env.built_now = True
    return env


def _backfill_warm(env: Env, backend: Backend, echo) -> None:
    """An environment built (by the venv backend) with an older warm list: what
    the list has added since is imported (and called) once now, outside any
    run, and the marker keeps the new list's key. Already-compiled modules
    import in a few seconds."""
    info = env.info()
    if backend.NAME != "venv" or info.get("backend") != "venv" or env.provided_by_user:
        return
    want = warm_key(env.spec)
    if info.get("warm") == want:
        return
    with file_lock(env.prefix.with_suffix(".lock")):
        info = env.info()
        if info.get("warm") == want:  # another process warmed it while we waited
            return
        t0 = time.perf_counter()
        try:
            with open(env.prefix.with_suffix(".log"), "a") as log:
                log.write("# the warm list changed since the build: warmed again\n")
                warm_imports(env.python, warm_modules(env.spec), log)
            atomic_write(env.prefix / MARKER, json.dumps(dict(info, warm=want), indent=1))
        except OSError:
            return  # a read-only shared environment: its runs compile what is missing
        if echo:
            echo(f"environment {env.spec.name}: warmed again for its new warm list ({time.perf_counter() - t0:.1f} s)")


def _install_facts(spec, prefix, log_path, build_s, installer, at_build) -> dict | None:
    """install_facts.py's measurement; a failure to measure never fails a build."""
    try:
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
                    kernel_extra(framework, device, version))
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

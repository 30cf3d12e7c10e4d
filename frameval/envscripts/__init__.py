"""Scripts that run inside a framework's own environment, and how the runner
runs them (this module).

The scripts are framework-neutral code run in a framework's environment as (`python -m frameval.envscripts.behaviour FRAMEWORK`, `python -m frameval.envscripts.gemm
FRAMEWORK THREADS`): the behaviour cases, the common mistakes, the GEMM timer.
Each framework's own side of them (its adapter, its spelling of the mistakes,
its matrix product) is a part of its folder, frameval/frameworks/<fw>/, loaded
by name (`frameworks.part`).

The runner's side, here: a script is run with `python -m` in a framework's
own environment, one child process per setting, its one JSON line cached per
environment and machine.

The cache key holds what decides the figure: the environment (its freeze, as
the run cache key), the CPU (model, instruction sets, cores), the instruction-
set caps in effect, the script's own source, its arguments and the variables
the caller sets. So a rebuilt environment, another machine or a changed cap
measures again, and a second report on the same machine adds nothing.
Standard library only.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from pathlib import Path

from .. import cpu, files
from ..paths import REPO, user_cache_dir

CACHE = "envscripts"  # <user cache>/envscripts/<script>-<framework>-<key>.json


def cache_dir() -> Path:
    return user_cache_dir() / CACHE


def _key(env, module: str, args: list, env_vars: dict, also=()) -> str:
    digest = hashlib.sha256()
    for name in (module, *also):  # the script and the frameval modules it imports
        digest.update((REPO / (name.replace(".", "/") + ".py")).read_bytes())
    text = json.dumps({"env": env.key_text, "cpu": cpu.identity(), "caps": cpu.caps(), "args": args,
                       "vars": env_vars, "script": digest.hexdigest()}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cache_path(env, module: str, args: list, env_vars: dict | None = None, also=()) -> Path:
    """Where the script's line for these arguments is (or would be) cached."""
    env_vars = {k: str(v) for k, v in (env_vars or {}).items()}
    args = [str(a) for a in args]
    key = _key(env, module, args, env_vars, also)
    return cache_dir() / f"{module.rsplit('.', 1)[-1]}-{'-'.join(args)}-{key}.json"


def child_environ(env, env_vars: dict) -> dict:
    """A script's variables: this process's, .pyc writing on in frameval's own
    environments (Env.bytecode_vars), the caller's, and this clone on PYTHONPATH."""
    child = dict(os.environ, **env.bytecode_vars, **env_vars)
    child["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")]))
    return child


def run(env, module: str, args: list, env_vars: dict | None = None, timeout: float = 300,
        use_cache: bool = True, also=()) -> dict:
    """`python -m module *args` in `env` (an envs.Env) with `env_vars` added to
    this process's environment: its last stdout line as a dict, plus "cached"
    and "seconds". `also`: the frameval modules (dotted) the script imports,
    hashed into the key with it. A failure is a dict with "error" (one line),
    never raised, and is not cached."""
    env_vars = {k: str(v) for k, v in (env_vars or {}).items()}
    args = [str(a) for a in args]
    path = cache_path(env, module, args, env_vars, also)
    if use_cache:
        cached = files.read_json(path, None)
        if isinstance(cached, dict):
            return dict(cached, cached=True)
    child = child_environ(env, env_vars)
    work = cache_dir() / "work"  # what a framework writes in its working folder (MindSpore's dumps) stays here
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    try:
        p = subprocess.run([str(env.python), "-m", module, *args], env=child, capture_output=True, text=True,
                           timeout=timeout, cwd=str(work))
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": f"{type(e).__name__}: {e}".splitlines()[0]}
    secs = round(time.perf_counter() - t0, 2)
    try:
        out = json.loads(p.stdout.strip().splitlines()[-1])
        if p.returncode or not isinstance(out, dict):
            raise ValueError
    except (ValueError, IndexError):
        last = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
        return {"error": last[:300], "seconds": secs}
    out["seconds"] = secs
    if out.pop("cache", True):  # a script may refuse its line (a figure measured busy: measure it again next time)
        files.atomic_write_json(path, out)
    return dict(out, cached=False)

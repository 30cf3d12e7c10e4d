"""What a report was made from, in `<out>/provenance.json` (issue #41): the
frameval commit and whether the clone was dirty, the exact command line, each
environment's lock (its file and hash, or why it was built unlocked) and its
freeze, the plan (every run's parameters, seed, repeat and framework version),
the data files' hashes, and the machine (CPU model, flags, cores, the
instruction-set caps in effect, GPU and driver; the measured peak from
`<out>/machine.json` where the probe wrote one).

Written by the pipeline once the environments are ready, before any run, so
that a run cut short still has its record; the report's "Reproduce" section
reads it back (frameval/report/context.py). Standard library only.
"""
from __future__ import annotations

import hashlib
import os
import platform
import shlex
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from . import cpu, files
from .catalog import BY_KEY
from .paths import REPO

FORMAT = 1
WATCHED = ("frameval", "notebooks", "envs", "environment.yml", "environment.lock.txt", "templates", "run_all.py")


def _git(*args) -> str | None:
    try:
        p = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=30,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return p.stdout if p.returncode == 0 else None


def git_state() -> dict:
    """The clone's commit, and whether its tracked files (or new files beside them) differ from it."""
    head = (_git("rev-parse", "HEAD") or "").strip()
    status = _git("status", "--porcelain", "--untracked-files=normal", "--", *WATCHED)
    changed = [ln[3:] for ln in (status or "").splitlines() if ln.strip()]
    return {"commit": head or "unknown", "dirty": None if status is None else bool(changed), "changed": changed[:100]}


def command_line(argv) -> dict:
    argv = [str(a) for a in argv]
    return {"argv": argv, "line": "python3 run_all.py " + " ".join(shlex.quote(a) for a in argv), "cwd": os.getcwd(),
            "python": sys.version.split()[0]}


def framework_version(fw: str, freeze: str) -> str:
    """The framework's own version as its environment's freeze lists it ("" if
    it does not): its packages in the catalog's order, the framework's own
    first, so JAX's is jax's and never flax's, TensorFlow's tensorflow's and
    never keras's, whatever order the freeze lists them in."""
    norm = lambda n: n.strip().lower().replace("_", "-")  # noqa: E731
    found = {}
    for line in freeze.splitlines():
        name, sep, version = line.partition("==")
        if sep:
            found.setdefault(norm(name), version.strip())
    for name in (BY_KEY[fw].packages if fw in BY_KEY else (fw,)):
        if norm(name) in found:
            return found[norm(name)]
    return ""


def environment(fw_key: str, env) -> dict:
    """One environment: its spec, its lock as recorded at build time, its freeze."""
    info = env.info()
    freeze = env.freeze
    lock = ({"state": "user", "why": "your own environment (--python): recorded by its freeze"}
            if env.provided_by_user else info.get("lock") or {"state": "unlocked", "why": "built before locks"})
    try:
        spec_path = Path(env.spec.path).resolve().relative_to(REPO).as_posix()
    except ValueError:
        spec_path = str(env.spec.path)
    return {"spec": spec_path, "spec_key": env.spec.key, "python": env.spec.python, "backend": env.backend,
            "installer": info.get("installer", ""), "provided_by_user": env.provided_by_user,
            "python_executable": str(env.python), "python_version": info.get("python_version"), "lock": lock,
            "framework_version": framework_version(fw_key.partition("@")[0], freeze),
            "freeze_sha256": hashlib.sha256(freeze.encode()).hexdigest(), "freeze": freeze}


def plan(config) -> dict:
    """Every planned run with all of its parameters, as the notebooks were given them."""
    runs = [{"name": r.name, "framework": r.framework, "fw_key": r.fw_key, "pin": r.pin, "workload": r.workload,
             "mode": r.mode, "device": r.device, "repeat": r.repeat, "seed": r.params.get("seed"),
             "params": dict(r.params), "sweep": dict(r.sweep), "notebook": _rel(r.notebook), "profile": r.profile}
            for r in config.runs]
    return {"profile": config.profile, "device": config.device, "repeats": config.repeats,
            "overrides": list(config.param), "executor": config.executor, "timeout": config.timeout,
            "max_rss_mb": config.max_rss_mb,
            "env_backend": config.env_backend, "runs": runs}


def _rel(p) -> str:
    try:
        return Path(p).resolve().relative_to(REPO).as_posix()
    except ValueError:
        return str(p)


def data_files(paths: dict) -> dict:
    """{name: file, its SHA-256, and the arrays' own hash its .json records} of each data cache used."""
    out = {}
    for name, p in sorted((paths or {}).items()):
        p = Path(p)
        meta = files.read_json(p.with_suffix(".json"), {})
        out[name] = {"file": p.name, "sha256": files.sha256_file(p) if p.is_file() else None,
                     "content_sha256": meta.get("sha256"), "source": meta.get("source")}
    return out


def gpus() -> list:
    """[{name, driver}] of the NVIDIA GPUs nvidia-smi shows ([] where there is none)."""
    if not shutil.which("nvidia-smi"):
        return []
    try:
        p = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return []
    rows = [ln.split(",") for ln in p.stdout.splitlines() if ln.strip()] if p.returncode == 0 else []
    return [{"name": r[0].strip(), "driver": r[-1].strip()} for r in rows]


def machine(out) -> dict:
    """The machine the runs ran on, as far as a rerun needs to know whether it is the same one."""
    peak = files.read_json(Path(out) / "machine.json", None)  # probe.MACHINE, written before the runs
    return {"hostname": socket.gethostname(), "os": f"{platform.system()} {platform.release()}",
            "cpu": cpu.identity(), "flags": cpu.flags(), "caps": cpu.caps(),
            "caps_described": {k: cpu.describe(k) for k in cpu.caps()}, "gpus": gpus(), "peak": peak}


def build(out, config, env_by_fw: dict, data_paths: dict, runner=None) -> dict:
    """The provenance record of the output folder `out` for this invocation."""
    from . import __version__
    environments = {fw: environment(fw, e) for fw, e in env_by_fw.items() if hasattr(e, "freeze")}
    if runner is not None and runner.ready:
        environments["runner"] = environment("runner", runner)
    return {"format": FORMAT, "frameval": dict(git_state(), version=__version__),
            "command": command_line(config.argv), "environments": environments,
            "plan": plan(config), "data": data_files(data_paths), "machine": machine(out)}


def write(out, config, env_by_fw: dict, data_paths: dict, runner=None) -> dict:
    record = build(out, config, env_by_fw, data_paths, runner)
    files.atomic_write_json(Path(out) / files.PROVENANCE, record, indent=1)
    return record


def read(folder) -> dict | None:
    """`<folder>/provenance.json`, or None."""
    data = files.read_json(Path(folder) / files.PROVENANCE, None)
    return data if isinstance(data, dict) else None

"""One Run through papermill, in its framework's kernel, with every failure
captured into result.json; and the cache key that decides whether a finished
run can be reused.

papermill runs in a child process (its own session), so a run over its time
limit, a dead kernel or Ctrl-C kills the whole process group, kernel
included, and the runner goes on to the next run.
"""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import notebook as nbfile
from . import results
from .envs import jupyter_env
from .paths import data_cache_dir
from .plan import REPO, Run

NB_MODULE = REPO / "frameval" / "nb"


# ------------------------------------------------------------------ cache key
def _sha(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()[:16]


def data_checksum(run: Run) -> str:
    name = {"lstm": f"series-{run.params.get('series', 'co2')}"}.get(run.workload,
                                                                    f"mnist-{run.params.get('dataset', 'embedded')}")
    try:
        return json.loads((data_cache_dir() / f"{name}.json").read_text())["sha256"][:16]
    except (OSError, ValueError, KeyError):
        return "missing"


def key_parts(run: Run, freeze: str) -> dict:
    """Everything that decides a run's result, each part hashed on its own so
    that --dry-run can say which part changed."""
    nb = nbfile.read(run.notebook)
    support = NB_MODULE.parent / "fw" / f"{run.framework}_support.py"
    nb_module = b"".join(p.read_bytes() for p in sorted(NB_MODULE.glob("*.py")) + [support] if p.exists())
    params = {k: v for k, v in run.params.items() if k != "out_dir"}
    return {
        "code": _sha(nbfile.code_hash_text(nb)),
        "params": _sha(json.dumps(params, sort_keys=True, default=str)),
        "environment": _sha(freeze or "unbuilt"),
        "frameval": _sha(nb_module),
        "data": data_checksum(run),
        "run": f"{run.device}/{run.mode}/{run.profile}/r{run.repeat}",
    }


def cache_key(parts: dict) -> str:
    return _sha(json.dumps(parts, sort_keys=True))


@dataclass
class Decision:
    execute: bool
    why: str


def decide(run: Run, d: Path, parts: dict, force: bool) -> Decision:
    if force:
        return Decision(True, "forced")
    res = d / results.RESULT
    if not res.exists():
        return Decision(True, "no result yet")
    old = results.read_result(res)
    if old.get("status") != "ok":
        return Decision(True, f"last run {old.get('status', 'unknown')}")
    old_parts = old.get("cache_parts") or {}
    changed = [k for k in parts if old_parts.get(k) != parts[k]]
    if changed:
        return Decision(True, "changed: " + ", ".join(changed))
    return Decision(False, "unchanged")


# ------------------------------------------------------------------ execution
@dataclass
class Outcome:
    status: str
    seconds: float
    error: str = ""


class Interrupted(Exception):
    pass


_current: dict = {}


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def terminate_current():
    """Called from the runner's signal handler: kill the running notebook."""
    proc = _current.get("proc")
    if proc is not None and proc.poll() is None:
        _kill_group(proc)


def execute(run: Run, d: Path, kernel: str, parts: dict, timeout: float | None = None,
            start_timeout: int = 120) -> Outcome:
    """Run the notebook into `d` (output.ipynb, result.json). Never raises for a
    notebook failure: it is recorded in result.json."""
    d.mkdir(parents=True, exist_ok=True)
    for stale in (results.RESULT, "result.partial.json"):
        try:
            (d / stale).unlink()
        except OSError:
            pass
    params = dict(run.params, out_dir=str(d))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(params, f)
        pfile = f.name
    cmd = [sys.executable, "-m", "papermill", str(run.notebook), str(d / "output.ipynb"),
           "-f", pfile, "-k", kernel, "--cwd", str(d), "--start-timeout", str(start_timeout),
           "--no-progress-bar", "--log-level", "WARNING"]
    t0 = time.perf_counter()
    log = open(d / "papermill.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=jupyter_env(), start_new_session=True)
    _current["proc"] = proc
    err_type = err_msg = None
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.wait()
        err_type, err_msg = "Timeout", f"run exceeded --timeout {timeout:g} s and was killed"
    finally:
        _current.pop("proc", None)
        log.close()
        os.unlink(pfile)
    secs = time.perf_counter() - t0
    if _current.pop("interrupted", False):
        err_type, err_msg = "Interrupted", "the runner was interrupted (SIGINT/SIGTERM) during this run"
    res = results.read_result(d / results.RESULT) if (d / results.RESULT).exists() else None
    if err_type is None and proc.returncode == 0 and res and res.get("status") in ("ok", "failed"):
        res.update(cache_parts=parts, cache_key=cache_key(parts), wall_s=round(secs, 2),
                   executed=time.strftime("%Y-%m-%dT%H:%M:%S"))
        res.pop("reused", None)
        results.write_result(d, res)
        return Outcome(res["status"], secs, "" if res["status"] == "ok" else res.get("error", {}).get("message", ""))
    if err_type is None:
        err_type, err_msg, tb = notebook_error(d / "output.ipynb", d / "papermill.log", proc.returncode)
    else:
        tb = _tail(d / "papermill.log")
    rec = results.failure_record(run, err_type, err_msg, tb, results.load_partial(d))
    rec.update(cache_parts=parts, cache_key=cache_key(parts), wall_s=round(secs, 2),
               executed=time.strftime("%Y-%m-%dT%H:%M:%S"))
    results.write_result(d, rec)
    if err_type == "Interrupted":
        raise Interrupted()
    return Outcome("failed", secs, f"{err_type}: {err_msg}")


def mark_interrupted():
    _current["interrupted"] = True
    terminate_current()


def _tail(path: Path, n: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


def notebook_error(output_nb: Path, log: Path, returncode) -> tuple:
    """The failing cell's error (type, message, traceback) from the executed
    notebook, else what papermill logged (a dead kernel, a start failure)."""
    try:
        nb = json.loads(output_nb.read_text())
        for c in nb.get("cells", []):
            for o in c.get("outputs", []):
                if o.get("output_type") == "error" and o.get("ename") != "PapermillExecutionError":
                    tb = "\n".join(o.get("traceback", []))
                    return o.get("ename", "Error"), o.get("evalue", ""), _strip_ansi(tb)
    except (OSError, ValueError):
        pass
    text = _tail(log, 40)
    for marker, kind in (("DeadKernelError", "DeadKernelError"), ("Kernel died", "DeadKernelError"),
                         ("RuntimeError: Kernel didn't respond", "KernelStartTimeout"),
                         ("No such kernel", "NoSuchKernel")):
        if marker in text:
            line = next((ln for ln in text.splitlines()[::-1] if marker in ln), marker)
            return kind, line.strip()[-500:], text
    return "NotebookFailed", f"papermill exited with {returncode}", text


def _strip_ansi(s: str) -> str:
    import re
    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", s)

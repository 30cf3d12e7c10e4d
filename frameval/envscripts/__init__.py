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
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from .. import cpu, files, idle, lifeline
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
    return run_staged([dict(env=env, module=module, args=args, env_vars=env_vars, timeout=timeout,
                            use_cache=use_cache, also=also)], batch=1)[0]


def run_staged(calls: list, batch: int) -> list:
    """Several `run`s (each a dict of its arguments) whose start-ups may share the
    cores but whose work must not: `batch` children start together (Python, the
    framework's import, its set-up: 1.2-4.4 s each on 2 cores), each script waits
    at idle.wait_for_turn, and then they work one after the other, alone. With
    batch=1 it is one child at a time, unstaged. -> their dicts, in order."""
    out, todo = [None] * len(calls), []
    for i, c in enumerate(calls):
        c = dict(c, env_vars={k: str(v) for k, v in (c.get("env_vars") or {}).items()},
                 args=[str(a) for a in c["args"]])
        c["path"] = cache_path(c["env"], c["module"], c["args"], c["env_vars"], c.get("also", ()))
        cached = files.read_json(c["path"], None) if c.get("use_cache", True) else None
        if isinstance(cached, dict):
            out[i] = dict(cached, cached=True)
        else:
            todo.append((i, c))
    for k in range(0, len(todo), max(1, batch)):
        group = []
        try:
            for i, c in todo[k:k + batch]:
                group.append((i, _Child(c, staged=batch > 1)))
            for _, child in group:
                child.wait_ready()
            for i, child in group:
                out[i] = child.finish()
        except BaseException:  # Ctrl-C, or a failure here: no child is left stopped, or waiting
            for _, child in group:
                child.end()
            raise
    return out


class _Child:
    """One script's process: started, waiting for its turn (staged), then let go and read."""

    def __init__(self, call: dict, staged: bool):
        self.call, self.timeout, self.staged = call, call.get("timeout", 300), staged
        env_vars = dict(call["env_vars"], **({idle.STAGED_VAR: "1"} if staged else {}))
        work = cache_dir() / "work"  # what a framework writes in its working folder (MindSpore's dumps) stays here
        work.mkdir(parents=True, exist_ok=True)
        self.err = tempfile.TemporaryFile("w+")  # a file, not a pipe: a chatty import cannot fill it and stall
        self.lines, self.ready, self.error = [], threading.Event(), None
        self.t0 = time.perf_counter()
        try:
            self.proc = subprocess.Popen([str(call["env"].python), "-m", call["module"], *call["args"]],
                                         env=child_environ(call["env"], env_vars), stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=self.err, text=True, cwd=str(work),
                                         preexec_fn=lifeline.preexec())  # a stopped child never outlives the runner
        except OSError as e:
            self.proc, self.error = None, f"{type(e).__name__}: {e}".splitlines()[0]
            self.ready.set()
            return
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            if line.strip() == idle.READY:
                self._pause(True)
                self.ready.set()
            else:
                self.lines.append(line)
        self.ready.set()  # ended (or failed) without waiting

    def _pause(self, stop: bool) -> None:
        """Stop a child that waits for its turn, and let it go on at its turn: blocked
        on its stdin its main thread takes no CPU, but a framework's own threads may
        (MegEngine's took 26% of a core in a waiting process, and the JAX product
        timed beside it read 142 GFLOP/s where alone it reads 184). Where the OS
        has no SIGSTOP (Windows), the waiting child is left running."""
        sig = getattr(signal, "SIGSTOP" if stop else "SIGCONT", None)
        if sig is None or self.proc is None:
            return
        try:
            os.kill(self.proc.pid, sig)
        except OSError:  # it has ended: its exit says how
            pass

    def wait_ready(self):
        if not self.ready.wait(self.timeout) and self.error is None:
            self.error = f"TimeoutExpired: no start within {self.timeout:.0f} s"

    def end(self) -> None:
        """Kill it where it has not ended (a stopped child cannot die until it goes on)."""
        if self.proc is not None and self.proc.poll() is None:
            self._pause(False)
            self.proc.kill()
            self.proc.wait()
        if not self.err.closed:
            self.err.close()

    def finish(self) -> dict:
        """Let it work (a line on its stdin), wait for it; its dict, cached unless it refuses."""
        if self.proc is None:
            self.end()
            return {"error": self.error}
        t0 = time.perf_counter()
        self._pause(False)  # stopped while waiting (and a timed-out one must be able to die)
        try:
            if self.error is None:
                self.proc.stdin.write("go\n")
            self.proc.stdin.close()
        except (BrokenPipeError, OSError):  # it has ended already: its exit says how
            pass
        try:
            self.proc.wait(None if self.error else self.timeout)
        except subprocess.TimeoutExpired:
            self.error = f"TimeoutExpired: still working after {self.timeout:.0f} s"
        if self.error:
            self.end()
            return {"error": self.error}
        self.reader.join()
        secs = round(time.perf_counter() - (t0 if self.staged else self.t0), 2)  # staged: its turn alone
        return _parsed(self.lines, self._stderr(), self.proc.returncode, secs, self.call["path"])

    def _stderr(self) -> str:
        self.err.seek(0)
        text = self.err.read()
        self.err.close()
        return text


def _parsed(lines: list, stderr: str, code: int, secs: float, path: Path) -> dict:
    try:
        out = json.loads("".join(lines).strip().splitlines()[-1])
        if code or not isinstance(out, dict):
            raise ValueError
    except (ValueError, IndexError):
        last = (stderr.strip().splitlines() or [f"exit status {code}"])[-1]
        return {"error": last[:300], "seconds": secs}
    out["seconds"] = secs
    if out.pop("cache", True):  # a script may refuse its line (a figure measured busy: measure it again next time)
        files.atomic_write_json(path, out)
    return dict(out, cached=False)

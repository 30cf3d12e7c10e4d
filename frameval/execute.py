"""One Run through papermill, in its framework's kernel, with every failure
captured into result.json; and the cache key that decides whether a finished
run can be reused.

papermill is imported once per invocation, in the runner; each run calls its
Python API in a forked child that starts its own session (os.setsid). The
child reports the kernel's pid (jupyter_client starts kernels in a session of
their own), so a run over its time limit or Ctrl-C kills both process groups,
kernel included (through the `Cancel` the executor hands in), and the runner
goes on to the next run. The kernel is shut
down immediately once the notebook is done (nbclient's
shutdown_kernel="immediate"): result.json is written by then. Where there is
no fork (Windows), papermill's command line runs in a subprocess instead.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from . import arithmetic, cpu, faults, files, lifeline, memguard, sources, workloads
from .result import load as load_result, store
from . import notebook as nbfile
from .envs import jupyter_env
from .envs.kernels import kernel_extra
from .paths import REPO, data_cache_dir
from .plan import Run



# ------------------------------------------------------------------ cache key
def _sha(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()[:16]


def data_checksum(run: Run) -> str:
    name = workloads.get(run.workload).data_name(run.params)
    try:
        return files.read_json(data_cache_dir() / f"{name}.json")["sha256"][:16]
    except (OSError, ValueError, KeyError):
        return "missing"


def key_parts(run: Run, freeze: str) -> dict:
    """Everything that decides a run's result, each part hashed on its own so
    that --dry-run can say which part changed."""
    nb = nbfile.read(run.notebook)
    params = {k: v for k, v in run.params.items() if k != "out_dir"}
    return {
        "code": _sha(nbfile.code_hash_text(nb)),
        "params": _sha(json.dumps(params, sort_keys=True, default=str)),
        "environment": _sha(freeze or "unbuilt"),
        "frameval": sources.digest(run.framework, workload=run.workload),  # every frameval file the kernel runs (frameval/sources.py)
        "data": data_checksum(run),
        "run": f"{run.device}/{run.mode}/{run.profile}/r{run.repeat}",
        # a figure measured on another CPU, or under other instruction-set caps, is not this machine's
        "cpu": _sha(json.dumps(cpu.identity(), sort_keys=True)),
        "isa caps": _sha(json.dumps(cpu.caps(), sort_keys=True)),
        # TF32 overrides, default matmul precision, XLA and oneDNN flags, as the kernel will have them
        "arithmetic": _sha(json.dumps(arithmetic.env_part(kernel_environ(run)), sort_keys=True)),
    }


def kernel_environ(run: Run) -> dict:
    """The variables the run's kernel starts with: this process's, plus the kernel's own."""
    return {**os.environ, **kernel_extra(run.framework, run.device)}


def cache_key(parts: dict) -> str:
    return _sha(json.dumps(parts, sort_keys=True))


@dataclass
class Decision:
    execute: bool
    why: str


def decide(run: Run, d: Path, parts: dict, force: bool) -> Decision:
    if force:
        return Decision(True, "forced")
    res = d / store.RESULT
    if not res.exists():
        return Decision(True, "no result yet")
    old = load_result(res)
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


class Cancel:
    """Ctrl-C for the runs: an event, set once by the runner's signal handler,
    and the process running now. The pipeline makes one and hands it to the
    executor (ExecContext.cancel), which hands it to each run.

    A process registered after the event is set is killed on registration, so
    a signal that lands between a run's start and its registration is never
    missed. There is no lock: the handler runs in the main thread between two
    bytecodes, so a lock held there would deadlock it; the order (store the
    process, then read the event; set the event, then read the process)
    leaves no interleaving in which both sides miss each other."""

    def __init__(self):
        self.event = threading.Event()
        self.proc = None
        self.signal = "SIGINT"  # the signal's name, recorded in the interrupted run

    def is_set(self) -> bool:
        return self.event.is_set()

    def cancel(self, name: str = "SIGINT") -> None:
        """From the signal handler: stop starting runs, kill the one running."""
        if not self.event.is_set():
            self.signal = name
        self.event.set()
        proc = self.proc
        if proc is not None:  # reaped already, kill() still ends its kernel
            proc.kill()

    @contextlib.contextmanager
    def running(self, proc, kill_if_cancelled: bool = True):
        """`proc` is the process a Ctrl-C kills while the block runs. With
        `kill_if_cancelled`, one cancelled already is killed at once; the
        collector, started after Ctrl-C to write the report, is not (a second
        Ctrl-C kills it)."""
        self.proc = proc
        try:
            if kill_if_cancelled and self.event.is_set():
                proc.kill()
            yield proc
        finally:
            self.proc = None


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# ------------------------------------------------------------- papermill runs
_pm: dict = {}


def load_papermill():
    """papermill and what each run needs from it (nbformat's schema validator,
    nbclient, jupyter_client's kernel provisioners), imported and warmed once in
    the runner; every forked run shares them."""
    if "papermill" not in _pm:
        # nbformat imports jsonschema, which imports every format checker's library
        # at its own import: rfc3987_syntax builds some 35 Lark parsers then, 1.4 s of
        # every command here (jsonschema#1428), for the "iri" formats that no notebook
        # schema uses. Left out, jsonschema leaves those two formats unchecked.
        sys.modules.setdefault("rfc3987_syntax", None)
        import nbformat
        import papermill
        from jupyter_client.manager import KernelManager  # noqa: F401
        from jupyter_client.provisioning import KernelProvisionerFactory
        from jupyter_client.provisioning import local_provisioner
        nbformat.validator.get_validator(version=4, version_minor=nbformat.current_nbformat_minor)
        KernelProvisionerFactory.instance()  # scans entry points once
        _pm.update(papermill=papermill, local_provisioner=local_provisioner)
    return _pm["papermill"]


class PapermillRun:
    """papermill's execute_notebook in a forked child with its own session."""

    def __init__(self, input_path, output_path, params: dict, kernel: str, cwd, log_path,
                 start_timeout: int = 120, env: dict | None = None):
        pm = load_papermill()
        rfd, wfd = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 1
            try:
                lifeline.die_with_parent(parent)  # a killed runner leaves no papermill behind (#72)
                os.close(rfd)
                code = _child(pm, wfd, input_path, output_path, params, kernel, cwd, log_path, start_timeout, env)
            finally:
                os._exit(code)
        os.close(wfd)
        self.pid, self._rfd, self.returncode, self.kernel_pids = pid, rfd, None, []
        try:
            self._pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self._pidfd = None

    def _read_kernel_pids(self):
        while self._rfd is not None:
            r, _, _ = select.select([self._rfd], [], [], 0)
            if not r:
                return
            data = os.read(self._rfd, 4096)
            if not data:
                os.close(self._rfd)
                self._rfd = None
                return
            self.kernel_pids += [int(x) for x in data.split()]

    def poll(self):
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: success is judged by result.json
                pid, status = self.pid, 0
            if pid:
                self.returncode = (-os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))
                self._read_kernel_pids()
                for fd in (self._pidfd, self._rfd):
                    if fd is not None:
                        os.close(fd)
                self._pidfd = self._rfd = None
        return self.returncode

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired("papermill", timeout)
            if self._pidfd is not None:
                select.select([self._pidfd], [], [], left)
            else:
                time.sleep(0.02 if left is None else min(0.02, left))
        return self.returncode

    def kill(self):
        """SIGKILL the child's process group and every kernel's (the whole tree)."""
        self._read_kernel_pids()
        if self.returncode is None:  # the child itself too: just forked, it may not lead its group yet
            try:
                os.kill(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for pgid in ([self.pid] if self.returncode is None else []) + self.kernel_pids:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


KERNEL_SIGNAL = "frameval: the kernel ended by signal"  # the papermill child's line in its log
def _child(pm, wfd, input_path, output_path, params, kernel, cwd, log_path, start_timeout, env) -> int:
    os.setsid()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    fd = os.open(str(log_path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.environ.update(env or jupyter_env())
    import logging
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
    logging.getLogger("papermill").addHandler(handler)
    logging.getLogger("papermill").setLevel(logging.WARNING)
    lp = _pm["local_provisioner"]
    launch, kernels = lp.launch_kernel, []

    def report_kernel(*a, **k):  # the kernel's own session: tell the runner its pid
        k["preexec_fn"] = lifeline.preexec()  # nor a kernel: it dies with this child (#72)
        proc = launch(*a, **k)
        kernels.append(proc)
        try:
            os.write(wfd, f"{proc.pid}\n".encode())
        except OSError:
            pass
        return proc
    lp.launch_kernel = report_kernel
    if os.environ.get("FRAMEVAL_KERNEL_IDLE_WAIT") != "1":  # jupyter_client's own wait (bench/: A/B)
        from . import kernel_ready
        kernel_ready.install()
    try:
        pm.execute_notebook(str(input_path), str(output_path), parameters=params, kernel_name=kernel,
                            cwd=str(cwd), start_timeout=start_timeout, progress_bar=False,
                            shutdown_kernel="immediate")
        return 0
    except BaseException:  # noqa: BLE001 - what papermill's CLI prints, for notebook_error
        traceback.print_exc()
        for proc in kernels:  # a kernel that died by a signal says which, never a bare "dead kernel" (#72)
            code = proc.poll()
            if code is not None and code < 0:
                print(f"{KERNEL_SIGNAL} {signal.Signals(-code).name}", file=sys.stderr)
        return 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


class _CliRun:
    """The fallback where there is no fork: papermill's command line in a new session."""

    def __init__(self, input_path, output_path, params, kernel, cwd, log_path, start_timeout=120, env=None):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(params, f)
            self._pfile = f.name
        cmd = [sys.executable, "-m", "papermill", str(input_path), str(output_path), "-f", self._pfile,
               "-k", kernel, "--cwd", str(cwd), "--start-timeout", str(start_timeout),
               "--no-progress-bar", "--log-level", "WARNING"]
        self._log = open(log_path, "w")
        self._proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env or jupyter_env(),
                                      start_new_session=True)
        self.pid = self._proc.pid

    @property
    def returncode(self):
        return self._proc.returncode

    def poll(self):
        return self._proc.poll()

    def wait(self, timeout=None):
        try:
            return self._proc.wait(timeout=timeout)
        finally:
            if self._proc.returncode is not None and not self._log.closed:
                self._log.close()
                os.unlink(self._pfile)

    def kill(self):
        _kill_group(self._proc)


def start_papermill(input_path, output_path, params: dict, kernel: str, cwd, log_path,
                    start_timeout: int = 120, env: dict | None = None):
    """Start one notebook run; returns an object with poll(), wait(timeout), kill()."""
    cls = PapermillRun if hasattr(os, "fork") and not os.environ.get("FRAMEVAL_PAPERMILL_CLI") else _CliRun
    return cls(input_path, output_path, params, kernel, cwd, log_path, start_timeout, env)


def execute(run: Run, d: Path, kernel: str, parts: dict, timeout: float | None = None,
            start_timeout: int = 120, env_fields: dict | None = None, extra: dict | None = None,
            cancel: Cancel | None = None, max_rss_mb: float | None = None) -> Outcome:
    """Run the notebook into `d` (output.ipynb, result.json). Never raises for a
    notebook failure: the results store records it. `env_fields` are added to
    result["environment"] (where the environment came from), `extra` to the
    result itself (the Slurm node, under "slurm"). Raises Interrupted when
    `cancel` stopped the run (or it was set before; the folder is then left as
    it was); a run that finished before the kill keeps its result."""
    cancel = cancel or Cancel()  # a Slurm node: Slurm's own signals end the job
    if cancel.is_set():
        raise Interrupted()
    store.clear_for_run(d)
    params = dict(run.params, out_dir=str(d))
    load_papermill()  # once per invocation, outside the run's clock
    t0, started = time.perf_counter(), time.time()
    proc = start_papermill(run.notebook, d / files.OUTPUT_NB, params, kernel, d, d / files.PAPERMILL_LOG, start_timeout)
    watch = memguard.Watch(max_rss_mb)
    error = _wait(proc, timeout, d, cancel, watch)
    secs = time.perf_counter() - t0
    res = store.finished_record(d) if error is None and proc.returncode == 0 else None
    if res is None and error is None:
        error = notebook_error(d / files.OUTPUT_NB, d / files.PAPERMILL_LOG, proc.returncode)
        if error[0] == "KernelKilled" and watch.last_mb is not None:  # the OOM killer's SIGKILL, typically
            error = (error[0], f"{error[1]}; its last resident size (with the runner's papermill child) was "
                               f"{watch.last_mb:,.0f} MB, its peak {watch.peak_mb:,.0f} MB", error[2])
    runner_fields = dict(extra or {}, cache_parts=parts, cache_key=cache_key(parts), wall_s=round(secs, 2),
                         executed=time.strftime("%Y-%m-%dT%H:%M:%S"), memory_guard=watch.record(),
                         runner_clock={"start": started, "end": started + secs})  # frameval/phases.py
    res = store.complete(d, run, res, error, runner_fields, env_fields)
    if error is None and res["status"] == "ok" and run.params.get("resume_check"):
        _resume(run, d, kernel, timeout, start_timeout, cancel, max_rss_mb)
    if error is None:
        return Outcome(res["status"], secs, "" if res["status"] == "ok" else res.get("error", {}).get("message", ""))
    if error[0] == "Interrupted":
        raise Interrupted()
    return Outcome(res.get("status") or "failed", secs, f"{error[0]}: {error[1]}")


def _resume(run: Run, d: Path, kernel: str, timeout, start_timeout, cancel: Cancel, max_rss_mb) -> None:
    """-p resume_check's second kernel (frameval/nb/resume.py): the same notebook, resumed from
    the checkpoint the run saved after epoch k, trains the remaining epochs and compares them
    with the run's. Its `resume` record (or why it failed) becomes the run's; the run's other
    results stay whatever happens here."""
    first = load_result(d / store.RESULT).get("resume") or {}
    if first.get("status") != "checkpointed":
        return  # no checkpoint was taken: the run's own `resume` record says why
    ckpt, out = d / files.WORK / files.CHECKPOINT, d / files.WORK / files.RESUMED
    if faults.injected(run.framework, run.workload, "resume-") == "resume-missing":  # the fault tests' missing checkpoint (tests/test_resume.py)
        shutil.rmtree(ckpt, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    params = dict(run.params, out_dir=str(out), resume_check=False, resume_from=str(ckpt),
                  **({"serve": False} if "serve" in run.params else {}))
    t0 = time.perf_counter()
    # the first kernel's compile cache (torch inductor's): the second kernel's graphs are the same,
    # and it is not timed; cold, torch's LeNet and LSTM recompiled for 31 and 53 s on 2 cores
    env = dict(jupyter_env(), TORCHINDUCTOR_CACHE_DIR=str(d / files.WORK / files.INDUCTOR_CACHE))
    proc = start_papermill(run.notebook, out / files.OUTPUT_NB, params, kernel, out, out / files.PAPERMILL_LOG,
                           start_timeout, env)
    error = _wait(proc, timeout, out, cancel, memguard.Watch(max_rss_mb))
    second = (store.finished_record(out) or {}) if error is None and proc.returncode == 0 else {}
    done = (second.get("resume") or {}).get("status") in ("exact", "within", "diverged")
    if not done:
        error = error or notebook_error(out / files.OUTPUT_NB, out / files.PAPERMILL_LOG, proc.returncode)
    record = dict(first, **(second["resume"] if done else
                            {"status": "failed", "stage": "resume", "error": f"{error[0]}: {error[1]}"[:600]}),
                  kernel_s=round(time.perf_counter() - t0, 2))
    store.set_resume(d, record)
    if error is not None and error[0] == "Interrupted":
        raise Interrupted()


def _wait(proc, timeout, d: Path, cancel: Cancel, watch: memguard.Watch | None = None) -> tuple | None:
    """Wait for the run; (type, message, log tail) if it was killed (time limit, Ctrl-C, the
    memory guard), else None. A run that ended by itself with its record written before
    Ctrl-C killed it finished: its result stands (the executor stops before the next run)."""
    error = None
    watch = watch or memguard.Watch(None)
    deadline = None if timeout is None else time.monotonic() + timeout
    with cancel.running(proc):
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            try:
                proc.wait(timeout=memguard.SAMPLE_S if left is None else max(0.0, min(memguard.SAMPLE_S, left)))
                break
            except subprocess.TimeoutExpired:
                pass
            if left is not None and left <= memguard.SAMPLE_S:
                proc.kill()
                proc.wait()
                error = "Timeout", f"run exceeded --timeout {timeout:g} s and was killed"
                break
            if watch.sample(proc.pid):
                proc.kill()
                proc.wait()
                error = "MemoryLimit", (f"the run's resident memory (its kernel and their children) reached "
                                        f"{watch.last_mb:,.0f} MB, above the limit of {watch.limit_mb:,.0f} MB "
                                        "(--max-rss); it was stopped, the other runs go on")
                break
    finished = error is None and proc.returncode == 0 and store.finished_record(d) is not None
    if cancel.is_set() and not finished:
        proc.kill()  # the kernel's group too, if the child was gone first
        error = "Interrupted", f"the runner was interrupted ({cancel.signal}) during this run"
    return None if error is None else (*error, files.tail(d / files.PAPERMILL_LOG))



def notebook_error(output_nb: Path, log: Path, returncode) -> tuple:
    """The failing cell's error (type, message, traceback) from the executed
    notebook, else what papermill logged (a dead kernel, a start failure)."""
    try:
        nb = files.read_json(output_nb)
        for c in nb.get("cells", []):
            for o in c.get("outputs", []):
                if o.get("output_type") == "error" and o.get("ename") != "PapermillExecutionError":
                    tb = "\n".join(o.get("traceback", []))
                    return o.get("ename", "Error"), o.get("evalue", ""), _strip_ansi(tb)
    except (OSError, ValueError):
        pass
    text = files.tail(log, 40)
    killed = re.search(re.escape(KERNEL_SIGNAL) + r" (SIG[A-Z0-9]+)", text)
    if killed:
        return "KernelKilled", f"the kernel was killed by {killed.group(1)}" + (
            " (the OOM killer's signal, or kill -9)" if killed.group(1) == "SIGKILL" else ""), text
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

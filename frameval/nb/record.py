"""The recorder: one per notebook run. It prepares the process (threads, working
folder, home-directory redirects) before the framework is imported, times the
epochs, and writes `result.json` atomically.

A copy, `result.partial.json`, is rewritten after every epoch, so when a later
cell fails or the kernel dies the runner still has what was measured.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import socket
import statistics
import time
import traceback
from pathlib import Path

import numpy as np

from .. import cpu as _cpu
from .. import energy, speed
from .. import files
from .. import target as _target
from .. import workloads
from ..result import CORRUPT, Result, new_result, save
from ..result import SCHEMA_VERSION as SCHEMA  # noqa: F401 - the recorder's version, named here for readers
from ..result.folder import Plan
from . import determinism, evaluation, measure, precision
from ..catalog import BY_KEY, MIXED
from .params import check_api
from ..paths import notebook_path, notebook_rel
from .paths import hand_run_framework, hand_runs_dir

RESULT, PARTIAL = files.RESULT, files.PARTIAL
# The run's own working folder: framework caches (inductor, Keras, Triton) and
# compile dumps. The runner empties it before each execution, so that every run
# compiles from cold, as on a fresh machine, and first-epoch times compare.
WORK = files.WORK
THREAD_VARS = _cpu.THREAD_VARS  # set before the framework is imported (one home: frameval/cpu.py)


def _clean(v):
    """NaN/inf are not JSON: a non-finite number is kept as the string it is, so
    the report shows it rather than a fake zero."""
    if isinstance(v, (float, np.floating)):
        return float(v) if np.isfinite(v) else str(float(v))
    if isinstance(v, np.integer):
        return int(v)
    return v


def machine_info() -> dict:
    mem_gb = None
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                mem_gb = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return {"hostname": socket.gethostname(), "cpu": _cpu.model(), "cores": os.cpu_count(), "memory_gb": mem_gb,
            "os": f"{platform.system()} {platform.release()}", "machine": platform.machine(),
            "isa": _cpu.isa(), "isa_caps": _cpu.caps()}  # the caps as this run had them (the user's, kept)


# ------------------------------------------------------------------ hand runs
# A notebook run by hand (JupyterLab, no out_dir) writes into hand_runs_dir(),
# laid out as an output folder of run_all.py: runs/<fw>/<workload>-<mode>[-gpu]
# and, when parameters differ from the repository notebook's defaults,
# "@name=value+..." after it (a short hash when that would be long or unsafe).
# The same parameters again replace that run; other parameters get their own folder.
HAND_SKIP = ("out_dir", "mode", "device", "check")
HAND_PLAN = files.PLAN
_SAFE = re.compile(r"[A-Za-z0-9._-]+")  # no files.TAG_SEP: the pairs must read back
_MAX_NAME = 64


def notebook_defaults(framework: str, workload: str):
    """{name: default} of the repository notebook's parameters cell, or None."""
    try:
        from ..notebook import parameters
        return parameters(notebook_path(framework, workload))
    except Exception:  # noqa: BLE001 - no notebook there: the folder is named by a hash
        return None


def _same(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or a == b and type(a) is type(b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return a == b


def _token(v) -> str:
    return repr(v) if isinstance(v, float) else str(v)


def hand_run_folder(framework: str, workload: str, mode: str, device: str, params: dict, root=None) -> dict:
    """The folder of a hand run, and what names it: {"dir", "changed" (the
    parameters that differ from the notebook's defaults), "defaults_from",
    "replaced" (an earlier run with the same parameters was there)}. Prints one line."""
    root = Path(root) if root is not None else hand_runs_dir()
    defaults = notebook_defaults(framework, workload)
    kept = {k: v for k, v in params.items() if k not in HAND_SKIP}
    changed = kept if defaults is None else {k: v for k, v in kept.items()
                                             if k not in defaults or not _same(v, defaults[k])}
    name = files.run_folder(workload, mode, device)
    if changed:
        suffix = files.params_tag(changed)
        if len(suffix) > _MAX_NAME or not all(_SAFE.fullmatch(_token(x)) for kv in changed.items() for x in kv):
            suffix = "p" + hashlib.sha256(json.dumps(sorted(changed.items()), default=str).encode()).hexdigest()[:10]
        name += "@" + suffix
    d = root / files.RUNS / hand_run_framework(framework) / name
    replaced = (d / RESULT).exists()
    if replaced:  # kept aside, not collected: the new run replaces it in the report
        for f, kept in ((RESULT, files.REPLACED), (files.OUTPUT_NB, files.REPLACED_NB)):
            try:
                os.replace(d / f, d / kept)
            except OSError:
                pass
    what = ", ".join(f"{k}={_token(v)}" for k, v in sorted(changed.items())) or "the notebook's defaults"
    print(f"frameval: hand run -> {d}" + (f" ({what})" if defaults is not None else "")
          + (f"; it replaces the earlier run with the same parameters there (kept as {files.REPLACED})"
             if replaced else ""), flush=True)
    rel = notebook_rel(framework, workload)
    return {"dir": d, "changed": changed, "defaults_from": rel if defaults is not None else None,
            "replaced": replaced}


def write_hand_plan(root) -> Path:
    """plan.json of the hand-runs folder, as run_all.py writes one (what the
    report's metadata and framework list read), rebuilt from the runs there."""
    root = Path(root)
    found = []
    for f in sorted((root / files.RUNS).glob(f"*/*/{RESULT}")):
        r = Result.load(f)  # the one reader of a result (frameval/result)
        if r.error.get("type") != CORRUPT:
            found.append((str(r.framework), str(r.workload), str(r.mode), f.parent.name, str(r.started or "")))
    try:
        from .. import __version__ as version
    except Exception:  # noqa: BLE001
        version = None
    plan = Plan(command="", profile="hand runs (JupyterLab)", hand_runs=True,
                frameworks=sorted({x[0] for x in found}), workloads=sorted({x[1] for x in found}),
                modes=sorted({x[2] for x in found}), device="", overrides=[], repeats=1,
                profile_notes=["notebooks run by hand: a run folder's name after '@' lists the parameters "
                               "changed from the notebook's defaults"],
                started=min((x[4] for x in found if x[4]), default=time.strftime("%Y-%m-%dT%H:%M:%S%z")),
                frameval_version=version, runs=[f"{x[0]}/{x[3]}" for x in found]).to_dict()
    (root / files.RUNS).mkdir(parents=True, exist_ok=True)
    return files.atomic_write_json(root / HAND_PLAN, plan)


MIN_WINDOWS, OUTLIER_FACTOR = speed.MIN_WINDOWS, speed.OUTLIER_FACTOR  # one home: frameval/speed.py


class Epoch(dict):
    """One epoch's record: `seconds` (training only) plus the workload's metrics."""

    def update(self, **metrics):  # noqa: D401 - dict.update with cleaning
        super().update({k: _clean(v) for k, v in metrics.items()})
        return self

    def timed(self, batches):
        """`for idx in ep.timed(nb.batches(...))`: the epoch's batches, timed in
        windows of consecutive steps (speed.window_steps: a whole epoch's steps
        where the run has MIN_WINDOWS steady epochs, else shorter). A window holds
        the steps only, whatever the epoch count: the batch list is built before
        its clock starts, and what follows the loop (the loss read-back) is
        outside it. The device is synchronised at a window's edges only, so
        asynchronous frameworks run undisturbed inside it."""
        return self._timer.windows(batches)

    def step_windows(self, batches):
        """For a high-level API that runs the steps itself (Keras' fit, paddle.Model.fit,
        Gluon's Estimator, MindSpore's Model.train):
        the same windows as `timed`, marked from the API's batch callbacks
        (`begin(j)` before step j, `end(j)` after it). `items` is the batch list,
        built here, before any clock starts, for the notebook to hand to the API."""
        return StepWindows(self._timer, list(batches))


class StepWindows:
    """Timing windows marked by a caller: the rule of `_EpochTimer.windows` (a window
    closes after step j when it holds k steps and k or more remain, else after the
    last step), the device synchronised at the first step's start and at each close,
    consecutive windows sharing their edge, as in the loop the generator times."""

    def __init__(self, timer, items):
        self.timer, self.items = timer, items
        timer.ep["steps"] = len(items)
        self.k = timer.rec.window_steps(len(items))
        self.sync = timer.rec.sync or (lambda: None)
        self.start, self.t0, self.seen = 0, None, 0

    def begin(self, j: int):
        if j == 0:
            self.sync()  # what came before the first step stays out of the first window
            self.t0 = time.perf_counter()

    def end(self, j: int):
        self.seen = j + 1
        n, done = len(self.items), j + 1
        if self.t0 is not None and (done == n or (done - self.start >= self.k and n - done >= self.k)):
            self.t0 = self.timer._close_window(self.items, self.start, done, self.t0, self.sync)
            self.start = done

    def check_complete(self):
        """Raise unless the API ran every step of the list and the callbacks marked them."""
        if self.seen != len(self.items) or self.start != len(self.items):
            raise RuntimeError(f"the API's callbacks marked {self.seen} of {len(self.items)} steps: "
                               "its windows would not hold the epoch's steps")


class _EpochTimer:
    def __init__(self, rec, samples):
        self.rec, self.samples = rec, samples

    def __enter__(self):
        self.ep = Epoch(epoch=self.rec.first_epoch + len(self.rec.epochs) + 1)
        self.ep._timer = self
        if self.samples is not None:
            self.ep["samples"] = int(self.samples)
        if not self.rec.epochs:
            self.rec._start_training()
        self.eval_s = 0.0  # evaluation inside this epoch's clock, taken off its seconds
        self.eval_mj = 0.0  # and its energy, off the epoch's
        if self.rec.sync and self.rec.result.get("energy", {}).get("available"):
            self.rec.sync()  # queued work (the check's) ends before the counter's first reading
        self.e0 = self.rec._nvml.energy_mj()  # outside the epoch's clock: an NVML call is not training
        self.eval_cpu = 0.0  # the evaluations' CPU time, taken off the epoch's like their seconds
        self.watch = measure.Stopwatch(self.rec.sync).start()
        self.cpu0 = measure.own_cpu_s()
        return self.ep

    def __exit__(self, exc_type, exc, tb):
        secs = self.watch.stop() - self.eval_s
        cpu1 = measure.own_cpu_s()
        if exc_type is None:
            self.ep["seconds"] = secs
            if self.cpu0 is not None and cpu1 is not None:
                self.ep["cpu_s"] = round(cpu1 - self.cpu0 - self.eval_cpu, 6)
            self._energy(secs)
            if self.rec.evaluation:
                self.ep["eval_s"] = round(self.eval_s, 6)
            self.rec.epochs.append(self.ep)
            self.rec.mark("train_end")
            self.rec.write_partial()
            _inject_fault(self.rec)
        return False


    def windows(self, batches):
        items = list(batches)
        n = self.ep["steps"] = len(items)
        k = self.rec.window_steps(n)
        sync = self.rec.sync or (lambda: None)
        schedule = self.rec.evaluation
        due = evaluation.due_steps(n, schedule.per_epoch) if schedule and schedule.due_in(self.ep["epoch"]) else set()
        sync()  # what the epoch queued before its steps stays out of the first window
        start, t0 = 0, time.perf_counter()
        for j, item in enumerate(items):
            if j > start and j - start >= k and n - j >= k:  # the remainder joins the last window
                t0 = self._close_window(items, start, j, t0, sync)
                start = j
            yield item
            if j + 1 in due:  # a window ends where an evaluation starts: it holds training steps only
                self._close_window(items, start, j + 1, t0, sync)
                self._evaluate(schedule, items, j + 1, sync)
                start, t0 = j + 1, time.perf_counter()
        if start < n:
            self._close_window(items, start, n, t0, sync)

    def _evaluate(self, schedule, items, done: int, sync):
        """One evaluation point: the training so far (earlier epochs plus this one's
        clock less its earlier evaluations), then the evaluation, left out of both."""
        sync()
        so_far = time.perf_counter() - self.watch.t0 - self.eval_s
        earlier_s = sum(e["seconds"] for e in self.rec.epochs if isinstance(e.get("seconds"), float))
        earlier_n = sum(int(e.get("samples") or 0) for e in self.rec.epochs)
        e_a, c_a = self.rec._nvml.energy_mj(), measure.own_cpu_s()
        self.eval_s += schedule.evaluate(sync, epoch=self.ep["epoch"], step=done, steps=len(items),
                                         samples=earlier_n + sum(len(x) for x in items[:done]),
                                         train_s=earlier_s + so_far)
        e_b, c_b = self.rec._nvml.energy_mj(), measure.own_cpu_s()  # evaluate() ends with a sync
        if c_a is not None and c_b is not None:
            self.eval_cpu += c_b - c_a
        if e_a is not None and e_b is not None:
            self.eval_mj += e_b - e_a

    def _close_window(self, items, start, stop, t0, sync) -> float:
        sync()
        now = time.perf_counter()
        self.rec.windows.append({"epoch": self.ep["epoch"], "steps": stop - start,
                                 "samples": int(sum(len(x) for x in items[start:stop])), "seconds": now - t0})
        return now

    def _energy(self, secs: float):
        """The epoch's energy from the device counter at its edges (synchronised),
        its evaluations' taken off, and that less the idle draw times its seconds."""
        e1 = self.rec._nvml.energy_mj()
        if self.e0 is None or e1 is None:
            return
        joules = (e1 - self.e0 - self.eval_mj) / 1000.0
        self.ep["energy_j"] = round(joules, 3)
        idle = self.rec.result.get("energy", {}).get("idle_w")
        if idle is not None:
            self.ep["energy_above_idle_j"] = round(joules - idle * secs, 3)


def _inject_fault(rec):
    """Test hook for the fault tests: FRAMEVAL_INJECT_FAULT="<framework>/<workload>[@key=value]:raise|abort|sleep|grow[=MB]|kill"
    fails the run after its first epoch, the way a real crash would (@key=value: only the
    run whose parameter has that value, one value of a sweep)."""
    spec = os.environ.get("FRAMEVAL_INJECT_FAULT", "")
    target, _, kind = spec.partition(":")
    target, _, cond = target.partition("@")
    key, _, value = cond.partition("=")
    if not spec or target != f"{rec.framework}/{rec.workload}" or len(rec.epochs) != 1 \
            or (cond and str(rec.params.get(key)) != value):
        return
    if kind == "raise":
        raise RuntimeError("injected failure (FRAMEVAL_INJECT_FAULT)")
    if kind == "abort":
        os.abort()
    if kind == "sleep":
        time.sleep(3600)
    if kind.startswith("grow"):  # "grow" or "grow=MB": resident memory that keeps growing (#72's memory guard)
        step = int(kind.partition("=")[2] or 64)
        held = []
        while True:
            held.append(np.ones(step << 18, np.float32))  # step MB, touched
            time.sleep(0.05)
    if kind == "kill":  # the OOM killer's way: SIGKILL, here, from outside the Python code
        os.kill(os.getpid(), 9)


class Recorder:
    def __init__(self, framework: str, workload: str, params: dict, out_dir: str = "",
                 threads: int | None = None, chdir: bool = True):
        self.t_created = time.perf_counter()
        check_api(framework, params)  # before any folder is made: api="high" where no notebook has it
        self.framework, self.workload = framework, workload
        self.params = {k: _clean(v) for k, v in params.items()}
        self.mode = params.get("mode", "")
        self.device = params.get("device", "cpu")
        self.hand_run = None if out_dir else hand_run_folder(framework, workload, self.mode, self.device, self.params)
        self.out = Path(out_dir) if out_dir else self.hand_run["dir"]
        self.out.mkdir(parents=True, exist_ok=True)
        self.threads = int(threads or params.get("threads") or os.cpu_count() or 1)
        # The keys every result.json starts with: one result type (frameval/result) for every writer.
        self.result: dict = new_result(framework, workload, self.mode, self.device, self.params, self.threads,
                                       {"python": platform.python_version(), "numpy": np.__version__,
                                        "machine": machine_info(), "gpu": None},
                                       time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        self.result["params"] = self.params  # the same object: what the recorder cleans, the file shows
        if self.hand_run:
            self.result["hand_run"] = {k: v for k, v in self.hand_run.items() if k != "dir"}
        self.epochs = self.result["epochs"]
        self.first_epoch = 0  # a resumed kernel's epochs start after its checkpoint's (nb/resume.py)
        self.windows: list = []  # step windows (ep.timed); whole epochs are windows where they suffice
        self._machine_before = measure.machine_before()
        self.sync = None
        self._reset_device = None
        self._peak_device = None
        self._nvml = measure.nvml_probe(self.device)
        self.evaluation = None  # evaluation.Schedule, once the notebook hands its function over
        # Wall-clock marks (Unix seconds) of the run's phases: with the runner's own start and
        # end they say where every second went (frameval/phases.py, issue #50).
        self.result["clock"] = {"created": time.time()}
        self._prepare_process(chdir)

    # ---------------------------------------------------------------- setup
    def _prepare_process(self, chdir: bool):
        for var in THREAD_VARS:
            os.environ[var] = str(self.threads)
        work = self.out / WORK
        work.mkdir(exist_ok=True)
        # Caches frameworks would put in the home directory go to the run's folder.
        os.environ.setdefault("KERAS_HOME", str(work / "keras"))
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(work / files.INDUCTOR_CACHE))
        os.environ.setdefault("TRITON_CACHE_DIR", str(work / "triton"))
        os.environ.setdefault("MPLCONFIGDIR", str(work / "matplotlib"))
        if chdir:  # compile dumps (MindSpore's rank_0/ ...) land here, never in the repo
            os.chdir(work)

    def after_import(self, version: str, sync=None, reset_device_peak=None, device_peak_mb=None,
                     gpu_name: str | None = None, gpu_runtime: dict | None = None):
        """Call right after the framework import. `sync` waits for the device;
        `reset_device_peak` / `device_peak_mb` are the allocator's peak APIs (GPU);
        `gpu_runtime`: the CUDA and cuDNN versions the framework was built with
        and loaded ({"cuda": "13.0", "cudnn": "91300"}), as it reports them."""
        self.result["framework_version"] = str(version)
        self.result["rss_after_import_mb"] = _round(measure.rss_mb())
        self.result["memory"]["after_import_mb"] = self.result["rss_after_import_mb"]
        self.result["import_s"] = round(time.perf_counter() - self.t_created, 3)
        self.mark("imported")
        self.sync = sync
        self._reset_device, self._peak_device = reset_device_peak, device_peak_mb
        if gpu_name:
            self.result["environment"]["gpu"] = gpu_name
        for k, v in (gpu_runtime or {}).items():
            if v not in (None, ""):
                self.result["environment"][k] = str(v)
        self.result["environment"]["framework"] = str(version)
        self._set_precision()
        self.write_partial()

    def _set_precision(self):
        """precision="highest": full float32 for the whole run, by the framework's own
        switches (nb/precision.py); "default" leaves the framework's defaults."""
        if self.params.get("precision", "default") != "highest":
            return
        try:
            changed = precision.make_strict(self.framework, self.device)
        except Exception as e:  # noqa: BLE001 - recorded: the math mode read back says what held
            self.note(f"precision=highest: a switch could not be set ({type(e).__name__}: {e})")
            return
        if changed:
            self.note("precision=highest: set to full float32: " + ", ".join(f"{n} (was {v})" for n, v in changed))

    def record_math_mode(self):
        """The math mode as the switches and variables read now (training's, once the check restored them)."""
        try:
            self.result["math_mode"] = precision.mode(self.framework, self.device,
                                                      self.params.get("precision", "default"))
        except Exception as e:  # noqa: BLE001 - never lose a run over its record
            self.result["math_mode"] = {"effective": None, "error": f"{type(e).__name__}: {e}"}

    def set_data(self, description: dict, placement: str | None = None):
        """The data set's description, and where the framework keeps it (e.g.
        "host, shares numpy's buffer", "host copy", "device copy")."""
        self.result["data"] = description
        self.result["data_placement"] = placement
        self.mark("data")
        self.result["memory"]["after_data_mb"] = _round(measure.rss_mb())

    def check_done(self, check: dict, key: str = "check"):
        """The numerical check's result (frameval.nb.check); a failed check
        makes the run's status "check_failed" when it is written. key="check_amp":
        the second pass of a mixed-precision run, under its AMP (nb/amp.py)."""
        self.result[key] = check
        self.result["memory"]["after_check_mb"] = _round(measure.rss_mb())

    def set_amp(self, amp):
        """The run's mixed precision as its framework does it (nb/amp.py: Amp.record())."""
        self.result["amp"] = amp.record()
        return amp

    def set_param_counts(self, note: str = "", **counts):
        self.result["param_counts"] = {k: int(v) for k, v in counts.items()}
        if note:
            self.result["param_count_note"] = note

    def set_graph_scope(self, forward: bool, backward: bool, update: bool, graphs: int | None = None,
                        graph_breaks: int | None = None, how: str = "", why: str = ""):
        """Which parts of the TRAINING STEP ran inside the compiled graph, and the
        graph and graph-break counts of the training step only (evaluation and
        prediction graphs excluded). `why` says what stays outside and why.
        `compiled` is true only when the whole step was captured without breaks."""
        eager = self.mode != "graph"
        scope = {"forward": bool(forward) and not eager, "backward": bool(backward) and not eager,
                 "update": bool(update) and not eager, "graphs": graphs, "graph_breaks": graph_breaks,
                 "how": "eager" if eager else how, "why": "" if eager else why}
        self.result["graph_scope"] = scope
        whole = scope["forward"] and scope["backward"] and scope["update"] and not graph_breaks
        self.result["compiled"] = bool(whole) and (graphs is None or graphs > 0)
        parts = [k for k in ("forward", "backward", "update") if scope[k]]
        self.result["compile_note"] = "eager" if eager else (
            f"{how}: {'+'.join(parts) or 'nothing'} in the graph"
            + (f", {graphs} graph(s)" if graphs is not None else "")
            + (f", {graph_breaks} graph break(s)" if graph_breaks is not None else "")
            + (f" ({why})" if why else ""))

    def set_compiled(self, compiled: bool, note: str = ""):
        """The older form: whether "graph" mode compiled, with no graph scope
        (the report shows the scope as not recorded). Use set_graph_scope."""
        self.result["compiled"] = bool(compiled)
        self.result["compile_note"] = note

    def set_threads_effective(self, intra: int | None, inter: int | None, how: str = "", missing=()):
        """The thread counts the framework reports after they were set (not the
        request): intra-op, inter-op, how they were read, and any API that is missing."""
        self.result["threads_effective"] = {"intra": None if intra is None else int(intra),
                                            "inter": None if inter is None else int(inter),
                                            "how": how, "missing": list(missing)}

    def settings(self, **kv):
        """Settings the notebook declares (typed in): marked "declared" in the audit."""
        self._settings(kv, "declared")

    def settings_read(self, **kv):
        """Settings read back from the framework's optimizer and layer objects."""
        self._settings(kv, "read")

    def _settings(self, kv, source):
        self.result["settings"].update({k: _clean(v) for k, v in kv.items()})
        self.result["settings_source"].update({k: source for k in kv})

    def workaround(self, id: str, summary: str = "", versions: str = "", found_by: str = "", cost: str = "",
                   substitute: str = ""):
        """Declare a framework defect this run works around, where the workaround is
        applied. `id` is stable: `defects/<framework>/<id>.py` reproduces the defect,
        and the framework's record describes it once (Framework.workarounds: summary,
        versions, found_by, cost, substitute), so a notebook passes the id alone. An
        id its record does not describe needs its summary here, else it raises."""
        described = BY_KEY[self.framework].defect(str(id)) if self.framework in BY_KEY else {}
        if not summary and not described.get("summary"):
            raise ValueError(f"rec.workaround({id!r}): {self.framework}'s record does not describe it "
                             f"(frameval/frameworks/{self.framework}/__init__.py, workarounds)")
        given = {"summary": summary, "versions": versions, "found_by": found_by, "cost": cost, "substitute": substitute}
        entry = {"id": str(id), "framework": self.framework,
                 **{k: str(v or described.get(k) or "") for k, v in given.items()}}
        found = self.result.setdefault("workarounds", [])
        found[:] = [w for w in found if w.get("id") != entry["id"]] + [entry]  # a re-run cell replaces its own
        return entry

    def work_file(self, name: str) -> Path:
        """A path in the run's working folder (files.WORK), e.g. for the saved model."""
        return self.out / WORK / name

    def finish(self) -> None:
        """The record cell's last line: write result.json and print where (the
        lab finds a hand run's result by that line), then the headline figures.
        Returns nothing, so that Jupyter shows no value under the prints."""
        print(self.write())
        print(self.summary())

    def note(self, text: str):
        self.result["notes"].append(text)

    def set(self, **kv):
        self.result.update({k: _clean(v) for k, v in kv.items()})

    # ---------------------------------------------------------------- training
    def evaluate_during_training(self, fn, per_epoch: int | None = None):
        """`fn()` returns the workload's quality metric (or a dict holding it);
        `ep.timed` calls it `per_epoch` times an epoch (the workload record's
        eval_per_epoch unless given), outside the training clock."""
        wl = workloads.get(self.workload)
        per_epoch = wl.eval_per_epoch if per_epoch is None else per_epoch
        last_only = wl.eval_without_target == "last" and wl.target(self.params) is None
        self.evaluation = evaluation.Schedule(fn, wl.quality.key, wl.quality.higher_is_better, per_epoch,
                                              epochs=int(self.params.get("epochs") or 1) if last_only else None)

    def epoch(self, samples: int | None = None):
        """`with rec.epoch(samples=n) as ep:` times the training part of one epoch."""
        return _EpochTimer(self, samples)

    def mark(self, name: str):
        """A phase's end, as a wall-clock time (result["clock"]; frameval/phases.py)."""
        self.result.setdefault("clock", {})[name] = time.time()

    def _start_training(self):
        self.mark("train_start")
        self.record_math_mode()  # what the training runs at: the check has restored its switches by now
        mem = self.result["memory"]
        mem["before_training_mb"] = _round(measure.rss_mb())
        self._hwm_reset = measure.reset_peak_rss()
        mem["method"] = "clear_refs" if self._hwm_reset else "peak minus level before training"
        if self._reset_device:
            try:
                self._reset_device()
            except Exception as e:  # a CPU build: keep "not available"
                self.note(f"device peak reset failed: {type(e).__name__}: {e}")
        self._nvml.start()
        self._start_energy()

    def _start_energy(self):
        """What the energy figures rest on, or why there are none (#48): NVML's
        total-energy counter at each epoch's edges, the idle draw before training."""
        drv = self._nvml.driver_version()
        if drv:
            self.result["environment"]["gpu_driver"] = drv
        if self.device != "gpu":
            self.result["energy"] = {"available": False, "why": "a CPU run: frameval reads only a GPU's counter (NVML)"}
        elif self._nvml.energy_mj() is None:
            self.result["energy"] = {"available": False, "why": "no NVML total-energy counter on this device or driver"}
        else:
            self.result["energy"] = {"available": True, "counter": "nvmlDeviceGetTotalEnergyConsumption",
                                     "idle_w": self._nvml.idle_w(), "idle_how": "median NVML power over 1 s before training"}

    def window_steps(self, steps: int) -> int:
        """Steps per timing window in an epoch of `steps` steps (speed.window_steps)."""
        return speed.window_steps(steps, int(self.params.get("epochs") or 1))

    # ---------------------------------------------------------------- output
    def _summarise(self):
        secs = [e["seconds"] for e in self.epochs if isinstance(e.get("seconds"), float)]
        r = self.result
        if secs:
            r["first_epoch_s"] = secs[0]
            steady = secs[1:]
            if steady:
                r["steady_epoch_s"] = statistics.median(steady)
                r["steady_min_s"], r["steady_max_s"] = min(steady), max(steady)
            else:
                msg = "one epoch only: the first epoch (with warm-up) is all that was measured"
                if msg not in r["notes"]:
                    r["notes"].append(msg)
            r["cpu_cores"] = cores_in_use(self.epochs)
        self._summarise_timing()
        self._summarise_memory()
        r["machine"] = measure.machine_state(self._machine_before)
        # read again: a setup cell may set a cap after the recorder started (MindSpore's ONEDNN_MAX_CPU_ISA)
        r["environment"]["machine"]["isa_caps"] = _cpu.caps()
        if self._peak_device:
            try:
                v = self._peak_device()
                r["peak_device_mb"] = None if v is None else _round(float(v))
            except Exception as e:
                self.note(f"device peak not available: {type(e).__name__}: {e}")
        r["peak_device_driver_mb"] = self._nvml.stop() if self.device == "gpu" else None
        self._summarise_energy()
        if self.device != "gpu":
            r["peak_device_mb"] = None  # zero from a CPU build is not a measurement

    def _summarise_energy(self):
        """The steady epochs' mean energy and per sample (frameval/energy.py)."""
        e = self.result.get("energy")
        if isinstance(e, dict) and e.get("available"):
            e.update(energy.summary(self.epochs, e.get("idle_w")))

    def _summarise_timing(self):
        """The steady timing windows (step windows, or else the epochs after the
        first), their median rate as samples_per_s, and the outliers among them."""
        # a notebook that does not loop over ep.timed(...) (an old hand-edited copy) is timed by whole epochs
        wins = self.windows or [{"epoch": e["epoch"], "steps": e.get("steps"), "samples": e.get("samples"),
                                 "seconds": e["seconds"]} for e in self.epochs if isinstance(e.get("seconds"), float)]
        wins = [dict(w, seconds=round(w["seconds"], 6)) for w in wins]
        rates = speed.rates(wins)
        self.result["timing"] = {
            "window": "steps" if self.windows else "epoch", "min_windows": MIN_WINDOWS,
            "min_window_s": speed.MIN_WINDOW_S,
            "windows": wins, "steady_windows": len(rates), "outlier_windows": speed.outliers(rates)}
        self.result["samples_per_s"] = speed.run_rate(wins)

    def _summarise_evaluation(self):
        """The evaluation points, and the time to the workload's target read from them
        (None where the workload has no target at this size or nothing was evaluated)."""
        ev = self.evaluation
        self.result["evaluation"] = ev.record() if ev and ev.points else None
        wl = workloads.find(self.workload)  # None: a notebook of no registered workload (a test's) has no target
        self.result["time_to_target"] = _target.from_evaluation(
            self.result["evaluation"], wl.target(self.params) if wl else None)

    def write_partial(self):
        self._summarise_light()
        files.atomic_write_json(self.out / PARTIAL, self.result)

    def _summarise_light(self):
        self._summarise_memory()

    def _summarise_memory(self):
        """peak_rss_mb is the training's own peak: the high-water mark reset just
        before the first epoch (a level: the import and what the check left are in
        it), with training_increment_mb, that peak over the level before training.
        Where the reset cannot be done, increment_without_reset_mb is the process
        peak over that level (an upper bound) and there is no training peak. The
        process peak is kept beside them."""
        mem, process = self.result["memory"], measure.peak_rss_mb()
        hwm = measure.hwm_mb() if getattr(self, "_hwm_reset", False) else None
        if process is not None and hwm is not None:
            process = max(process, hwm)  # read one after the other: the later one may be higher
        mem["process_peak_mb"] = _round(process)
        if "before_training_mb" not in mem:
            return
        before = mem["before_training_mb"]
        if hwm is not None:  # one meaning each (#67): the peak is a level, the increment is over the level before
            mem["training_peak_mb"] = _round(hwm)
            mem["training_increment_mb"] = _round(hwm - before) if before is not None else None
        elif process is not None and before is not None:
            # no reset here: the process's peak (import and check included) over the level before training
            mem["increment_without_reset_mb"] = _round(process - before)
        self.result["peak_rss_mb"] = mem.get("training_peak_mb")

    def write(self, status: str = "ok") -> Path:
        """Finish: summary figures, status, and result.json (atomically)."""
        self._summarise()
        # the switches as this run had them (never turned on: docs/reproduce.md, "Determinism")
        self.result["determinism"] = determinism.switches(self.framework)
        self.mark("written")
        if "math_mode" not in self.result:  # no epoch ran: as the switches stand now
            self.record_math_mode()
        self._summarise_evaluation()
        losses = [v for e in self.epochs for k, v in e.items() if "loss" in k or "mse" in k]
        bad = [v for v in losses if not isinstance(v, float)]
        self.result["status"] = status
        mixed = self.params.get("precision") in MIXED
        if status == "ok" and mixed and not (self.result.get("amp") or {}).get("precision"):
            # never a silent float32 run under a mixed precision's name (#69)
            self.result["status"] = "failed"
            self.result["error"] = {"type": "PrecisionNotApplied", "traceback": "",
                                    "message": f"precision={self.params['precision']}: this notebook never called its "
                                               "framework's autocast (fw.autocast), so it trained in float32"}
        elif status == "ok" and (self.result.get("check") or {}).get("ok") is False:
            self.result["status"] = "check_failed"
            self.result["error"] = {"type": "CheckFailed", "traceback": "",
                                    "message": "the numerical check failed: this run does not compute the spec's function"}
        elif status == "ok" and (self.result.get("check_amp") or {}).get("ok") is False:
            self.result["status"] = "check_failed"
            fmt = (self.result.get("amp") or {}).get("format") or "mixed precision"
            self.result["error"] = {"type": "CheckFailed", "traceback": "",
                                    "message": f"the check under the framework's AMP failed: at {fmt} its step is "
                                               "outside the bound of docs/precision.md (" + "; ".join(
                                                   (self.result["check_amp"].get("outside") or [])[:3]) + ")"}
        if bad and status == "ok":
            self.result["status"] = "failed"
            self.result["error"] = {"type": "NonFiniteLoss", "message": f"non-finite loss values: {bad[:3]}",
                                    "traceback": ""}
        self.result["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        path = save(self.out / RESULT, self.result)  # the one writer of result.json (frameval/result)
        try:
            (self.out / PARTIAL).unlink()
        except OSError:
            pass
        if self.hand_run:
            write_hand_plan(hand_runs_dir())
        return path

    def fail(self, exc: BaseException) -> Path:
        """Record an exception a notebook chose to catch (the runner records the rest)."""
        self.result["error"] = {"type": type(exc).__name__, "message": str(exc),
                                "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]}
        return self.write(status="failed")

    def summary(self) -> str:
        r = self.result
        keys = ("first_epoch_s", "steady_epoch_s", "samples_per_s", "peak_rss_mb", "peak_device_mb")
        return " | ".join(f"{k}={_fmt(r.get(k))}" for k in keys)


def cores_in_use(epochs) -> float | None:
    """CPU use in training (#70, the seed's "CPU 202%"): the process's CPU time (user and system,
    every thread) over wall time in the steady epochs (after the first), evaluations left out of
    both; 2.0 is two cores busy for the whole epoch. None with no steady epoch that has both."""
    steady = [e for e in list(epochs)[1:] if isinstance(e.get("cpu_s"), (int, float))
              and isinstance(e.get("seconds"), (int, float)) and e["seconds"] > 0]
    wall = sum(e["seconds"] for e in steady)
    return round(sum(e["cpu_s"] for e in steady) / wall, 3) if steady and wall > 0 else None


def _round(v, nd=1):
    return None if v is None else round(float(v), nd)


def _fmt(v):
    if v is None:
        return "n/a"
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def count_params(arrays) -> int:
    return int(sum(int(np.prod(a.shape)) for a in arrays))

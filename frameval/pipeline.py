"""The one data path, in order: plan -> data caches -> environments -> papermill
runs -> result.json -> collector -> report. Runs inside the runner env.

Faults never lose results: an environment that fails to build marks its
framework's runs failed; a notebook failure is recorded and the matrix goes
on; SIGINT, SIGTERM and SIGHUP kill the current run, record it, and still write
the report (the next invocation reuses every finished run).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from . import __version__, behaviour, ceilings, data, envs, execute, executors, files, layers, locks, noise, phases, probe, provenance
from .executors.context import ExecContext, Job
from .paths import REPO
from .result import load as load_result, store
from .result.folder import Environment, Plan

EXIT_FAILED, EXIT_INTERRUPTED, EXIT_BUSY = 1, 130, 2


def git_commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


@contextlib.contextmanager
def out_lock(out: Path):
    """One invocation per output folder at a time; a second one exits at once
    (EXIT_BUSY), naming the holder's pid (kept beside the lock: filelock
    truncates the lock file itself when it tries to take it)."""
    path, pid_file = out / files.OUT_LOCK, out / (files.OUT_LOCK + ".pid")
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(locks.file_lock(path, wait=False))
        except locks.Busy:
            try:
                pid = pid_file.read_text().strip()
            except OSError:
                pid = "?"
            print(f"frameval: error: another frameval run is using {out} "
                  f"(lock {path}, held by pid {pid}); wait for it or use another --out", file=sys.stderr)
            sys.exit(EXIT_BUSY)
        _unfinished(out, pid_file)
        files.atomic_write(pid_file, f"{os.getpid()} {time.strftime('%Y-%m-%dT%H:%M:%S%z')}")
        yield
        pid_file.unlink(missing_ok=True)  # ended, report written or refused: the next command starts clean


def _unfinished(out: Path, pid_file: Path) -> None:
    """The pid file outlives its command only where that command was killed (SIGKILL, the OOM
    killer, a power cut) before its end (#72): say so; its unfinished runs run again."""
    try:
        pid, _, started = pid_file.read_text().strip().partition(" ")
    except OSError:
        return
    print(f"frameval: the last command in {out} (pid {pid}{', started ' + started if started else ''}) ended "
          "without its report; every run it finished is reused, the one it was running runs again", flush=True)


def _detach_from_terminal() -> None:
    """After a hang-up the terminal is gone: writing to it fails (EIO) or stops the process
    (SIGTTOU). Output that went to a terminal goes to /dev/null from here; output to a file
    or a pipe (nohup, tmux's log, CI) is kept."""
    null = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        try:
            if os.isatty(fd):
                os.dup2(null, fd)
        except OSError:
            pass
    os.close(null)


class Pipeline:
    """One invocation of the run command, on a validated RunConfig."""

    def __init__(self, config):
        self.config, self.runs, self.argv = config, config.runs, config.argv
        self.out = Path(config.out).resolve()
        self.cancel = execute.Cancel()  # Ctrl-C: set by the signal handler, handed to the executor
        self.executor = executors.get(config.executor)
        self.data_paths: dict = {}  # the data caches prepared: their hashes go into provenance.json
        self.clock = phases.CommandClock()  # where the command's own time goes (<out>/timing.json)

    def say(self, msg: str):
        try:
            print(msg, flush=True)
        except OSError:  # the terminal is gone (a hang-up): the run and its report go on without it
            pass

    # --------------------------------------------------------------- entry
    def run(self) -> int:
        cfg = self.config
        if cfg.dry_run:
            return self.dry_run()
        with out_lock(self.out):
            if cfg.report_only:
                from .executors import slurm  # jobs that ended after an --executor slurm runner was gone
                slurm.finalize_folders(cfg.sources or [str(self.out)], say=self.say)
                return self.collect(cfg.sources or [str(self.out)])
            self._install_signals()
            self.write_plan()
            try:
                with self.clock("data caches"):
                    self.prepare_data()
            except data.DataError as e:
                print(f"frameval: error: {' '.join(str(e).split())}", file=sys.stderr, flush=True)
                return EXIT_FAILED
            with self.clock("environments"):
                env_by_fw = self.environments()
            self.record_provenance(env_by_fw)  # before any run: a run cut short still has it
            if cfg.setup_only:
                self.say("frameval: setup done (environments, kernels, data caches); nothing run (--setup-only)")
                return 0 if all(isinstance(e, envs.Env) for e in env_by_fw.values()) else EXIT_FAILED
            try:
                failed = self.execute_all(env_by_fw)
            except OSError as e:  # a full disk or a write error: the runs written so far stay
                print(f"frameval: error: cannot write in {self.out}: {e.strerror or e} ({self.intact()})",
                      file=sys.stderr, flush=True)
                return EXIT_FAILED
            self.record_provenance(env_by_fw)  # again: with the machine's peak, measured just before the runs
            self.clock.write(self.out, files.atomic_write_json)  # the report shows it (its own time: the last line)
            with self.clock("report"):
                code = self.collect([str(self.out)])
            self.clock.write(self.out, files.atomic_write_json)
            self.say(self.clock.last_line(self.executed_results()))
        if self.cancel.is_set():
            self.say(f"frameval: stopped by {self.cancel.signal}; the same command goes on from here, reusing "
                     f"every finished run: python3 run_all.py {' '.join(_quote(x) for x in self.argv)}")
            return EXIT_INTERRUPTED
        return EXIT_FAILED if failed or code else 0

    def context(self) -> ExecContext:
        """What the executor is handed: no more than it needs."""
        cfg = self.config
        return ExecContext(out=self.out, total=len(self.runs), timeout=cfg.timeout, device=cfg.device, say=self.say,
                           max_rss_mb=cfg.max_rss_mb,
                           cancel=self.cancel,
                           options=cfg.slurm if cfg.executor == "slurm" else None)

    def _install_signals(self):
        """Ctrl-C, SIGTERM and a hang-up (a closed terminal, a dropped SSH session: #72) end alike:
        the current run is stopped and recorded as interrupted, the report is written with what
        finished, and the same command goes on from there."""
        def handler(signum, frame):
            self.cancel.cancel(signal.Signals(signum).name)  # first: nothing below may delay the kill
            if signum == signal.SIGHUP:
                _detach_from_terminal()
            self.say(f"\nframeval: {signal.Signals(signum).name} received: stopping the current run, "
                     "then writing the report with what has finished")
        for sig in (signal.SIGINT, signal.SIGTERM) + ((signal.SIGHUP,) if hasattr(signal, "SIGHUP") else ()):
            if sig != signal.SIGINT and signal.getsignal(sig) == signal.SIG_IGN:
                continue  # nohup ignores the hang-up on purpose: so does the run
            signal.signal(sig, handler)

    # --------------------------------------------------------------- steps
    def write_plan(self):
        notes = sorted({n for r in self.runs for n in r.profile_notes})
        plan = Plan(command="python3 run_all.py " + " ".join(_quote(x) for x in self.argv),
                    profile=self.config.profile, frameworks=sorted({r.framework for r in self.runs}),
                    datasets=sorted({r.params["dataset"] for r in self.runs if "dataset" in r.params}),
                    framework_pins=sorted({r.fw_key for r in self.runs if r.pin}),
                    workloads=sorted({r.workload for r in self.runs}), modes=sorted({r.mode for r in self.runs}),
                    device=self.config.device, overrides=list(self.config.param), repeats=self.config.repeats,
                    seeds=sorted({r.seed for r in self.runs if r.seed is not None}),
                    profile_notes=notes, started=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                    frameval_version=__version__, git_commit=git_commit(),
                    runs=list(dict.fromkeys(r.name for r in self.runs if r.repeat == 1)))
        files.atomic_write_json(self.out / files.PLAN, plan.to_dict())

    def record_provenance(self, env_by_fw):
        """<out>/provenance.json: what the report is made from (frameval/provenance.py)."""
        from .bootstrap import runner_env
        try:
            provenance.write(self.out, self.config, env_by_fw, self.data_paths, runner_env(self.config.env_backend))
        except Exception as e:  # noqa: BLE001 - the record's failure is said, and never stops the runs
            self.say(f"frameval: warning: {files.PROVENANCE} not written: {type(e).__name__}: {e}")

    def prepare_data(self):
        t0 = time.perf_counter()
        self.data_paths = data.prepare_all(self.config.data_dir or None, self.config.download_mnist,
                                           full=self.config.needs_full_mnist, echo=lambda m: self.say(f"frameval: {m}"))
        self.say(f"frameval: data caches ready in {data.data_cache_dir()} ({time.perf_counter() - t0:.1f} s)")

    def environments(self) -> dict:
        """Every planned framework's environment, built in parallel (or the
        user's own, --python): one progress line each, a failed one naming its log."""
        from .bootstrap import register_runner_kernel
        register_runner_kernel(self.config.env_backend)
        fws = list(dict.fromkeys(r.fw_key for r in self.runs))
        users = self.config.user_pythons

        def done(fw, env, secs):
            if not isinstance(env, envs.Env):
                self.say(f"frameval: environment {fw} FAILED to build: {str(env).splitlines()[0]}")
                return
            spec = env.spec
            record = Environment(framework=fw.partition("@")[0], fw_key=fw, spec_name=spec.name,
                                 spec_path=_rel(spec.path), spec_text=spec.text, key=spec.key, backend=env.backend,
                                 python=spec.python, prefix=str(env.prefix), freeze=env.freeze, kernel=env.kernel,
                                 extra={**env.info(), **env.result_fields()})
            files.atomic_write_json(self.out / files.ENVIRONMENTS / f"{fw}.json", record.to_dict())
            if env.provided_by_user:
                info = env.info()
                self.say(f"frameval: environment {fw}: your {env.python} ({fw} {info.get('framework_version')}, "
                         f"Python {info.get('python_version')}; spec pins {envs.spec_pin(spec) or '-'}) "
                         f"ready ({secs:.1f} s)")
            elif env.built_now:
                self.say(f"frameval: environment {fw} built with {env.info().get('installer', 'pip')} "
                         f"in {secs:.1f} s")
            else:
                self.say(f"frameval: environment {fw} ready ({secs:.1f} s)")

        probes = self.config.user_probes
        return envs.ensure_frameworks(fws, self.config.device, self.config.env_backend,
                                      echo=lambda m: self.say(f"frameval: {m}"),
                                      user_pythons={fw: (users[fw], probes.get(fw)) for fw in users},
                                      on_done=done)

    def dry_run(self) -> int:
        self.say(f"frameval: plan for {self.out} ({len(self.runs)} runs, profile {self.config.profile}):")
        users, user_keys = self.config.user_pythons, {}
        n_execute = 0
        for i, run in enumerate(self.runs, 1):
            env = envs.env_for(envs.framework_spec(run.fw_key, run.device), envs.choose_backend(self.config.env_backend))
            if run.fw_key in users:  # the user's own environment: its freeze now
                if run.fw_key not in user_keys:
                    probe = self.config.user_probes.get(run.fw_key) or {}
                    user_keys[run.fw_key] = envs.Env(
                        env.spec, Path(probe.get("prefix", "")), "user", python_path=Path(users[run.fw_key]),
                        user=dict(probe, freeze=envs.user_freeze(users[run.fw_key]))).key_text
                parts = execute.key_parts(run, user_keys[run.fw_key])
            else:
                parts = execute.key_parts(run, env.freeze if env.ready else "")
            d = store.planned_dir(self.out, run)
            dec = execute.decide(run, d, parts, self.config.forced(run))
            extra = "" if env.ready or run.fw_key in users else " (environment not built yet)"
            n_execute += dec.execute
            self.say(f"  [{i}/{len(self.runs)}] {run.name}{run.replicate}: "
                     f"{'execute' if dec.execute else 'reuse'} ({dec.why}){extra}")
        self.executor.dry_run(self.context(), n_execute)
        backend = envs.choose_backend(self.config.env_backend)
        if self.config.behaviour:
            self.say(behaviour.plan_line({k: envs.env_for(envs.framework_spec(k, "cpu"), backend)
                                          for k in dict.fromkeys(r.fw_key for r in self.runs)}))
        if self.config.layers:
            self.say(layers.plan_line({k: envs.env_for(envs.framework_spec(k, "cpu"), backend)
                                       for k in dict.fromkeys(r.fw_key for r in self.runs)}, self.runs))
        return 0

    def triage(self, i: int, run, env_by_fw) -> tuple:
        """Run, reuse or fail, for each planned run whatever the executor:
        (Job or None, ok). A run whose environment did not build is recorded
        failed; one the cache reuses is marked reused; one that must execute
        becomes a Job."""
        d = store.planned_dir(self.out, run)
        env = env_by_fw.get(run.fw_key)
        label = f"[{i}/{len(self.runs)}] {run.name}{run.replicate}"
        if not isinstance(env, envs.Env):
            store.record_failure(d, run, "EnvBuildError", str(env).splitlines()[0] if env else "no env", str(env))
            self.say(f"{label}: failed (environment did not build)")
            return None, False
        parts = execute.key_parts(run, env.key_text)
        dec = execute.decide(run, d, parts, self.config.forced(run))
        if not dec.execute:
            store.mark_reused(d)
            self.say(f"{label}: reused ({dec.why})")
            return None, True
        kernel = env.kernel or envs.kernel_name(run.framework, run.device)
        return Job(i, label, run, d, kernel, parts, dec.why, env_fields=env.result_fields(),
                   env_python=str(env.python),
                   kernel_json=str(envs.kernels.JUPYTER_DIR / "kernels" / kernel / "kernel.json")), True

    def execute_all(self, env_by_fw) -> bool:
        """Triage every planned run, hand the ones that execute to the executor,
        then fold repeats together; True if any planned run is not ok."""
        jobs, failed = [], False
        for i, run in enumerate(self.runs, 1):
            job, ok = self.triage(i, run, env_by_fw)
            failed |= not ok
            if job is not None:
                jobs.append(job)
        if self.config.executor == "local" and (jobs or not (self.out / probe.MACHINE).exists()):
            # the machine's peak, just before the runs it is set against (runs all reused: theirs stays;
            # on Slurm the runs' nodes are not this machine, so none is measured)
            cpu_envs = {k: e for k, e in env_by_fw.items() if isinstance(e, envs.Env)} \
                if self.config.device == "cpu" else None  # the GPU's ceilings are the GPU issue's
            with self.clock("probe"):
                if self.config.probe_from:  # validated with the options: this CPU's, under these caps
                    probe.reuse(self.out, self.config.probe_machine, self.say)
                else:
                    probe.record(self.out, self.say, cpu_envs, counts=ceilings.plan_counts(
                        (r.params.get("threads") for r in self.runs), os.cpu_count() or 1))
        if self.config.layers and self.config.executor == "local":  # cached: a rerun adds nothing
            with self.clock("probe"):
                layers.record(self.out, {k: e for k, e in env_by_fw.items() if isinstance(e, envs.Env)},
                              self.runs, self.say)
        if self.config.behaviour:  # cached per environment: a rerun adds nothing
            behaviour.record(self.out, self.say, {k: e for k, e in env_by_fw.items() if isinstance(e, envs.Env)})
        with self.clock("runs"):
            failed |= self.executor.execute(self.context(), jobs)
        store.merge_repeats(self.out, self.runs, self.config.repeats)
        if self.config.device == "cpu" and self.config.executor == "local":
            if self.config.repeats > 1:  # pairs of fresh kernels: this machine's between-run noise (#67)
                noise.add_from_repeats(self.executed_results())
            noise.copy_into(self.out, os.cpu_count() or 1)  # the machine's measured noise, beside its runs
        return failed or store.any_failed(self.out, self.runs)

    def executed_results(self) -> list:
        """The result dicts this command executed (not reused), for the last line's breakdown."""
        runs = self.out / files.RUNS  # a seed's run is a run of its own (seed-<n>/ beside seed 0's)
        rs = (load_result(f) for pattern in (f"*/*/{files.RESULT}", f"*/*/seed-*/{files.RESULT}")
              for f in runs.glob(pattern))
        return [r for r in rs if not r.get("reused")]

    def intact(self) -> str:
        """What survives a failed write: the free space, and the results already written."""
        runs = sorted(p.parent.relative_to(self.out / files.RUNS).as_posix()
                      for p in (self.out / files.RUNS).glob(f"**/{files.RESULT}"))
        try:
            free = f"{shutil.disk_usage(self.out).free / 1024:,.0f} KB free in {self.out}"
        except OSError:
            free = f"free space in {self.out} unknown"
        named = ", ".join(runs[:6]) + (f" and {len(runs) - 6} more" if len(runs) > 6 else "")
        return f"{free}; results intact: {named or 'none yet'}"

    def collect(self, sources) -> int:
        """Run notebooks/collect.ipynb in the runner kernel: report.md + report.html."""
        from .bootstrap import RUNNER_KERNEL, register_runner_kernel
        register_runner_kernel(self.config.env_backend)
        cfg = self.config
        params = {"sources": [str(Path(s).resolve()) for s in sources], "out_dir": str(self.out),
                  "lang": cfg.lang, "title": cfg.title, "author": cfg.author,
                  "notes_file": str(Path(cfg.notes).resolve()) if cfg.notes else "", "name": cfg.name,
                  "command": "python3 run_all.py " + " ".join(_quote(x) for x in self.argv),
                  "threshold": cfg.threshold}
        self.out.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        log = self.out / ".collect.log"
        proc = execute.start_papermill(REPO / "notebooks" / "collect.ipynb", self.out / "collect.ipynb", params,
                                       RUNNER_KERNEL, self.out, log)
        with self.cancel.running(proc, kill_if_cancelled=False):  # a Ctrl-C from now on kills it
            code = proc.wait()
        if code != 0:
            kind, message, _ = execute.notebook_error(self.out / "collect.ipynb", log, code)
            if "No space left" not in message and _nearly_full(self.out):
                # papermill could not write its own output or log there either: name the cause
                message = f"No space left on device ({message})"
            log.unlink(missing_ok=True)
            print(f"frameval: error: the report was not written: {kind}: {message} "
                  f"({self.intact()}; see {self.out / 'collect.ipynb'})", file=sys.stderr, flush=True)
            return EXIT_FAILED
        log.unlink(missing_ok=True)
        self.say(f"frameval: report written in {time.perf_counter() - t0:.1f} s: "
                 f"{self.out / (cfg.name + '.md')} and {self.out / (cfg.name + '.html')}")
        return 0


def _rel(p: Path) -> str:
    try:
        return str(Path(p).resolve().relative_to(REPO))
    except ValueError:
        return str(p)


def _quote(s: str) -> str:
    import shlex
    return shlex.quote(s)


def _nearly_full(folder, below_kb: int = 64) -> bool:
    """Whether `folder`'s file system has under `below_kb` KB free (a write there has likely failed)."""
    try:
        return shutil.disk_usage(folder).free < below_kb * 1024
    except OSError:
        return False

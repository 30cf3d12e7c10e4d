"""`--executor slurm`: the runs the cache says must execute, as ONE Slurm job
array submitted with submitit. Each array element runs the same execute path
as a local run (`execute.execute`, papermill in the run's framework kernel) on
its node, so result.json, the cache key and the machine info (the kernel's,
hence the node's) are those of a local run.

What every node must see, at the same paths (a shared filesystem): the
repository, the runner environment's python, the environment cache
(FRAMEVAL_CACHE_DIR: framework environments and data caches, built on the
login node with --setup-only or by this runner before it submits; a node never
builds one) and the output folder. The batch script checks them first and a
job that misses one fails with one line naming the path.

Bookkeeping lives in the output folder, so a runner that is gone loses
nothing: before submitting, each run's result.json becomes a pending record
(failed, SlurmPending); after submitting, `<run>/slurm.json` names its job.
The node replaces the record with the real result. A job that ends otherwise
(FAILED, TIMEOUT, CANCELLED, PREEMPTED, NODE_FAIL, OUT_OF_MEMORY) is recorded
by `finalize` with Slurm's state and the tail of its log, keeping what the run
measured; `--report-only` calls `finalize` too.

Job states come from squeue (it knows finished jobs for MinJobAge seconds)
and sacct where the cluster keeps accounting. submitit is imported only where
a job is submitted or run.
"""
from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from .. import execute, files
from ..result import load as load_result, store
from ..paths import REPO, user_cache_dir

SLURM_JSON = "slurm.json"
FOLDER = ".slurm"  # submitit's job folder, inside the output folder
ACTIVE = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "REQUEUED", "RESIZING", "SUSPENDED",
          "STAGE_OUT", "SIGNALING", "REQUEUE_FED", "REQUEUE_HOLD", "SPECIAL_EXIT", "STOPPED"}
POLL_S = float(os.environ.get("FRAMEVAL_SLURM_POLL_S", "5"))


class SlurmNodeError(RuntimeError):
    pass


# ----------------------------------------------------------------- parameters
def time_minutes(value: str) -> int:
    """Slurm's time formats (M, M:S, H:M:S, D-H, D-H:M, D-H:M:S) in whole minutes (at least 1)."""
    v = str(value).strip()
    days = 0
    if "-" in v:
        d, v = v.split("-", 1)
        days = int(d)
        parts = [int(x) for x in v.split(":")] + [0, 0]
        h, m, s = parts[0], parts[1], parts[2]
    else:
        parts = [int(x) for x in v.split(":")]
        if len(parts) == 1:
            h, m, s = 0, parts[0], 0
        elif len(parts) == 2:
            h, m, s = 0, parts[0], parts[1]
        else:
            h, m, s = parts[0], parts[1], parts[2]
    total_s = ((days * 24 + h) * 60 + m) * 60 + s
    return max(1, -(-total_s // 60))


def node_paths(out: Path) -> dict:
    """The paths every node must see, by what they are."""
    return {"repository": str(REPO), "runner environment python": sys.executable,
            "environment cache (FRAMEVAL_CACHE_DIR)": str(user_cache_dir()), "output folder": str(out)}


def setup_lines(out: Path) -> list:
    """The batch script's first lines: every shared path checked (one line naming
    a missing one), then the environment a node's run needs."""
    lines = []
    for what, p in node_paths(out).items():
        q = shlex.quote(p)
        lines.append(f'[ -e {q} ] || {{ echo "frameval: error: {what} not visible on node $(hostname): {p} '
                     f'(it must be on a filesystem shared with the login node)" >&2; exit 3; }}')
    env = {"FRAMEVAL_CACHE_DIR": str(user_cache_dir()), "PYTHONPATH": str(REPO)}
    for var in ("FRAMEVAL_JUPYTER_DIR", "FRAMEVAL_ENV_SPECS", "FRAMEVAL_INJECT_FAULT"):
        if os.environ.get(var):
            env[var] = os.environ[var]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in env.items()]
    lines.append(f"cd {shlex.quote(str(REPO))}")
    return lines


def executor_parameters(opts, out: Path) -> dict:
    """submitit SlurmExecutor parameters from the --slurm-* options (a SlurmConfig)."""
    p = {"job_name": "frameval", "time": time_minutes(opts.time or "60"),
         "exclusive": opts.exclusive is not False, "setup": setup_lines(out),
         "signal_delay_s": 30, "use_srun": False}
    if opts.partition:
        p["partition"] = opts.partition
    if opts.account:
        p["account"] = opts.account
    if opts.cpus_per_task:
        p["cpus_per_task"] = int(opts.cpus_per_task)
    if opts.gpus_per_task:
        p["gpus_per_task"] = int(opts.gpus_per_task)
    if opts.array_parallelism:
        p["array_parallelism"] = int(opts.array_parallelism)
    if not p["exclusive"]:
        p.pop("exclusive")
    extra = opts.extra_options()
    if extra:
        p["additional_parameters"] = extra
    return p


def make_executor(opts, out: Path):
    import submitit
    ex = submitit.SlurmExecutor(folder=str(out / FOLDER), python=shlex.quote(sys.executable), max_num_timeout=0)
    ex.update_parameters(**executor_parameters(opts, out))
    return ex


def sbatch_lines(opts, out: Path, n: int) -> list:
    """The #SBATCH lines the array is submitted with (submitit's own text)."""
    params = executor_parameters(opts, out)
    try:
        from submitit.slurm.slurm import _make_sbatch_string
        text = _make_sbatch_string(command="python -m submitit.core._submit", folder=str(out / FOLDER),
                                   map_count=max(n, 1), **params)
        return [ln for ln in text.splitlines() if ln.startswith("#SBATCH")]
    except Exception:  # noqa: BLE001 - submitit's private helper moved: our own rendering
        return [f"#SBATCH --{k.replace('_', '-')}={v}" for k, v in params.items() if k != "setup"]


# ----------------------------------------------------------------- states
def _run(cmd) -> str:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return p.stdout if p.returncode == 0 else ""


def job_states(job_ids) -> dict:
    """{job id: {"state", "elapsed", "node"}} for the jobs Slurm still knows
    (squeue, then sacct for the ones squeue has forgotten)."""
    ids = sorted({str(j) for j in job_ids})
    if not ids:
        return {}
    top = sorted({j.split("_")[0] for j in ids})
    out = {}
    text = _run(["squeue", "-h", "-r", "--states=all", "-j", ",".join(top), "-o", "%i|%T|%M|%N|%r"])
    for line in text.splitlines():
        f = line.strip().split("|")
        if len(f) >= 5 and f[0] in ids:
            out[f[0]] = {"state": f[1].split()[0], "elapsed": f[2], "node": f[3],
                         "reason": f[4] if f[4] not in ("None", "") and f[1] == "PENDING" else ""}
    missing = [j for j in ids if j not in out]
    if missing:
        text = _run(["sacct", "-n", "-P", "-X", "-j", ",".join(sorted({j.split("_")[0] for j in missing})),
                     "-o", "JobID,State,Elapsed,NodeList"])
        for line in text.splitlines():
            f = line.strip().split("|")
            if len(f) >= 4 and f[0] in missing:
                out[f[0]] = {"state": f[1].split()[0], "elapsed": f[2], "node": f[3]}
    return out


def cancel(job_ids) -> None:
    top = sorted({str(j).split("_")[0] for j in job_ids})
    if top:
        subprocess.run(["scancel", *top], capture_output=True, text=True, timeout=60)


# ----------------------------------------------------------------- the node
def node_info() -> dict:
    info = {"hostname": socket.gethostname(), "slurm_node": os.environ.get("SLURMD_NODENAME", ""),
            "job_id": (f"{os.environ['SLURM_ARRAY_JOB_ID']}_{os.environ['SLURM_ARRAY_TASK_ID']}"
                       if os.environ.get("SLURM_ARRAY_JOB_ID") else os.environ.get("SLURM_JOB_ID", "")),
            "partition": os.environ.get("SLURM_JOB_PARTITION", ""),
            "cpus_on_node": os.environ.get("SLURM_CPUS_ON_NODE", ""), "cpu": "", "gpus": []}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        p = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                           text=True, timeout=30)
        info["gpus"] = [x.strip() for x in p.stdout.splitlines() if x.strip()] if p.returncode == 0 else []
    except (OSError, subprocess.TimeoutExpired):
        pass
    if os.environ.get("CUDA_VISIBLE_DEVICES"):
        info["cuda_visible_devices"] = os.environ["CUDA_VISIBLE_DEVICES"]
    return info


def _end_with_the_job(cancel) -> None:
    """Slurm ends a job (scancel, its time limit) with SIGTERM to the processes
    it tracks. The run's papermill child and its kernel lead sessions of their
    own, which a node without cgroups (proctrack/linuxproc) loses once their
    parent is gone: they trained on, for hours. So the run is killed first,
    kernel included, then this process ends as SIGTERM would have ended it;
    the runner's finalize records Slurm's state, as before."""
    def handler(signum, frame):
        cancel.cancel()
        os._exit(128 + signum)
    signal.signal(signal.SIGTERM, handler)


def run_on_node(task: dict) -> str:
    """One array element: the local execute path, on the node. Returns the status."""
    try:  # Slurm's time limit decides, not submitit's requeue-on-signal
        from submitit.slurm.slurm import SlurmJobEnvironment
        sig = SlurmJobEnvironment.USR_SIG
        signal.signal(getattr(signal, "SIG" + sig) if isinstance(sig, str) else sig, signal.SIG_IGN)
    except (ImportError, AttributeError, ValueError, TypeError):
        pass
    host = socket.gethostname()
    for what, p in (("framework environment python", task["env_python"]),
                    ("kernel spec", task["kernel_json"]), ("notebook", str(task["run"].notebook))):
        if p and not Path(p).exists():
            line = (f"frameval: error: {what} not visible on node {host}: {p} (build it with --setup-only "
                    "where the cluster's shared filesystem is mounted; a node never builds one)")
            print(line, file=sys.stderr, flush=True)
            raise SlurmNodeError(line)
    d = Path(task["dir"])
    info = node_info()
    if task["run"].device == "gpu" and not info["gpus"]:  # recorded as this run's failure by finalize
        from ..gpus import LOOKED_FOR, visible_gpus
        if not visible_gpus():
            line = f"frameval: error: --device gpu: no NVIDIA GPU visible on node {host} (looked for {LOOKED_FOR})"
            print(line, file=sys.stderr, flush=True)
            raise SlurmNodeError(line)
    cancel = execute.Cancel()
    _end_with_the_job(cancel)
    outcome = execute.execute(task["run"], d, task["kernel"], task["parts"], timeout=task["timeout"],
                              env_fields=task["env_fields"], extra={"slurm": dict(info, state="COMPLETED")},
                              cancel=cancel)
    print(f"frameval: {task['run'].name} on {host}: {outcome.status} in {outcome.seconds:.1f} s", flush=True)
    return outcome.status


# ----------------------------------------------------------------- the runner


def finalize(d: Path, state: dict | None, run=None) -> str | None:
    """Record a finished job's outcome in `d`; returns the terminal state, or
    None while the job is still active (or was already finalized)."""
    sj = d / SLURM_JSON
    meta = files.read_json(sj, None)
    if not isinstance(meta, dict):
        return None
    if meta.get("final"):
        return meta.get("state")
    st = (state or {}).get("state", "")
    if st in ACTIVE:
        return None
    p = d / store.RESULT
    res = load_result(p) if p.exists() else None
    node_done = bool(res and (res.get("slurm") or {}).get("job_id") == meta["job_id"])
    if not st:  # Slurm forgot the job (no accounting): the node's own record decides
        st = "COMPLETED" if node_done else "UNKNOWN"
    if not (st == "COMPLETED" and node_done):
        logs = "\n".join(x for x in (files.tail(meta.get("stderr", "")), files.tail(meta.get("stdout", ""))) if x)
        node_line = next((ln for ln in logs.splitlines()[::-1] if ln.startswith("frameval: error:")), "")
        exc = next((ln for ln in files.tail(meta.get("stderr", ""), 60).splitlines()[::-1]
                    if re.match(r"^[A-Za-z_.]+(Error|Exception|Interrupt)\b", ln)), "")
        pm = files.tail(d / "papermill.log", 15)
        where = (state or {}).get("node") or (res or {}).get("slurm", {}).get("hostname", "") or "?"
        msg = node_line or (f"Slurm job {meta['job_id']} ended {st} on node {where} after "
                            f"{(state or {}).get('elapsed', '?')}" + (f": {exc}" if exc else "") +
                            (" (the job finished but wrote no result)" if st == "COMPLETED" else ""))
        partial = res if node_done else store.load_partial(d)
        if partial and partial.get("status") == "failed" and partial.get("error", {}).get("type") == "SlurmPending":
            partial = None
        if run is None:
            run = _RunLike(meta)
        extra = {"slurm": dict((res or {}).get("slurm") or {}, job_id=meta["job_id"], state=st,
                               node=(state or {}).get("node", ""), elapsed=(state or {}).get("elapsed", ""))}
        if meta.get("cache_parts"):  # never reused: a failed status always executes again
            extra.update(cache_parts=meta["cache_parts"], cache_key=execute.cache_key(meta["cache_parts"]))
        store.record_failure(d, run, st if st != "COMPLETED" else "SlurmNoResult", msg,
                               f"--- Slurm log ({meta.get('stderr', '')}) ---\n{logs}\n"
                               f"--- papermill.log ---\n{pm}", partial, **extra)
    meta.update(final=True, state=st)
    files.atomic_write_json(sj, meta)
    return st


class _RunLike:
    def __init__(self, meta):
        self.framework, self.workload, self.mode = meta["framework"], meta["workload"], meta["mode"]
        self.device, self.params = meta.get("device", "cpu"), meta.get("params", {})


def pending_dirs(*outs) -> list:
    return [p.parent for o in outs for p in sorted(Path(o).glob("runs/*/*/slurm.json"))
            + sorted(Path(o).glob("runs/*/*/r*/slurm.json"))]


def finalize_folders(outs, say=print) -> None:
    """--report-only: record jobs that ended after the runner was gone."""
    dirs = pending_dirs(*outs)
    metas = {}
    for d in dirs:
        m = files.read_json(d / SLURM_JSON, None)
        if not isinstance(m, dict):
            continue
        if not m.get("final"):
            metas[d] = m
    if not metas:
        return
    states = job_states(m["job_id"] for m in metas.values())
    for d, m in metas.items():
        st = finalize(d, states.get(m["job_id"]))
        say(f"frameval: slurm job {m['job_id']} ({d.parent.name}/{d.name}): "
            f"{st or states.get(m['job_id'], {}).get('state', '?') + ' (still in the queue)'}")


class Executor:
    name = "slurm"

    def dry_run(self, ctx, n_execute: int) -> None:
        say = ctx.say
        say(f"frameval: --executor slurm: one job array of {n_execute} element(s) "
            f"({'nothing to submit' if not n_execute else 'one per run that executes'}), submitted with:")
        for ln in sbatch_lines(ctx.options, ctx.out, n_execute):
            say(f"  {ln}")
        say("frameval: paths every node must see (shared filesystem, same paths):")
        for what, p in node_paths(ctx.out).items():
            say(f"  {what}: {p}")

    def execute(self, ctx, jobs) -> bool:
        """The jobs as one Slurm job array; True if any failed."""
        if not jobs:
            ctx.say("frameval: slurm: nothing to submit (every run reused)")
            return False
        if ctx.cancel.is_set():
            return True
        for job in jobs:
            ctx.say(f"{job.label}: submitting ({job.why})")
        submitted = _submit(ctx, jobs)
        if submitted is None:
            return True
        failed = _wait(ctx, jobs, submitted, time.monotonic())
        ctx.say(f"frameval: {len(jobs)} run(s) executed on Slurm, {ctx.total - len(jobs)} reused or skipped")
        return failed


def _task(job, timeout) -> dict:
    """What one array element needs on its node (pickled by submitit)."""
    return {"run": job.run, "dir": str(job.dir), "kernel": job.kernel, "parts": job.parts, "timeout": timeout,
            "env_fields": job.env_fields, "env_python": job.env_python, "kernel_json": job.kernel_json}


def _submit(ctx, jobs):
    """Pending records first (a runner that is gone leaves them visible), then
    the array; the submitted jobs, or None when sbatch refused (every run recorded)."""
    for job in jobs:
        job.dir.mkdir(parents=True, exist_ok=True)
        for stale in (SLURM_JSON, store.PARTIAL):
            (job.dir / stale).unlink(missing_ok=True)
        store.record_failure(job.dir, job.run, "SlurmPending", "submitted to Slurm; not finished yet")
    os.environ["FRAMEVAL_CACHE_DIR"] = str(user_cache_dir())
    ex = make_executor(ctx.options, ctx.out)
    try:
        submitted = ex.map_array(run_on_node, [_task(job, ctx.timeout) for job in jobs])
    except Exception as e:  # noqa: BLE001 - sbatch refused: every run recorded, the report still written
        msg = str(e).strip().splitlines()
        line = next((ln for ln in msg if "error" in ln.lower()), msg[0] if msg else repr(e))
        ctx.say(f"frameval: slurm: sbatch failed: {line}")
        for job in jobs:
            store.record_failure(job.dir, job.run, "SlurmSubmitError", line, "\n".join(msg))
        return None
    for job, sj in zip(jobs, submitted):
        run = job.run
        files.atomic_write_json(job.dir / SLURM_JSON, {
            "job_id": sj.job_id, "submitted": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "stdout": str(sj.paths.stdout), "stderr": str(sj.paths.stderr), "folder": str(ctx.out / FOLDER),
            "framework": run.framework, "workload": run.workload, "mode": run.mode, "device": run.device,
            "params": run.params, "cache_parts": job.parts})
    ids = [sj.job_id for sj in submitted]
    ctx.say(f"frameval: slurm: submitted job array {ids[0].split('_')[0]} with {len(ids)} element(s); "
            f"logs in {ctx.out / FOLDER}")
    return submitted


def _wait(ctx, jobs, submitted, t0) -> bool:
    say = ctx.say
    last, last_line, failed, cancelled = {}, 0.0, False, False
    left = {sj.job_id: (job.label, job.run, job.dir) for job, sj in zip(jobs, submitted)}
    while left:
        if ctx.cancel.is_set() and not cancelled:
            say(f"frameval: cancelling Slurm job(s) {', '.join(sorted({j.split('_')[0] for j in left}))} (scancel)")
            cancel(left)
            cancelled = time.monotonic()
        states = job_states(left)
        for jid, (label, run, d) in list(left.items()):
            st = states.get(jid)
            _show_state(say, label, jid, st, last)
            if cancelled and time.monotonic() - cancelled > 60 and st is None:
                st = {"state": "CANCELLED"}
            done = finalize(d, st, run) if (st is not None or _gone(d)) else None
            if done is None:
                continue
            failed |= _show_end(say, label, d, done, st, t0)
            del left[jid]
        if not left:
            break
        if time.monotonic() - last_line > 60:
            last_line = time.monotonic()
            summary = ", ".join(f"{k} {v}" for k, v in sorted(_count(last[j] for j in left).items()))
            say(f"frameval: slurm: waiting for {len(left)} job(s): {summary} (elapsed {_fmt(time.monotonic() - t0)})")
        if not cancelled:
            ctx.cancel.event.wait(POLL_S)  # Ctrl-C ends the wait at once
        else:
            time.sleep(POLL_S)
    return failed


def _show_state(say, label, jid, st, last) -> None:
    shown = (st or {}).get("state", "UNKNOWN") + ((st or {}).get("reason") and f" {st['reason']}" or "")
    if shown != last.get(jid):
        last[jid] = shown
        say(f"{label}: slurm {jid} {shown}" + (f" on {st['node']}" if st and st.get("node") else "")
            + (f" ({st['elapsed']})" if st and st.get("elapsed") else ""))


def _show_end(say, label, d, done, st, t0) -> bool:
    """The finished job's line; True if its run failed."""
    r = load_result(d / store.RESULT)
    ok = r.get("status") == "ok"
    err = r.get("error", {})
    say(f"{label}: {'ok' if ok else 'FAILED (' + str(err.get('type', '')) + ': ' + str(err.get('message', ''))[:160] + ')'}"
        f" (slurm {done}, elapsed {(st or {}).get('elapsed', '?')}, total {_fmt(time.monotonic() - t0)})")
    return not ok


def _gone(d: Path) -> bool:
    """Slurm knows nothing of the job and the node has recorded it: finished."""
    try:
        meta = files.read_json(d / SLURM_JSON)
        r = load_result(d / store.RESULT)
    except (OSError, ValueError):
        return False
    return (r.get("slurm") or {}).get("job_id") == meta.get("job_id")


def _count(states) -> dict:
    out = {}
    for s in states:
        out[s] = out.get(s, 0) + 1
    return out


def _fmt(s: float) -> str:
    s = int(round(s))
    return f"{s // 60}:{s % 60:02d}"


__all__ = ["Executor", "finalize_folders", "run_on_node", "job_states", "time_minutes"]


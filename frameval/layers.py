"""Every layer of each workload's step, timed in each framework at the runs'
own shapes (#66, `--layers`): what a run is set against instead of one GEMM
figure, and the report's per-layer tables (report/layers.py).

For each distinct (framework, workload, batch, threads, mode) among the
plan's CPU runs, `frameval/envscripts/layers.py` times the workload's layers
(its record's `ops`) in the framework's environment (its part
`frameworks/<fw>/layers.py`), one child process each, staged like the GEMM
children so that every layer is timed alone. Cached per environment, machine,
script and workload record (frameval/envscripts/__init__.py); a figure taken
busy is not cached. Written to `<out>/layers.json`.

A step's kernel time is the sum over its layers and their uses of
times x (the fastest repeat less the framework's cost of one empty call): what that
step asks of its framework's kernels at its shapes, without the per-call
dispatch that a step compiled whole pays once.
Standard library only.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from . import cpu, envscripts, files, frameworks, idle, workloads
from .exits import BadInput

LAYERS = "layers.json"  # <out>/layers.json
MODULE = "frameval.envscripts.layers"
ALSO = ("frameval.idle", "frameval.nb.measure", "frameval.envscripts.__init__", "frameval.workloads.base")


def supported(framework: str) -> bool:
    return frameworks.has_part(framework, "layers")


def timed(workload: str) -> bool:
    wl = workloads.find(workload)
    return wl is not None and wl.ops is not None


def check(frameworks_: list, workloads_: list) -> None:
    """--layers with a framework or workload that has no layer timing: one line, exit 2."""
    fws = sorted({f for f in frameworks_ if not supported(f)})
    wls = sorted({w for w in workloads_ if not timed(w)})
    if fws or wls:
        what = ", ".join([f"framework {f}" for f in fws] + [f"workload {w}" for w in wls])
        raise BadInput(f"--layers: no layer timing for {what} (frameval/frameworks/<fw>/layers.py, the workload "
                       "record's ops); leave --layers out or leave those out")


def _sources(framework: str, workload: str) -> tuple:
    """The modules whose change measures again: the script's, the framework's part, the workload's record."""
    folder = Path(workloads.__file__).parent / workload
    record = tuple(f"frameval.workloads.{workload}.{p.stem}" for p in sorted(folder.glob("*.py")))
    return ALSO + frameworks.part_modules(framework, ("layers",)) + record


def keys(runs) -> list:
    """The distinct (fw_key, framework, workload, batch, threads, mode) of the plan's CPU runs."""
    cores = os.cpu_count() or 1
    out = []
    for r in runs:
        if r.device != "cpu" or not timed(r.workload) or not supported(r.framework):
            continue
        k = (r.fw_key, r.framework, r.workload, int(r.params.get("batch_size") or 0),
             int(r.params.get("threads") or 0) or cores, r.mode)
        if k not in out:
            out.append(k)
    return out


# glibc's malloc hands a large block back to the kernel when it is freed, and the next one of that
# size is faulted in page by page, at a cost set by the allocator's history (its threshold moves as
# blocks are freed): one torch convolution measured 0.75 ms or 2.9 ms in two processes, ~1,800 page
# faults a call. A layer is timed with blocks kept, so that its time is its kernels'; the faults a
# run's step pays stay in its time outside the layers. 32 MiB is the largest threshold every
# 64-bit glibc accepts (a larger one is refused, and the fixed default of 128 KiB would apply). A
# value of the user's own wins.
STEADY_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(1 << 31)}

# A kernel's speed also moves between processes, where no repeat inside one can see it: MegEngine's
# Conv2d(6, 16, 5) at batch 64 (forward and both gradients) had a fastest repeat of 44 to 77 ms over
# twelve processes on one idle 2-core AMD EPYC, single-threaded and pinned too. A run's step draws its
# process like any other, so a layer's time is its fastest repeat over PROCESSES children (each cached
# on its own): a kernel time read from one slow process would exceed a step that drew a fast one.
PROCESSES = 2


def _call(env, framework, workload, batch, threads, mode, process: int = 0) -> dict:
    steady = {k: os.environ.get(k) or v for k, v in STEADY_MALLOC.items()}
    return dict(env=env, module=MODULE, args=[framework, workload, batch, threads, mode, process],
                env_vars=dict({v: threads for v in cpu.THREAD_VARS}, **steady), timeout=900,
                also=_sources(framework, workload))


def _fastest_use(a: dict, b: dict) -> dict:
    """One use's figures over two processes: the fastest repeat of either (its median and spread
    with it), both processes' fastest kept; an error in one process is the use's only where both fail."""
    ok = [u for u in (a, b) if _fastest(u) is not None]
    if not ok:
        return a
    best = min(ok, key=_fastest)
    return dict(best, by_process=[_fastest(u) for u in (a, b)], repeats=sum(u.get("repeats") or 0 for u in ok))


def merge_processes(entries: list) -> dict:
    """The processes' lines of one framework x workload x mode as one entry (`merge_processes`
    of one line is that line): every use, the built-ins beside substitutes and the empty call at
    their fastest over the processes; busy or uncached if any process was."""
    out = dict(entries[0])
    for e in entries[1:]:
        if "error" in e or "error" in out:
            out = out if "error" in e else e
            continue
        rows = []
        for r1, r2 in zip(out.get("ops") or [], e.get("ops") or []):
            row = dict(r1, uses=[_fastest_use(u1, u2) for u1, u2 in zip(r1["uses"], r2["uses"])])
            if "builtin" in r1 and "builtin" in r2:
                row["builtin"] = [_fastest_use(u1, u2) for u1, u2 in zip(r1["builtin"], r2["builtin"])]
            rows.append(row)
        out = dict(out, ops=rows, call_floor=_fastest_use(out.get("call_floor") or {}, e.get("call_floor") or {}),
                   busy=out.get("busy") or e.get("busy"), cache=bool(out.get("cache")) and bool(e.get("cache")),
                   cached=bool(out.get("cached")) and bool(e.get("cached")),
                   timing_s=round((out.get("timing_s") or 0) + (e.get("timing_s") or 0), 2))
    return dict(out, processes=len(entries))


def plan_line(env_by_fw: dict, runs) -> str:
    """What --layers would do, for --dry-run: each framework x workload x mode cached or to be timed."""
    todo, cached, unbuilt = [], [], []
    for k in keys(runs):
        env, name = env_by_fw.get(k[0]), f"{k[0]} {k[2]} {k[5]}"
        if not getattr(env, "ready", False):
            unbuilt.append(name)
            continue
        paths = [envscripts.cache_path(env, c["module"], c["args"], c["env_vars"], c["also"])
                 for c in (_call(env, *k[1:], process=i) for i in range(PROCESSES))]
        (cached if all(p.exists() for p in paths) else todo).append(name)
    return ("frameval: --layers: " + (f"time every layer of {', '.join(todo)}" if todo else "nothing to time")
            + (f"; cached: {', '.join(cached)}" if cached else "")
            + (f"; environment not built yet: {', '.join(unbuilt)}" if unbuilt else ""))


def measure(env_by_fw: dict, runs, say=print) -> dict:
    """{"entries": [one script line per key, with "fw_key"], "seconds", "load_before", ...}."""
    t0, load = time.perf_counter(), idle.load()
    todo = [(k, env_by_fw.get(k[0])) for k in keys(runs)]
    todo = [(k, e) for k, e in todo if hasattr(e, "python")]  # one that did not build: its runs failed already
    calls = [_call(e, *k[1:], process=i) for k, e in todo for i in range(PROCESSES)]
    got = envscripts.run_staged(calls, batch=max(2, idle.cores()))
    entries = [dict(merge_processes(got[j * PROCESSES:(j + 1) * PROCESSES]), fw_key=k[0], framework=k[1],
                    workload=k[2], batch=k[3], threads=k[4], mode=k[5]) for j, (k, _) in enumerate(todo)]
    out = {"entries": entries, "load_before": load, "load_after": idle.load(),
           "seconds": round(time.perf_counter() - t0, 2), "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    fresh = [e for e in entries if not e.get("cached")]
    bad = [f"{e['fw_key']} {e['workload']} {e['mode']}" for e in entries if "error" in e]
    say(f"frameval: every layer timed at the runs' shapes, each in {PROCESSES} processes: {len(entries)} "
        f"framework x workload x mode in "
        f"{out['seconds']:.1f} s ({len(fresh)} measured, {len(entries) - len(fresh)} cached; load {load})"
        + (f"; could not run: {', '.join(bad)}" if bad else ""))
    return out


def record(out_dir, env_by_fw: dict, runs, say=print) -> dict:
    """Measure and write `<out_dir>/layers.json`."""
    m = measure(env_by_fw, runs, say)
    files.atomic_write_json(Path(out_dir) / LAYERS, m)
    return m


def read(folder) -> dict | None:
    m = files.read_json(Path(folder) / LAYERS, None)
    return m if isinstance(m, dict) else None


# ------------------------------------------------------------------ derived figures (the report's)
def use_flops(op: dict, ig: bool, wg: bool) -> int:
    """FLOPs per sample of one use of a layer: its forward's products, again for
    the input gradient (twice for attention's two activation operands) and for
    the weight gradient, each where the use asks for it (frameval/flops.py's rule).
    An LSTM's backward runs through its recurrence whatever its input wants: the
    gradient of h for every step but the first (whose h is the zero state)."""
    f = 2 * (op.get("macs") or 0)
    kind = op.get("kind")
    if kind == "recurrent":
        (steps, n_in), hidden = op["shape"], op["args"]["hidden"]
        through_h = 2 * (steps - 1) * hidden * 4 * hidden if ig or wg else 0
        return f + through_h + (2 * steps * n_in * 4 * hidden if ig else 0) + (f if wg else 0)
    operands = 2 if kind == "attention" else 1
    return f * (1 + (operands if ig else 0) + (1 if wg and kind != "attention" else 0))


def floor_s(entry: dict) -> float:
    """The entry's cost of one call with next to no work in it (0 where not measured)."""
    f = (entry or {}).get("call_floor") or {}
    return _fastest(f) or 0.0


def _fastest(cell: dict):
    """A timed use's kernel time: its fastest repeat (an older record's median where it has no
    best). Whatever else the machine does only adds time to a repeat, so the fastest is the
    kernel's own; the median moved by 1.5x between two sittings for MindSpore's transposed
    convolution (38.4 and 67.0 ms, spread 0.79 over 7 repeats) where the fastest did not."""
    return cell.get("best_s", cell.get("median_s"))


def op_time(row: dict, field: str = "uses", floor: float = 0.0) -> float | None:
    """Seconds a step spends in one layer's kernels: times x (the fastest repeat less the
    per-call floor) over its uses; None where a use failed."""
    uses = row.get(field) or []
    if not uses or any(_fastest(u) is None for u in uses):
        return None
    return sum(u["times"] * max(_fastest(u) - floor, 0.0) for u in uses)


def op_flops(row: dict) -> int:
    """FLOPs per sample the step asks of one layer, over its uses."""
    return sum(u["times"] * use_flops(row, u["input_grad"], u["weight_grad"]) for u in row.get("uses") or [])


def step_kernel_s(entry: dict) -> float | None:
    """The sum of a framework's layer times for one step; None where any layer failed."""
    ts = [op_time(r, floor=floor_s(entry)) for r in entry.get("ops") or []]
    return None if not ts or any(t is None for t in ts) else sum(ts)


def same_layers(entry: dict, workload: str, params: dict) -> bool:
    """Whether the entry timed the layers a run with these parameters steps through (the timing
    takes the record's default layers: an LSTM's, never a GRU run's, -p lstm.cell=gru)."""
    wl = workloads.find(workload)
    if wl is None or wl.ops is None:
        return False
    return [o.get("name") for o in entry.get("ops") or []] == [o.name for o in wl.ops(params or {})]


def entry_for(m: dict | None, framework: str, workload: str, batch, threads, mode, version=None) -> dict | None:
    """The entry a run is set against: its framework (its version where several
    were timed), workload, batch, threads and mode; None where none was timed."""
    same = [e for e in (m or {}).get("entries") or [] if "error" not in e and (
        e.get("framework"), e.get("workload"), e.get("batch"), e.get("threads"), e.get("mode")) == (
        framework, workload, batch, threads, mode)]
    exact = [e for e in same if version and e.get("version") == version]
    return (exact or same or [None])[0]

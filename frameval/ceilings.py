"""Each framework's own GEMM ceiling: its float32 matrix product on 1 thread and
on every core, measured in its own environment exactly as its runs see it
(`frameval/envscripts/gemm.py` and its frameworks/<fw>/gemm.py, through `frameval/envscripts/__init__.py`, cached per
environment and machine), and the machine's figure as the best of numpy's BLAS
and every framework's product.

The report shows these as the machine's figures (its GEMM table) and takes
the machine's peak from them. It builds no share, alert or diagnosis of a run
on a framework's GEMM: a framework's convolutions, BatchNorm and recurrent
cells may run on other libraries than its matrix product (MXNet: its BLAS
for the product, oneDNN for convolutions), so one product is no ceiling for a
workload (#66). A run is set against its own framework's layer times instead
(frameval/layers.py).
"""
from __future__ import annotations

from . import cpu, envscripts, frameworks, idle
from .catalog import framework_name

MODULE = "frameval.envscripts.gemm"
# What the script imports (and the framework's gemm and support parts), and the runner's
# side that starts and stages its children (a figure timed beside a waiting child that
# was not stopped can read low: #50): a change measures again.
ALSO = ("frameval.idle", "frameval.nb.measure", "frameval.envscripts.__init__")


def plan_counts(thread_params, threads_all: int) -> list:
    """The thread counts whose GEMM a plan's runs use (the machine's peak for a run
    is at its thread count: report/peak.py, peak_for): 1 where a run is on one thread (or the machine has one core),
    all cores where a run is on more. `thread_params`: each run's `threads`
    parameter (0 or None: all cores)."""
    ts = [int(t or 0) for t in thread_params]
    if threads_all <= 1:
        return [1]
    return [n for n, used in ((1, any(t == 1 for t in ts)), (threads_all, any(t != 1 for t in ts))) if used] or [1]


def measure(env_by_fw: dict, threads_all: int, say=print, counts=None) -> dict:
    """{fw_key: {"gflops_1", "gflops_all", "gflops_best", "threads_best", "busy",
    "figures", "op", "version", "isa_caps", "cached", "error"}} for every
    environment in `env_by_fw` (the CPU's) that built. The ceiling is the best
    over the thread counts (a BLAS can be slower on 2 threads than on 1); a
    figure measured busy names why in "busy" and is never the ceiling.

    The children start a batch at a time (one per core, at least two: a
    framework's two thread counts together) and time one after the other:
    their start-ups, 1.2-4.4 s each on 2 cores and most of the probe's time,
    share the cores, while every product is timed alone (envscripts.run_staged).

    `counts`: the thread counts to measure (`plan_counts`: those the plan's
    runs use; None: 1 and all). A framework's 1-thread product beside a plan
    whose runs all use every core took half the probe's framework time (16 s of
    32 on 2 cores) for a figure no run is set against; a count left out is
    None in the entry, named in "not_measured"."""
    built = [(key, env) for key, env in sorted(env_by_fw.items())
             if hasattr(env, "python")]  # one that did not build: its runs are recorded failed
    counts = [1] if threads_all == 1 else sorted(set(counts or [1, threads_all]))
    calls = [_call(env, key.split("==")[0], n) for key, env in built for n in counts]
    got = iter(_again_where_busy(calls, envscripts.run_staged(calls, batch=max(2, threads_all))))
    out = {key: _one(key.split("==")[0], {n: next(got) for n in counts}, threads_all) for key, _ in built}
    if out:
        fresh = [k for k, e in out.items() if not e.get("cached")]
        busy = [k for k, e in out.items() if e.get("busy")]  # why, figure by figure: in the record
        labels = ([("gflops_1", "1")] * (1 in counts)
                  + [("gflops_all", str(threads_all))] * (threads_all in counts and threads_all > 1))
        say(f"frameval: each framework's own float32 GEMM: " + ", ".join(
            f"{k} {'/'.join(_gf(e.get(f)) for f, _ in labels)}" for k, e in out.items())
            + f" GFLOP/s on {'/'.join(n for _, n in labels)} thread{'s' if labels[-1][1] != '1' else ''}"
            + f" ({'measured: ' + ', '.join(fresh) if fresh else 'all cached'}"
            + f", {sum(e.get('seconds') or 0 for e in out.values()):.1f} s timing)"
            + (f"; not idle, so no ceiling: {', '.join(busy)}" if busy else ""))
    return out


def _again_where_busy(calls: list, figures: list) -> list:
    """A figure measured busy is measured once more, in a fresh child: on an idle
    2-core EPYC (other processes 0-0.3% of the CPU) MindSpore's 2-thread product
    failed to repeat within 3% in one process of two (spread 30%), and the report
    called the machine busy. The second figure stands where it is idle; where it is
    busy too, the first one's verdict stands. Both are kept ("first_busy")."""
    out = []
    for call, got in zip(calls, figures):
        # only where its own repeats made it busy: other processes that held the cores would hold them still
        if got.get("busy") and (got.get("other_share") or 0.0) <= idle.BUSY_OTHER_SHARE:
            again = envscripts.run(**call)  # a busy figure is never cached: this measures
            if not again.get("busy") and not again.get("error"):
                got = dict(again, first_busy=got["busy"],
                           seconds=round((again.get("seconds") or 0) + (got.get("seconds") or 0), 2))
        out.append(got)
    return out


def _one(framework: str, by_count: dict, threads_all: int) -> dict:
    """One framework's entry from its figures by thread count ({1: dict, threads_all: dict})."""
    entry: dict = {"framework": framework, "figures": {}, "seconds": 0.0}
    for label, n in (("1", 1), ("all", threads_all)):
        if label == "all" and n == 1:
            entry["gflops_all"] = entry.get("gflops_1")
            entry["bf16_gflops_all"] = entry.get("bf16_gflops_1")
            continue
        if n not in by_count:  # no run of the plan on this count (measure's `counts`)
            entry[f"gflops_{label}"] = None
            entry.setdefault("not_measured", []).append(str(n))
            continue
        got = by_count[n]
        entry["seconds"] = round(entry["seconds"] + (got.get("seconds") or 0), 2)
        if "error" in got:
            entry["error"] = got["error"]
            entry[f"gflops_{label}"] = None
            continue
        entry[f"gflops_{label}"] = got["gflops"]
        b16 = got.get("bf16") or {}
        entry[f"bf16_gflops_{label}"] = b16.get("gflops") if b16 and not b16.get("busy") else None
        if b16:
            entry["bf16_op"] = b16.get("op")
        entry["figures"][str(n)] = {k: got.get(k) for k in ("gflops", "repeats", "spread", "load", "other_share", "busy")}
        if got.get("first_busy"):  # measured again: the first figure's verdict
            entry["figures"][str(n)]["first_busy"] = got["first_busy"]
        entry.update(op=got.get("op"), version=got.get("version"), isa_caps=got.get("isa_caps") or {},
                     cached=got.get("cached", False) and entry.get("cached", True))
    figs = entry["figures"]
    busy = [f"{n} thread{'s' if n != '1' else ''}: {f['busy']}" for n, f in figs.items() if f.get("busy")]
    entry["busy"] = "; ".join(busy) or None
    idle_figs = [(f["gflops"], int(n)) for n, f in figs.items() if not f.get("busy") and f.get("gflops")]
    # the best over thread counts, and only where every count was idle: a busy one might have been the best
    entry["gflops_best"], entry["threads_best"] = max(idle_figs) if idle_figs and not busy else (None, None)
    return entry


def _call(env, framework: str, threads: int, size: int | None = None, use_cache: bool = True) -> dict:
    """envscripts.run's arguments for one figure of the framework's own GEMM script."""
    return dict(env=env, module=MODULE, args=[framework, threads, *([size] if size else [])],
                env_vars={v: threads for v in cpu.THREAD_VARS}, use_cache=use_cache,
                also=ALSO + frameworks.part_modules(framework, ("gemm", "support")))


def gemm_figure(env, framework: str, threads: int, size: int | None = None, use_cache: bool = True) -> dict:
    """One figure of the framework's own GEMM script in its environment on
    `threads` (envscripts.run's dict: "gflops", "repeats", ..., or "error"),
    at the script's own size unless `size` is given; cached unless `use_cache` is False."""
    return envscripts.run(**_call(env, framework, threads, size, use_cache))


def _gf(v) -> str:
    return "n/a" if v is None else f"{v:,.0f}"


def best(numpy_figure, numpy_name: str, frameworks: dict, field: str) -> tuple:
    """(GFLOP/s, library) of the fastest product at one thread count: numpy's or a framework's."""
    op = "bf16_op" if field.startswith("bf16") else "op"
    cands = [(numpy_figure, numpy_name)] + [(e.get(field), f"{framework_name(e['framework'])} {e.get(op) or ''}"
                                             .strip()) for e in frameworks.values()]
    cands = [(v, n) for v, n in cands if isinstance(v, (int, float))]
    return max(cands) if cands else (None, None)


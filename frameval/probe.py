"""The machine's own limit, measured once per report in the runner environment
(numpy + standard library, a few seconds): peak float32 GFLOP/s of a large
matrix product through numpy's BLAS on 1 thread and on all threads, and the
memory bandwidth of a large copy. The pipeline writes it to `<out>/machine.json`
before the runs; the report sets every run's achieved GFLOP/s against it.

Each figure is the best of a few repeats (a peak, not a typical value),
repeated until the best two agree (frameval/idle.py), each thread count in its
own child process: BLAS reads its thread count from the
environment when it loads, so a child is the one sure way to pin it. The
children run with every instruction-set cap removed (`frameval/cpu.py`): a
machine that exports `OPENBLAS_CORETYPE=Haswell` would otherwise measure half
an AVX-512 CPU, and a run could then reach "123% of the peak". The caps that
were set are recorded; the runs themselves keep them.

The machine's figure is the best of numpy's BLAS and each framework's own
matrix product (`frameval/ceilings.py`, measured in the frameworks' environments),
and names the library that reached it.

A busy machine measures low (#49: MindSpore's GEMM 63 GFLOP/s at load 3.98
on 2 cores, 110 idle). The probe waits briefly for a busy machine to settle,
records each figure's load, repeat spread and the other processes' share of
the CPU, and says in "busy" which figures it could not measure idle: the
report then builds no share, alert or diagnosis on them.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from . import ceilings, cpu, files, idle
from .catalog import framework_name

MACHINE = "machine.json"  # <out>/machine.json
# --probe-from's default: many commands in a row (a sweep, the test suite) take one probe's figures
PROBE_FROM_VAR = "FRAMEVAL_PROBE_FROM"
MATMUL_N = 2048           # 17 GFLOP a product: ~0.1-0.2 s on one core of this machine, near BLAS's peak
COPY_MB = 128             # well beyond any cache
REPEATS = 5  # the copy's best of 5; the products repeat until they agree (idle.best_time)
THREAD_VARS = cpu.THREAD_VARS


def matmul(n: int = MATMUL_N) -> dict:
    """An n x n float32 product (2 n^3 FLOPs) timed by idle.best_time:
    {"gflops", "repeats", "spread", "load", "other_share", "busy"}."""
    import numpy as np
    rng = np.random.default_rng(0)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    out = np.empty((n, n), dtype=np.float32)
    t = idle.best_time(lambda: np.matmul(a, b, out=out))
    return {"gflops": 2 * n ** 3 / t["best_s"] / 1e9, "repeats": t["repeats"], "spread": t["spread"], "times": t["times"],
            "load": t["load"], "other_share": t["other_share"], "busy": idle.busy_reason(t)}


def copy_gbs(mb: int = COPY_MB, repeats: int = REPEATS, threads: int | None = None) -> float:
    """Best GB/s of copying `mb` MB between two arrays (read + write: 2 x mb moved),
    split into one slice per thread, copied at once: numpy.copyto is one thread
    and releases the GIL, so `threads` threads keep every core's loads busy."""
    import numpy as np
    from concurrent.futures import ThreadPoolExecutor
    n = max(1, threads or int(os.environ.get("OMP_NUM_THREADS") or 1))
    src = np.ones(mb * 2 ** 20 // 4, dtype=np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)  # both pages touched before timing
    cuts = [len(src) * i // n for i in range(n + 1)]
    parts = [(dst[a:b], src[a:b]) for a, b in zip(cuts, cuts[1:])]
    with ThreadPoolExecutor(n) as pool:
        def once():
            list(pool.map(lambda p: np.copyto(*p), parts))
        once()  # the threads started before timing
        best = min(_timed(once) for _ in range(repeats))
    return 2 * src.nbytes / best / 1e9


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _child(threads: int, what: str, *args):
    """One figure measured in a child process whose BLAS has `threads` threads,
    with every instruction-set cap removed: the machine, not a cap some older
    library needed."""
    env = cpu.uncapped(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[1]),
                                                      env.get("PYTHONPATH", "")]))
    env.update({v: str(threads) for v in THREAD_VARS})
    code = f"import json; from frameval.probe import {what}; print(json.dumps({what}(*{list(args)!r})))"
    try:
        p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        return json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else None
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return None


def measure(env_by_fw: dict | None = None, say=print, n: int = MATMUL_N, copy_mb: int = COPY_MB,
            wait_s: float = idle.WAIT_S, counts=None) -> dict:
    """The figures, how they were measured, the caps that were removed for them,
    and the machine's load around them. With `env_by_fw` ({fw_key: Env}), each
    framework's own GEMM too, at the thread counts in `counts` (ceilings.measure),
    and the machine's peak is the best of all.
    "busy": the figures not measured idle, and why (None: all idle)."""
    import numpy as np
    cores = os.cpu_count() or 1
    t0, load = time.perf_counter(), idle.load()
    waited = idle.wait_for_idle(say, wait_s)
    one = _child(1, "matmul", n) or {}
    every = (_child(cores, "matmul", n) or {}) if cores > 1 else one
    bw = _child(cores, "copy_gbs", copy_mb)
    blas = _child(1, "blas_name") or "unknown"
    fws = ceilings.measure(env_by_fw, cores, say, counts) if env_by_fw else {}
    numpy_name = f"numpy ({blas})"
    busy = _busy_summary({"numpy": {"1": one, str(cores): every}} | {
        framework_name(e["framework"]): e.get("figures") or {} for e in fws.values()})
    peak1, lib1 = ceilings.best(one.get("gflops"), numpy_name, fws, "gflops_1")
    peak_all, lib_all = ceilings.best(every.get("gflops"), numpy_name, fws, "gflops_all")
    # bfloat16 (#69): numpy has no bfloat16 product, so only the frameworks' own ones count
    bf1, bflib1 = ceilings.best(None, "", fws, "bf16_gflops_1")
    bf_all, bflib_all = ceilings.best(None, "", fws, "bf16_gflops_all")
    return {
        "peak_gflops_1": peak1, "peak_gflops_all": peak_all, "peak_library_1": lib1, "peak_library_all": lib_all,
        "bf16_peak_gflops_1": bf1, "bf16_peak_gflops_all": bf_all, "bf16_peak_library_1": bflib1,
        "bf16_peak_library_all": bflib_all, "bf16_units": cpu.bf16_units(),
        "threads_all": cores, "bandwidth_gbs": bw, "numpy_gflops_1": one.get("gflops"),
        "numpy_gflops_all": every.get("gflops"), "numpy_figures": {"1": one, str(cores): every},
        "frameworks": fws, "cpu": cpu.identity(), "isa_caps": cpu.caps(), "isa_caps_inert": cpu.inert_caps(),
        "method": {"matmul": f"float32 {n}x{n} @ {n}x{n} (2n^3 FLOPs): numpy.matmul, best of "
                             f"{idle.MIN_REPEATS} to {idle.MAX_REPEATS} after a warm-up (until the best two agree, or {idle.BUDGET_S:.0f} s, "
                             f"within {idle.AGREE:.0%}), one child process per thread count "
                             f"({', '.join(THREAD_VARS)}) with every instruction-set cap removed; each "
                             "framework's own product in its environment as its runs see it, at the thread counts they use (frameval/envscripts/gemm.py); "
                             "the peak is the best of all",
                   "copy": f"numpy.copyto of {copy_mb} MB float32 in {cores} slices on {cores} threads "
                           f"(read + write counted), best of {REPEATS}",
                   "numpy": np.__version__, "blas": blas},
        "gpu": None,  # the same on the device with the framework's own product: not built yet
        "load_before": load, "load_measured": waited["load"], "waited_s": waited["waited_s"],
        "busy": busy, "load_after": idle.load(), "seconds": round(time.perf_counter() - t0, 2),
        "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def _busy_summary(figures: dict) -> str | None:
    """One short line naming the figures not measured idle ({library: {threads:
    figure}}), with the worst load and other processes' share among them; the
    reasons figure by figure stay in the record. None: every figure idle."""
    names, loads, others, spreads = [], [], [], []
    for lib, figs in figures.items():
        bad = sorted((n for n, f in figs.items() if f and f.get("busy")), key=int)
        if bad:
            names.append(f"{lib} ({', '.join(bad)} thread{'s' if bad != ['1'] else ''})")
            busy = [f for f in figs.values() if f and f.get("busy")]
            loads += [f["load"][0] for f in busy if f.get("load")]
            others += [f["other_share"] for f in busy if f.get("other_share") is not None]
            spreads += [f["spread"] for f in busy if f.get("spread") is not None]
    if not names:
        return None
    # the spread too: a figure whose repeats disagree is flagged even where the load looks idle
    how = ([f"load up to {max(loads):.2f}"] if loads else []) + (
        [f"other processes up to {max(others) * 100:.0f}% of the CPU time"] if others else []) + (
        [f"repeat spread up to {max(spreads) * 100:.0f}%"] if spreads and max(spreads) > idle.NOISY_SPREAD else [])
    return ", ".join(names) + (f" ({'; '.join(how)})" if how else "")


def blas_name() -> str:
    """numpy's BLAS, its version and the kernel set it chose (threadpoolctl's architecture)."""
    try:
        import numpy  # noqa: F401 - threadpoolctl sees only the libraries already loaded
        from threadpoolctl import threadpool_info
        libs = [i for i in threadpool_info() if i.get("user_api") == "blas"]
        return ", ".join(f"{i.get('internal_api')} {i.get('version')}"
                         + (f" {i['architecture']}" if i.get("architecture") else "") for i in libs) or "unknown"
    except Exception:  # noqa: BLE001 - the name is a courtesy; the figures stand without it
        return "unknown"


def _fmt(v, unit: str) -> str:
    return "n/a" if v is None else f"{v:,.1f} {unit}"


def record(out, say=print, env_by_fw: dict | None = None, counts=None, **sizes) -> dict:
    """Measure and write `<out>/machine.json`; a line or two said."""
    m = measure(env_by_fw, say, counts=counts, **sizes)
    files.atomic_write_json(Path(out) / MACHINE, m)
    caps = ", ".join(f"{k}={v}" for k, v in m["isa_caps"].items())
    say(f"frameval: this machine's peak: {_fmt(m['peak_gflops_1'], 'GFLOP/s')} on 1 thread, "
        f"{_fmt(m['peak_gflops_all'], 'GFLOP/s')} on {m['threads_all']} ({m['peak_library_all']}), "
        f"copy {_fmt(m['bandwidth_gbs'], 'GB/s')} (the probe took {m['seconds']:.1f} s; load {m['load_before']})"
        + (f"; bfloat16 {_fmt(m['bf16_peak_gflops_all'], 'GFLOP/s')} on {m['threads_all']} "
           f"({m['bf16_peak_library_all']}, units: {', '.join(m['bf16_units']) or 'none: emulated'})"
           if m.get("bf16_peak_gflops_all") else "")
        + (f"; NOT IDLE, no share or diagnosis will be built on: {m['busy']}" if m["busy"] else "")
        + (f"; measured without the caps set here ({caps}), which the runs keep" if caps else ""))
    return m


def reusable(source) -> dict:
    """The figures of an earlier probe (a machine.json, or a folder holding one)
    for this machine's runs: BadInput (one line) where there is none, or it was
    measured on another CPU or under other instruction-set caps."""
    from .exits import BadInput
    path = Path(source).expanduser()
    path = path / MACHINE if path.is_dir() else path
    try:
        m = files.read_json(path)
    except (OSError, ValueError) as e:
        raise BadInput(f"--probe-from {source}: no machine.json can be read there ({type(e).__name__})") from None
    if not isinstance(m, dict) or "peak_gflops_all" not in m:
        raise BadInput(f"--probe-from {source}: not a machine.json written by frameval's probe")
    if m.get("cpu") != cpu.identity() or m.get("isa_caps") != cpu.caps():
        raise BadInput(f"--probe-from {source}: measured on another CPU or under other instruction-set caps "
                       f"({(m.get('cpu') or {}).get('model', '?')}); measure here instead (leave it out)")
    return dict(m, reused_from=str(path.resolve()))


def reuse(out, m: dict, say=print) -> dict:
    """Write an earlier probe's figures (`reusable`) as `<out>/machine.json`, a line said."""
    files.atomic_write_json(Path(out) / MACHINE, m)
    busy = f"; NOT IDLE then: {m['busy']}" if m.get("busy") else ""
    say(f"frameval: this machine's peak, reused from {m['reused_from']} (measured {m.get('measured', '?')}): "
        f"{_fmt(m.get('peak_gflops_all'), 'GFLOP/s')} on {m.get('threads_all')} threads{busy}")
    return m


def read(folder) -> dict | None:
    """`<folder>/machine.json`, or None."""
    m = files.read_json(Path(folder) / MACHINE, None)
    return m if isinstance(m, dict) else None


if __name__ == "__main__":
    print(json.dumps(measure(), indent=1))

"""The machine's own limit, measured once per report in the runner environment
(numpy + standard library, a few seconds): peak float32 GFLOP/s of a large
matrix product through numpy's BLAS on 1 thread and on all threads, and the
memory bandwidth of a large copy. The pipeline writes it to `<out>/machine.json`
before the runs; the report sets every run's achieved GFLOP/s against it.

Each figure is the best of a few repeats (a peak, not a typical value), each
thread count in its own child process: BLAS reads its thread count from the
environment when it loads, so a child is the one sure way to pin it.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from . import files

MACHINE = "machine.json"  # <out>/machine.json
MATMUL_N = 2048           # 17 GFLOP a product: ~0.1-0.2 s on one core of this machine, near BLAS's peak
COPY_MB = 128             # well beyond any cache
REPEATS = 2
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")


def matmul_gflops(n: int = MATMUL_N, repeats: int = REPEATS) -> float:
    """Best GFLOP/s of an n x n float32 product (2 n^3 FLOPs), after one warm-up."""
    import numpy as np
    rng = np.random.default_rng(0)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    out = np.empty((n, n), dtype=np.float32)
    np.matmul(a, b, out=out)
    best = min(_timed(lambda: np.matmul(a, b, out=out)) for _ in range(repeats))
    return 2 * n ** 3 / best / 1e9


def copy_gbs(mb: int = COPY_MB, repeats: int = REPEATS) -> float:
    """Best GB/s of copying `mb` MB between two arrays (read + write: 2 x mb moved)."""
    import numpy as np
    src = np.ones(mb * 2 ** 20 // 4, dtype=np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)  # both pages touched before timing
    best = min(_timed(lambda: np.copyto(dst, src)) for _ in range(repeats))
    return 2 * src.nbytes / best / 1e9


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _child(threads: int, what: str) -> float | None:
    """One figure measured in a child process whose BLAS has `threads` threads."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[1]),
                                                                        os.environ.get("PYTHONPATH", "")])))
    env.update({v: str(threads) for v in THREAD_VARS})
    code = f"from frameval.probe import {what}; print({what}())"
    try:
        p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=30)
        return float(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else None
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return None


def _load() -> list | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def measure() -> dict:
    """The figures, how they were measured, and the machine's load around them."""
    import numpy as np
    cores = os.cpu_count() or 1
    t0, load = time.perf_counter(), _load()
    one = _child(1, "matmul_gflops")
    every = _child(cores, "matmul_gflops") if cores > 1 else one
    bw = _child(cores, "copy_gbs")
    return {
        "peak_gflops_1": one, "peak_gflops_all": every, "threads_all": cores, "bandwidth_gbs": bw,
        "method": {"matmul": f"numpy.matmul, float32 {MATMUL_N}x{MATMUL_N} @ {MATMUL_N}x{MATMUL_N} "
                             f"(2n^3 FLOPs), best of {REPEATS} after a warm-up, one child process per thread count "
                             f"({', '.join(THREAD_VARS)})",
                   "copy": f"numpy.copyto of {COPY_MB} MB float32 (read + write counted), best of {REPEATS}",
                   "numpy": np.__version__, "blas": _blas_name()},
        "gpu": None,  # the same on the device with the framework's own product: not built yet
        "load_before": load, "load_after": _load(), "seconds": round(time.perf_counter() - t0, 2),
        "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def _blas_name() -> str:
    try:
        from threadpoolctl import threadpool_info
        libs = [i for i in threadpool_info() if i.get("user_api") == "blas"]
        return ", ".join(f"{i.get('internal_api')} {i.get('version')}" for i in libs) or "unknown"
    except Exception:  # noqa: BLE001 - the name is a courtesy; the figures stand without it
        return "unknown"


def record(out, say=print) -> dict:
    """Measure and write `<out>/machine.json`; one line said."""
    m = measure()
    files.atomic_write_json(Path(out) / MACHINE, m)
    fmt = lambda v, u: "n/a" if v is None else f"{v:,.1f} {u}"  # noqa: E731
    say(f"frameval: this machine's peak: {fmt(m['peak_gflops_1'], 'GFLOP/s')} on 1 thread, "
        f"{fmt(m['peak_gflops_all'], 'GFLOP/s')} on {m['threads_all']}, copy {fmt(m['bandwidth_gbs'], 'GB/s')} "
        f"(numpy float32, {m['seconds']:.1f} s; load {m['load_before']})")
    return m


def read(folder) -> dict | None:
    """`<folder>/machine.json`, or None."""
    try:
        m = json.loads((Path(folder) / MACHINE).read_text(encoding="utf-8"))
        return m if isinstance(m, dict) else None
    except (OSError, ValueError):
        return None


if __name__ == "__main__":
    print(json.dumps(measure(), indent=1))

"""A framework's own float32 matrix product, timed inside its environment: the
ceiling its training runs can reach (`python -m frameval.envscripts.gemm FRAMEWORK
THREADS [N]`, one process per thread count; prints one JSON line).

Each framework is set up as its notebooks set it up: the thread variables of
frameval/cpu.py (set by the caller, before this process starts), the
framework's own thread setter, MindSpore's ONEDNN_MAX_CPU_ISA=AVX2 (the
notebooks' workaround, unless a value of the user's is there), and a device
synchronisation before each clock read where the framework runs asynchronously
(each framework's part: frameval/frameworks/<fw>/gemm.py, `gemm(n, threads)`).
The figure is the best of the products after a warm-up (2 n^3 FLOPs each),
repeated until the best two agree (frameval/idle.py: 3 to 10), with the load
and the other processes' share of the CPU while it ran; a figure measured
busy says so ("busy") and is not cached, so the next report measures again.
"""
from __future__ import annotations

import json
import sys

from frameval import frameworks, idle

N = 2048


def inputs(n):
    """The two n x n float32 operands every framework multiplies (the same numbers everywhere)."""
    import numpy as np
    rng = np.random.default_rng(0)
    return rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)


def measure(framework: str, threads: int, n: int = N) -> dict:
    from frameval import cpu
    part = frameworks.part(framework, "gemm")
    version, op, t = part.gemm(n, threads)
    busy = idle.busy_reason(t)
    out = {"framework": framework, "version": version, "op": op, "threads": threads, "n": n,
           "gflops": 2 * n ** 3 / t["best_s"] / 1e9, "best_s": t["best_s"], "repeats": t["repeats"],
           "spread": t["spread"], "load": t["load"], "other_share": t["other_share"], "busy": busy,
           "cache": busy is None, "isa_caps": cpu.caps()}
    # its bfloat16 product, where its part has one and the CPU has bfloat16 units (#69: the bfloat16 peak;
    # elsewhere bfloat16 is emulated, no peak of anything, and the report ranks nothing on it)
    if hasattr(part, "gemm_bf16") and cpu.bf16_units():
        op16, t16 = part.gemm_bf16(n, threads)
        busy16 = idle.busy_reason(t16)
        out["bf16"] = {"op": op16, "gflops": 2 * n ** 3 / t16["best_s"] / 1e9, "best_s": t16["best_s"],
                       "spread": t16["spread"], "load": t16["load"], "busy": busy16}
        out["cache"] = out["cache"] and busy16 is None
    return out


if __name__ == "__main__":
    fw, threads = sys.argv[1], int(sys.argv[2])
    print(json.dumps(measure(fw, threads, int(sys.argv[3]) if len(sys.argv) > 3 else N)))

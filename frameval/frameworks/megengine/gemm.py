"""MegEngine's own float32 matrix product, set up as its notebooks set it up (frameval/envscripts/gemm.py
times it). Standard library + the framework, loaded only in its own environment."""
from __future__ import annotations

from frameval.envscripts.gemm import inputs
from frameval.idle import best_time


def gemm(n, threads):
    """-> (version, the op's name, idle.best_time's timing) of an n x n float32 product on `threads`."""
    import megengine as mge
    import megengine.functional as F
    mge.set_default_device(f"multithread{threads}:0" if threads > 1 else "cpu0")  # as the notebooks
    a, b = (mge.tensor(x) for x in inputs(n))
    return mge.__version__, "megengine.functional.matmul", best_time(lambda: F.matmul(a, b), mge._full_sync)

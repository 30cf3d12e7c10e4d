"""MXNet's own float32 matrix product, set up as its notebooks set it up (frameval/envscripts/gemm.py
times it). Standard library + the framework, loaded only in its own environment."""
from __future__ import annotations

import os

from frameval.envscripts.gemm import inputs
from frameval.idle import best_time


def gemm(n, threads):
    """-> (version, the op's name, idle.best_time's timing) of an n x n float32 product on `threads`."""
    os.environ["MXNET_CPU_WORKER_NTHREADS"] = "1"  # as the notebooks: one engine worker, OpenMP inside
    os.environ["MXNET_OMP_MAX_THREADS"] = str(threads)
    import mxnet as mx
    a, b = (mx.nd.array(x, dtype="float32") for x in inputs(n))
    return mx.__version__, "mxnet.nd.dot", best_time(lambda: mx.nd.dot(a, b), mx.nd.waitall)

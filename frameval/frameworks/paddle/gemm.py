"""PaddlePaddle's own float32 matrix product, set up as its notebooks set it up (frameval/envscripts/gemm.py
times it). Standard library + the framework, loaded only in its own environment."""
from __future__ import annotations

import os

from frameval.envscripts.gemm import inputs
from frameval.idle import best_time


def gemm(n, threads):
    """-> (version, the op's name, idle.best_time's timing) of an n x n float32 product on `threads`."""
    os.environ.setdefault("GLOG_v", "0")
    import paddle
    if hasattr(paddle.base.core, "set_num_threads"):
        paddle.base.core.set_num_threads(threads)
    paddle.set_device("cpu")
    a, b = (paddle.to_tensor(x) for x in inputs(n))
    return paddle.__version__, "paddle.matmul", best_time(lambda: paddle.matmul(a, b), lambda: None)

"""MindSpore's own float32 matrix product, set up as its notebooks set it up (frameval/envscripts/gemm.py
times it). Standard library + the framework, loaded only in its own environment."""
from __future__ import annotations

import os

from frameval.envscripts.gemm import inputs
from frameval.idle import best_time


def gemm(n, threads):
    """-> (version, the op's name, idle.best_time's timing) of an n x n float32 product on `threads`."""
    os.environ.setdefault("GLOG_v", "4")
    os.environ.setdefault("ONEDNN_MAX_CPU_ISA", "AVX2")  # as the notebooks (the defect workaround)
    import mindspore as ms
    from mindspore import Tensor, ops
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_device("CPU")
    ms.device_context.cpu.op_tuning.threads_num(threads)
    a, b = (Tensor(x) for x in inputs(n))
    held = {}

    def run():
        held["c"] = ops.matmul(a, b)

    def sync():
        # Reading one element waits for the product. ms.runtime.synchronize() on the CPU
        # (2.10) failed about one call in six, "RuntimeError: Illegal device type: <a
        # garbage number>" or a segfault (exit -11): the 2-thread figure was missing
        # from two first reports in a row.
        held["c"][0, 0].asnumpy()

    return ms.__version__, "mindspore.ops.matmul", best_time(run, sync)

"""A framework's own float32 matrix product, timed inside its environment: the
ceiling its training runs can reach (`python -m frameval.fw.gemm FRAMEWORK
THREADS [N]`, one process per thread count; prints one JSON line).

Each framework is set up as its notebooks set it up: the thread variables of
frameval/cpu.py (set by the caller, before this process starts), the
framework's own thread setter, MindSpore's ONEDNN_MAX_CPU_ISA=AVX2 (the
notebooks' workaround, unless a value of the user's is there), and a device
synchronisation before each clock read where the framework runs asynchronously.
The figure is the best of the products after a warm-up (2 n^3 FLOPs each),
repeated until the best two agree (frameval/idle.py: 3 to 10), with the load
and the other processes' share of the CPU while it ran; a figure measured
busy says so ("busy") and is not cached, so the next report measures again.
"""
from __future__ import annotations

import json
import os
import sys

from frameval import idle

N = 2048


def _best(run, sync) -> dict:
    return idle.best_time(run, sync)


def _inputs(n):
    import numpy as np
    rng = np.random.default_rng(0)
    return rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)


def _torch(n, threads):
    import torch
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(threads)
    a, b = (torch.from_numpy(x) for x in _inputs(n))
    return torch.__version__, "torch.mm", _best(lambda: torch.mm(a, b), lambda: None)


def _tensorflow(n, threads):
    from frameval.fw import tensorflow_support  # noqa: F401 - its log silencing and KERAS_BACKEND
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    with tf.device("/CPU:0"):
        a, b = (tf.constant(x) for x in _inputs(n))
        # eager ops on the CPU return when done: no separate sync is needed
        return tf.__version__, "tf.linalg.matmul", _best(lambda: tf.linalg.matmul(a, b), lambda: None)


def _jax(n, threads):
    cpus = sorted(os.sched_getaffinity(0))
    if threads < len(cpus):  # as jax_support.setup: XLA sizes its pool from the schedulable CPUs
        os.sched_setaffinity(0, cpus[:threads])
    if threads == 1 and "xla_cpu_multi_thread_eigen" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()
    os.environ["JAX_PLATFORMS"] = "cpu"
    import jax
    import jax.numpy as jnp
    a, b = (jnp.asarray(x) for x in _inputs(n))
    dot = jax.jit(jnp.dot)
    out = []
    return jax.__version__, "jax.jit(jnp.dot)", _best(lambda: out.append(dot(a, b)),
                                                     lambda: out and out.pop().block_until_ready())


def _paddle(n, threads):
    os.environ.setdefault("GLOG_v", "0")
    import paddle
    if hasattr(paddle.base.core, "set_num_threads"):
        paddle.base.core.set_num_threads(threads)
    paddle.set_device("cpu")
    a, b = (paddle.to_tensor(x) for x in _inputs(n))
    return paddle.__version__, "paddle.matmul", _best(lambda: paddle.matmul(a, b), lambda: None)


def _mindspore(n, threads):
    os.environ.setdefault("GLOG_v", "4")
    os.environ.setdefault("ONEDNN_MAX_CPU_ISA", "AVX2")  # as the notebooks (the defect workaround)
    import mindspore as ms
    from mindspore import Tensor, ops
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_device("CPU")
    ms.device_context.cpu.op_tuning.threads_num(threads)
    a, b = (Tensor(x) for x in _inputs(n))
    sync = getattr(getattr(ms, "runtime", None), "synchronize", None) or (lambda: None)
    return ms.__version__, "mindspore.ops.matmul", _best(lambda: ops.matmul(a, b), sync)


def _megengine(n, threads):
    import megengine as mge
    import megengine.functional as F
    mge.set_default_device(f"multithread{threads}:0" if threads > 1 else "cpu0")  # as the notebooks
    a, b = (mge.tensor(x) for x in _inputs(n))
    return mge.__version__, "megengine.functional.matmul", _best(lambda: F.matmul(a, b), mge._full_sync)


def _mxnet(n, threads):
    os.environ["MXNET_CPU_WORKER_NTHREADS"] = "1"  # as the notebooks: one engine worker, OpenMP inside
    os.environ["MXNET_OMP_MAX_THREADS"] = str(threads)
    import mxnet as mx
    a, b = (mx.nd.array(x, dtype="float32") for x in _inputs(n))
    return mx.__version__, "mxnet.nd.dot", _best(lambda: mx.nd.dot(a, b), mx.nd.waitall)


GEMMS = {"torch": _torch, "tensorflow": _tensorflow, "jax": _jax, "paddle": _paddle, "mindspore": _mindspore,
         "megengine": _megengine, "mxnet": _mxnet}


def measure(framework: str, threads: int, n: int = N) -> dict:
    from frameval import cpu
    version, op, t = GEMMS[framework](n, threads)
    busy = idle.busy_reason(t)
    return {"framework": framework, "version": version, "op": op, "threads": threads, "n": n,
            "gflops": 2 * n ** 3 / t["best_s"] / 1e9, "best_s": t["best_s"], "repeats": t["repeats"],
            "spread": t["spread"], "load": t["load"], "other_share": t["other_share"], "busy": busy,
            "cache": busy is None, "isa_caps": cpu.caps()}


if __name__ == "__main__":
    fw, threads = sys.argv[1], int(sys.argv[2])
    print(json.dumps(measure(fw, threads, int(sys.argv[3]) if len(sys.argv) > 3 else N)))

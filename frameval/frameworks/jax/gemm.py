"""JAX's own float32 matrix product, set up as its notebooks set it up (frameval/envscripts/gemm.py
times it). Standard library + the framework, loaded only in its own environment."""
from __future__ import annotations

import os

from frameval.envscripts.gemm import inputs
from frameval.idle import best_time


def gemm(n, threads):
    """-> (version, the op's name, idle.best_time's timing) of an n x n float32 product on `threads`."""
    cpus = sorted(os.sched_getaffinity(0))
    if threads < len(cpus):  # as support.setup: XLA sizes its pool from the schedulable CPUs
        os.sched_setaffinity(0, cpus[:threads])
    if threads == 1 and "xla_cpu_multi_thread_eigen" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()
    os.environ["JAX_PLATFORMS"] = "cpu"
    import jax
    import jax.numpy as jnp
    a, b = (jnp.asarray(x) for x in inputs(n))
    dot = jax.jit(jnp.dot)
    out = []
    return jax.__version__, "jax.jit(jnp.dot)", best_time(lambda: out.append(dot(a, b)),
                                                         lambda: out and out.pop().block_until_ready())

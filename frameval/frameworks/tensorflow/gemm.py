"""TensorFlow's own float32 matrix product, set up as its notebooks set it up (frameval/envscripts/gemm.py
times it). Standard library + the framework, loaded only in its own environment."""
from __future__ import annotations

from frameval.envscripts.gemm import inputs
from frameval.idle import best_time


def gemm(n, threads):
    """-> (version, the op's name, idle.best_time's timing) of an n x n float32 product on `threads`."""
    from frameval.frameworks.tensorflow import support  # noqa: F401 - its log silencing and KERAS_BACKEND
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    with tf.device("/CPU:0"):
        a, b = (tf.constant(x) for x in inputs(n))
        # eager ops on the CPU return when done: no separate sync is needed
        return tf.__version__, "tf.linalg.matmul", best_time(lambda: tf.linalg.matmul(a, b), lambda: None)

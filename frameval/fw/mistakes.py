"""Ten common mistakes, made the same way in every framework, and what each
framework says about them: the exception's type, its message, and where its
traceback ends (at the user's line, here, or deep inside the framework).

`MISTAKES` is the framework-neutral catalogue: what the mistake is and what a
good message would name (`sizes`: regular expressions for the sizes or types
involved, each of which must appear; `op`: words naming the operation). The
scores are the runner's (frameval/mistakes.py). `_<framework>()` holds each
framework's spelling of the mistakes, one line each where it can be: the line
that raises is "the user's line". numpy + standard library + the framework.
"""
from __future__ import annotations

import os
import sys
import traceback
from dataclasses import dataclass

import numpy as np

MESSAGE_CHARS = 2000


@dataclass(frozen=True)
class Mistake:
    id: str
    sizes: tuple   # regexes: every one must appear in the message; () where no size is involved
    op: tuple      # words naming the operation (any one, case-insensitive)


def _n(n: int) -> str:
    """The number n standing alone: "3x4" names 4, "14" does not."""
    return rf"(?<!\d){n}(?!\d)"


MISTAKES = [
    Mistake("matmul_shapes", (_n(4), _n(5)), ("matmul", "mm", "dot", "gemm", "matrix", "multipl")),
    Mistake("conv_channels", (_n(4), _n(6)), ("conv",)),
    Mistake("reshape_size", (_n(6), _n(8) + r"|\[4, ?2\]|\(4, ?2\)|4 ?x ?2|\{4, ?2\}"), ("reshape", "view")),
    Mistake("concat_shapes", (_n(3), _n(4)), ("concat", "cat")),
    Mistake("index_out_of_range", (_n(7), _n(5)), ("index",)),
    Mistake("int_into_float_layer", (r"int|long", r"float"), ("linear", "dense", "matmul", "mm", "addmm", "layer")),
    Mistake("backward_twice", (), ("backward", "gradient", "grad")),
    Mistake("non_scalar_loss", (_n(3),), ("backward", "grad")),
    Mistake("negative_learning_rate", (r"-0\.1",), ("learning rate", "learning_rate", "lr")),
    Mistake("device_mismatch", (), ("device", "cuda", "gpu", "place")),
]

BY_ID = {m.id: m for m in MISTAKES}
ONE_DEVICE = "needs two devices; these environments run on the CPU only"


def _torch():
    import torch
    o, nn = torch.ones, torch.nn

    def backward_twice():
        x = o(3, requires_grad=True)
        loss = (x * x).sum()
        loss.backward()
        loss.backward()

    def non_scalar():
        x = o(3, requires_grad=True)
        (x * x).backward()
    return {"matmul_shapes": lambda: o(3, 4) @ o(5, 6),
            "conv_channels": lambda: nn.Conv2d(6, 2, 3)(o(1, 4, 8, 8)),
            "reshape_size": lambda: o(2, 3).reshape(4, 2),
            "concat_shapes": lambda: torch.cat([o(2, 3), o(2, 4)], 0),
            "index_out_of_range": lambda: o(5)[7],
            "int_into_float_layer": lambda: nn.Linear(4, 2)(torch.ones(1, 4, dtype=torch.int64)),
            "backward_twice": backward_twice, "non_scalar_loss": non_scalar,
            "negative_learning_rate": lambda: torch.optim.SGD(nn.Linear(4, 2).parameters(), lr=-0.1)}


def _tensorflow():
    from frameval.fw import tensorflow_support  # noqa: F401 - its log silencing
    import tensorflow as tf
    o, L = tf.ones, tf.keras.layers

    def conv():
        layer = L.Conv2D(2, 3)
        layer.build((None, 8, 8, 6))
        return layer(o((1, 8, 8, 4)))

    def dense_int():
        layer = L.Dense(2)
        layer.build((None, 4))
        return layer(tf.ones((1, 4), dtype=tf.int64))

    def backward_twice():
        x = tf.Variable(o(3))
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(x * x)
        tape.gradient(loss, x)
        tape.gradient(loss, x)

    def non_scalar():
        x = tf.Variable(o(3))
        with tf.GradientTape() as tape:
            y = x * x
        return tape.gradient(y, x)
    return {"matmul_shapes": lambda: tf.matmul(o((3, 4)), o((5, 6))),
            "conv_channels": conv,
            "reshape_size": lambda: tf.reshape(o((2, 3)), (4, 2)),
            "concat_shapes": lambda: tf.concat([o((2, 3)), o((2, 4))], 0),
            "index_out_of_range": lambda: o(5)[7],
            "int_into_float_layer": dense_int,
            "backward_twice": backward_twice, "non_scalar_loss": non_scalar,
            "negative_learning_rate": lambda: tf.keras.optimizers.SGD(learning_rate=-0.1)}


def _paddle():
    os.environ.setdefault("GLOG_v", "0")
    os.environ.setdefault("GLOG_minloglevel", "2")
    import paddle
    paddle.set_device("cpu")
    o, nn = paddle.ones, paddle.nn

    def backward_twice():
        x = o([3])
        x.stop_gradient = False
        loss = (x * x).sum()
        loss.backward()
        loss.backward()

    def non_scalar():
        x = o([3])
        x.stop_gradient = False
        (x * x).backward()
        return x.grad
    return {"matmul_shapes": lambda: paddle.matmul(o([3, 4]), o([5, 6])),
            "conv_channels": lambda: nn.Conv2D(6, 2, 3)(o([1, 4, 8, 8])),
            "reshape_size": lambda: paddle.reshape(o([2, 3]), [4, 2]),
            "concat_shapes": lambda: paddle.concat([o([2, 3]), o([2, 4])], 0),
            "index_out_of_range": lambda: o([5])[7],
            "int_into_float_layer": lambda: nn.Linear(4, 2)(o([1, 4], dtype="int64")),
            "backward_twice": backward_twice, "non_scalar_loss": non_scalar,
            "negative_learning_rate": lambda: paddle.optimizer.SGD(learning_rate=-0.1,
                                                                   parameters=nn.Linear(4, 2).parameters())}


def _mindspore():
    os.environ.setdefault("GLOG_v", "4")
    import mindspore as ms
    from mindspore import nn, ops
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_device("CPU")

    def o(*shape, dtype=ms.float32):
        return ops.ones(shape, dtype)
    return {"matmul_shapes": lambda: ops.matmul(o(3, 4), o(5, 6)),
            "conv_channels": lambda: nn.Conv2d(6, 2, 3)(o(1, 4, 8, 8)),
            "reshape_size": lambda: ops.reshape(o(2, 3), (4, 2)),
            "concat_shapes": lambda: ops.cat((o(2, 3), o(2, 4)), 0),
            "index_out_of_range": lambda: o(5)[7],
            "int_into_float_layer": lambda: nn.Dense(4, 2)(o(1, 4, dtype=ms.int64)),
            "backward_twice": "ms.grad is a function transform: no graph is kept between calls to run backward twice",
            "non_scalar_loss": lambda: ms.grad(lambda x: x * x)(o(3)),
            "negative_learning_rate": lambda: nn.SGD(nn.Dense(4, 2).trainable_params(), learning_rate=-0.1)}


def _megengine():
    import megengine as mge
    import megengine.functional as F
    import megengine.module as M
    from megengine.autodiff import GradManager

    def o(*shape, dtype="float32"):
        return mge.tensor(np.ones(shape, dtype=dtype))

    def backward_twice():
        x = mge.Parameter(np.ones(3, dtype="float32"))
        gm = GradManager().attach([x])
        with gm:
            loss = (x * x).sum()
            gm.backward(loss)
            gm.backward(loss)

    def non_scalar():
        x = mge.Parameter(np.ones(3, dtype="float32"))
        gm = GradManager().attach([x])
        with gm:
            gm.backward(x * x)
        return x.grad
    return {"matmul_shapes": lambda: F.matmul(o(3, 4), o(5, 6)),
            "conv_channels": lambda: M.Conv2d(6, 2, 3)(o(1, 4, 8, 8)),
            "reshape_size": lambda: F.reshape(o(2, 3), (4, 2)),
            "concat_shapes": lambda: F.concat([o(2, 3), o(2, 4)], 0),
            "index_out_of_range": lambda: o(5)[7],
            "int_into_float_layer": lambda: M.Linear(4, 2)(o(1, 4, dtype="int32")),
            "backward_twice": backward_twice, "non_scalar_loss": non_scalar,
            "negative_learning_rate": lambda: mge.optimizer.SGD(M.Linear(4, 2).parameters(), lr=-0.1)}


def _mxnet():
    import mxnet as mx
    from mxnet import autograd, gluon, nd
    o = nd.ones

    def layer(block, *shape, dtype="float32"):
        block.initialize()
        return block(nd.ones(shape, dtype=dtype)).wait_to_read()  # MXNet is asynchronous: the error shows at a read

    def backward_twice():
        x = o(3)
        x.attach_grad()
        with autograd.record():
            loss = (x * x).sum()
        loss.backward()
        loss.backward()

    def non_scalar():
        x = o(3)
        x.attach_grad()
        with autograd.record():
            y = x * x
        y.backward()
        return x.grad.asnumpy()
    return {"matmul_shapes": lambda: nd.dot(o((3, 4)), o((5, 6))).wait_to_read(),
            "conv_channels": lambda: layer(gluon.nn.Conv2D(2, 3, in_channels=6), 1, 4, 8, 8),
            "reshape_size": lambda: o((2, 3)).reshape((4, 2)).wait_to_read(),
            "concat_shapes": lambda: nd.concat(o((2, 3)), o((2, 4)), dim=0).wait_to_read(),
            "index_out_of_range": lambda: o(5)[7].wait_to_read(),
            "int_into_float_layer": lambda: layer(gluon.nn.Dense(2, in_units=4), 1, 4, dtype="int64"),
            "backward_twice": backward_twice, "non_scalar_loss": non_scalar,
            "negative_learning_rate": lambda: mx.optimizer.SGD(learning_rate=-0.1)}


def _jax():
    os.environ["JAX_PLATFORMS"] = "cpu"
    import jax
    import jax.numpy as jnp
    import optax
    from flax import linen as nn
    o, key = jnp.ones, jax.random.PRNGKey(0)

    def conv():
        m = nn.Conv(2, (3, 3))
        params = m.init(key, o((1, 8, 8, 6)))
        return m.apply(params, o((1, 8, 8, 4)))

    def dense_int():
        m = nn.Dense(2)
        params = m.init(key, o((1, 4)))
        return m.apply(params, o((1, 4), dtype=jnp.int32))
    return {"matmul_shapes": lambda: jnp.matmul(o((3, 4)), o((5, 6))),
            "conv_channels": conv,
            "reshape_size": lambda: o((2, 3)).reshape((4, 2)),
            "concat_shapes": lambda: jnp.concatenate([o((2, 3)), o((2, 4))], 0),
            "index_out_of_range": lambda: o(5)[7],
            "int_into_float_layer": dense_int,
            "backward_twice": "jax.grad is a function transform: no graph is kept between calls to run backward twice",
            "non_scalar_loss": lambda: jax.grad(lambda x: x * x)(o(3)),
            "negative_learning_rate": lambda: optax.sgd(-0.1)}


SPELLINGS = {"torch": _torch, "tensorflow": _tensorflow, "paddle": _paddle, "mindspore": _mindspore,
             "megengine": _megengine, "mxnet": _mxnet, "jax": _jax}


def _where(tb) -> dict:
    """Where the traceback ends, and its last frame in this file (the user's line)."""
    frames = traceback.extract_tb(tb)
    here = os.path.abspath(__file__)
    mine = [i for i, f in enumerate(frames) if os.path.abspath(f.filename) == here]
    last = frames[-1] if frames else None
    user = frames[mine[-1]] if mine else None
    return {"user_line": user.lineno if user else None,
            "last_frame": f"{_short(last.filename)}:{last.lineno}" if last else None,
            "frames_below_user": len(frames) - 1 - mine[-1] if mine else None,
            "last_is_user": bool(mine) and mine[-1] == len(frames) - 1}


def _short(path: str) -> str:
    """A framework file's path from its package on (site-packages/ cut off)."""
    parts = path.replace("\\", "/").split("/site-packages/")
    return parts[-1] if len(parts) > 1 else os.path.basename(path)


def _raised(e: BaseException, where: dict) -> dict:
    msg = str(e)
    return dict({"raised": True, "type": type(e).__name__, "message": msg[:MESSAGE_CHARS],
                 "lines": len(msg.splitlines()) or 1, "chars": len(msg)}, **where)


def record(fn, sync=lambda: None) -> dict:
    """What one mistake did: raised (type, message, where), raised only at the
    next synchronisation ("late": no line of the user's is named), or ran
    silently (what it returned)."""
    if isinstance(fn, str):
        return {"na": fn}
    try:
        got = fn()
    except Exception as e:  # noqa: BLE001 - the error is the finding
        return _raised(e, _where(sys.exc_info()[2]))
    try:
        sync()
    except Exception as e:  # noqa: BLE001 - an asynchronous framework's error, surfacing late
        return _raised(e, {"user_line": None, "last_frame": None, "frames_below_user": None,
                           "last_is_user": False, "late": True})
    return {"raised": False, "returned": f"{type(got).__name__}"}


def run_all(framework: str, sync=lambda: None) -> dict:
    spell = SPELLINGS[framework]()
    return {m.id: record(spell.get(m.id, ONE_DEVICE), sync) for m in MISTAKES}

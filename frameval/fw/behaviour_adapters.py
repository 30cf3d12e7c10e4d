"""The small adapter each behaviour case is written against
(frameval/fw/behaviour_cases.py): making a tensor from an array, reading one
back, and the few operations whose spelling differs between frameworks
(`sum(dim=)` against `sum(axis=)`, a gradient, an indexed write). Everything
else a case does (indexing, operators) is each framework's own.

Each adapter uses what a framework's users write: `torch.from_numpy` for
sharing, a `tf.Variable`'s `assign` for TensorFlow's indexed writes, JAX's
`.at[...].set`. Where a framework has no such thing the method raises
`NotApplicable(why)`, and the case reads "not applicable" with that reason.
numpy + standard library + the framework, imported only when chosen.
"""
from __future__ import annotations

import os

import numpy as np


class NotApplicable(Exception):
    """The framework has nothing a case could ask (the reason is the message)."""


class Numpy:
    """The reference: NumPy itself. A framework adapter overrides what differs."""
    name, api = "numpy", "numpy.ndarray"
    immutable = ""  # why in-place updates do not exist, where they do not

    def version(self):
        return np.__version__

    def t(self, a):
        return np.array(a)

    def np(self, t):
        return np.asarray(t)

    def is_tensor(self, v):
        return isinstance(v, (np.ndarray, np.generic))

    def sync(self):
        """Wait for queued work: an asynchronous framework's error then belongs to the case that caused it."""

    def lit(self, obj):
        return np.asarray(obj)

    def from_numpy(self, a):
        return np.asarray(a)

    def to_numpy(self, t):
        return np.asarray(t)

    def dtype(self, t):
        return str(self.np(t).dtype)

    def shape(self, t):
        return [int(n) for n in self.np(t).shape]

    def setitem(self, t, idx, v):
        """t[idx] = v; the tensor that holds the result."""
        t[idx] = v
        return t

    def iadd(self, t, v):
        """t += v, in place: where tensors are immutable there is no such thing."""
        if self.immutable:
            raise NotApplicable(self.immutable)
        t += v
        return t

    def write(self, t, idx, v):
        """t[idx] = v in place (a case that asks whether others see the write)."""
        if self.immutable:
            raise NotApplicable(self.immutable)
        self.setitem(t, idx, v)

    def sum(self, t, axis=None, keepdims=False):
        return np.sum(t, axis=axis, keepdims=keepdims)

    def mean(self, t):
        return np.mean(t)

    def argmax(self, t):
        return np.argmax(t)

    def argsort(self, t):
        return np.argsort(t, kind="stable")

    def grad(self, fn, x):
        """d fn / d x: for NumPy, central differences in float64 (the cases' losses are quadratic: exact)."""
        x = np.asarray(x, dtype=np.float64)
        out = np.zeros_like(x)
        for i in range(x.size):
            e = np.zeros_like(x)
            e.flat[i] = 0.5
            out.flat[i] = float(fn(x + e)) - float(fn(x - e))
        return out


class Torch(Numpy):
    name, api = "torch", "torch.Tensor"

    def __init__(self):
        import torch
        self.m = torch

    def version(self):
        return self.m.__version__

    def t(self, a):
        return self.m.tensor(np.array(a))

    def np(self, t):
        return t.detach().cpu().numpy() if isinstance(t, self.m.Tensor) else np.asarray(t)

    def is_tensor(self, v):
        return isinstance(v, self.m.Tensor)

    def lit(self, obj):
        return self.m.tensor(obj)

    def from_numpy(self, a):
        return self.m.from_numpy(a)

    def to_numpy(self, t):
        return t.numpy()

    def sum(self, t, axis=None, keepdims=False):
        return t.sum() if axis is None else t.sum(dim=axis, keepdim=keepdims)

    def mean(self, t):
        return t.mean()

    def argmax(self, t):
        return t.argmax()

    def argsort(self, t):
        return self.m.argsort(t, stable=True)

    def grad(self, fn, x):
        x = x.clone().requires_grad_(True)
        fn(x).backward()
        return x.grad


class TensorFlow(Numpy):
    name, api = "tensorflow", "tf.Tensor"
    immutable = "tf.Tensor is immutable: += makes a new tensor (a tf.Variable's assign_add updates in place)"

    def __init__(self):
        from frameval.fw import tensorflow_support  # noqa: F401 - its log silencing
        import tensorflow as tf
        self.m = tf

    def version(self):
        return self.m.__version__

    def t(self, a):
        return self.m.constant(np.array(a))

    def np(self, t):
        return t.numpy() if hasattr(t, "numpy") else np.asarray(t)

    def is_tensor(self, v):
        return self.m.is_tensor(v) or isinstance(v, self.m.Variable)

    def lit(self, obj):
        return self.m.constant(obj)

    def from_numpy(self, a):
        return self.m.convert_to_tensor(a)

    def to_numpy(self, t):
        return t.numpy()

    def setitem(self, t, idx, v):
        # TensorFlow's indexed write: a Variable's slice assign (tf.Tensor has no __setitem__)
        var = self.m.Variable(t)
        var[idx].assign(self.m.broadcast_to(self.m.cast(v, t.dtype), var[idx].shape))
        return var

    def sum(self, t, axis=None, keepdims=False):
        return self.m.reduce_sum(t, axis=axis, keepdims=keepdims)

    def mean(self, t):
        return self.m.reduce_mean(t)

    def argmax(self, t):
        return self.m.argmax(t)

    def argsort(self, t):
        return self.m.argsort(t, stable=True)

    def grad(self, fn, x):
        with self.m.GradientTape() as tape:
            tape.watch(x)
            loss = fn(x)
        g = tape.gradient(loss, x)
        if g is None:
            raise LookupError("tape.gradient returned None: no gradient reaches x")
        return g


class Paddle(Numpy):
    name, api = "paddle", "paddle.Tensor"

    def __init__(self):
        os.environ.setdefault("GLOG_v", "0")
        os.environ.setdefault("GLOG_minloglevel", "2")
        import paddle
        paddle.set_device("cpu")
        self.m = paddle

    def version(self):
        return self.m.__version__

    def t(self, a):
        return self.m.to_tensor(np.array(a))

    def np(self, t):
        return t.numpy() if isinstance(t, self.m.Tensor) else np.asarray(t)

    def is_tensor(self, v):
        return isinstance(v, self.m.Tensor)

    def lit(self, obj):
        return self.m.to_tensor(obj)

    def from_numpy(self, a):
        return self.m.to_tensor(a)

    def to_numpy(self, t):
        return t.numpy()

    def sum(self, t, axis=None, keepdims=False):
        return self.m.sum(t, axis=axis, keepdim=keepdims)

    def mean(self, t):
        return self.m.mean(t)

    def argmax(self, t):
        return self.m.argmax(t)

    def argsort(self, t):
        return self.m.argsort(t, stable=True)

    def grad(self, fn, x):
        x = x.clone()
        x.stop_gradient = False
        fn(x).backward()
        return x.grad


class MindSpore(Numpy):
    name, api = "mindspore", "mindspore.Tensor"

    def __init__(self):
        os.environ.setdefault("GLOG_v", "4")
        import mindspore as ms
        ms.set_context(mode=ms.PYNATIVE_MODE)
        ms.set_device("CPU")
        self.m = ms

    def version(self):
        return self.m.__version__

    def sync(self):
        self.m.runtime.synchronize()

    def t(self, a):
        return self.m.Tensor(np.array(a))

    def np(self, t):
        return t.asnumpy() if isinstance(t, self.m.Tensor) else np.asarray(t)

    def is_tensor(self, v):
        return isinstance(v, self.m.Tensor)

    def lit(self, obj):
        return self.m.Tensor(obj)

    def from_numpy(self, a):
        return self.m.Tensor(a)

    def to_numpy(self, t):
        return t.asnumpy()

    def sum(self, t, axis=None, keepdims=False):
        return self.m.ops.sum(t, dim=axis, keepdim=keepdims)

    def mean(self, t):
        return self.m.ops.mean(t)

    def argmax(self, t):
        return self.m.ops.argmax(t)

    def argsort(self, t):
        return self.m.ops.argsort(t)  # no stable option: its default order is what users get

    def grad(self, fn, x):
        return self.m.grad(fn)(x)


class MegEngine(Numpy):
    name, api = "megengine", "megengine.Tensor"

    def __init__(self):
        import megengine as mge
        import megengine.functional as F
        self.m, self.F = mge, F

    def version(self):
        return self.m.__version__

    def sync(self):
        self.m._full_sync()

    def t(self, a):
        return self.m.tensor(np.array(a))

    def np(self, t):
        return t.numpy() if isinstance(t, self.m.Tensor) else np.asarray(t)

    def is_tensor(self, v):
        return isinstance(v, self.m.Tensor)

    def lit(self, obj):
        return self.m.tensor(obj)

    def from_numpy(self, a):
        return self.m.tensor(a)

    def to_numpy(self, t):
        return t.numpy()

    def sum(self, t, axis=None, keepdims=False):
        return self.F.sum(t, axis=axis, keepdims=keepdims)

    def mean(self, t):
        return self.F.mean(t)

    def argmax(self, t):
        return self.F.argmax(t)

    def argsort(self, t):
        return self.F.argsort(t)  # no stable option

    def grad(self, fn, x):
        from megengine.autodiff import GradManager
        x = self.m.Parameter(self.np(x))
        gm = GradManager().attach([x])
        with gm:
            gm.backward(fn(x))
        return x.grad


class MXNet(Numpy):
    name, api = "mxnet", "mxnet.nd.NDArray"

    def __init__(self):
        import mxnet as mx
        self.m = mx

    def version(self):
        return self.m.__version__

    def sync(self):
        self.m.nd.waitall()

    def t(self, a):
        a = np.array(a)
        return self.m.nd.array(a, dtype=a.dtype)

    def np(self, t):
        return t.asnumpy() if isinstance(t, self.m.nd.NDArray) else np.asarray(t)

    def is_tensor(self, v):
        return isinstance(v, self.m.nd.NDArray)

    def lit(self, obj):
        return self.m.nd.array(obj)

    def from_numpy(self, a):
        return self.m.nd.array(a)

    def to_numpy(self, t):
        return t.asnumpy()

    def sum(self, t, axis=None, keepdims=False):
        return self.m.nd.sum(t, axis=axis, keepdims=keepdims) if axis is not None else self.m.nd.sum(t)

    def mean(self, t):
        return self.m.nd.mean(t)

    def argmax(self, t):
        return self.m.nd.argmax(t, axis=0)

    def argsort(self, t):
        return self.m.nd.argsort(t)  # no stable option

    def grad(self, fn, x):
        x = x.copy()
        x.attach_grad()
        with self.m.autograd.record():
            loss = fn(x)
        loss.backward()
        return x.grad


class Jax(Numpy):
    name, api = "jax", "jax.Array"
    immutable = "jax.Array is immutable: there is no in-place update (x.at[i].set returns a new array)"

    def __init__(self):
        os.environ["JAX_PLATFORMS"] = "cpu"
        import jax
        import jax.numpy as jnp
        self.m, self.jnp = jax, jnp

    def version(self):
        return self.m.__version__

    def t(self, a):
        return self.jnp.asarray(np.array(a))

    def np(self, t):
        return np.asarray(t)

    def is_tensor(self, v):
        return isinstance(v, self.m.Array)

    def lit(self, obj):
        return self.jnp.asarray(obj)

    def from_numpy(self, a):
        return self.jnp.asarray(a)

    def to_numpy(self, t):
        return np.asarray(t)

    def setitem(self, t, idx, v):
        return t.at[idx].set(v)  # JAX's indexed write: a new array

    def sum(self, t, axis=None, keepdims=False):
        return self.jnp.sum(t, axis=axis, keepdims=keepdims)

    def mean(self, t):
        return self.jnp.mean(t)

    def argmax(self, t):
        return self.jnp.argmax(t)

    def argsort(self, t):
        return self.jnp.argsort(t, stable=True)

    def grad(self, fn, x):
        return self.m.grad(fn)(x)


ADAPTERS = {"numpy": Numpy, "torch": Torch, "tensorflow": TensorFlow, "paddle": Paddle, "mindspore": MindSpore,
            "megengine": MegEngine, "mxnet": MXNet, "jax": Jax}

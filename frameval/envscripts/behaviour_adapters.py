"""The small adapter each behaviour case is written against
(frameval/envscripts/behaviour_cases.py): making a tensor from an array, reading one
back, and the few operations whose spelling differs between frameworks
(`sum(dim=)` against `sum(axis=)`, a gradient, an indexed write). Everything
else a case does (indexing, operators) is each framework's own.

Each adapter uses what a framework's users write: `torch.from_numpy` for
sharing, a `tf.Variable`'s `assign` for TensorFlow's indexed writes, JAX's
`.at[...].set`. Where a framework has no such thing the method raises
`NotApplicable(why)`, and the case reads "not applicable" with that reason.
Here: the reference (`Numpy`) every adapter overrides where its framework
differs; each framework's adapter is its folder's part
(frameval/frameworks/<fw>/behaviour.py), found by name (`adapter`).
numpy + standard library + the framework, imported only when chosen.
"""
from __future__ import annotations

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


    def gelu(self, t):
        """The framework's GELU function called with no options (the reference: the definition)."""
        from .behaviour_cases import gelu_exact
        return gelu_exact(t).astype(np.float32)

    def gelu_layer(self, t):
        """Its GELU layer (module, cell) built with no options, applied to t."""
        return self.gelu(t)


def adapter(framework: str):
    """The adapter class for `framework`: "numpy" is the reference, every other its
    folder's part (frameval/frameworks/<fw>/behaviour.py: ADAPTER)."""
    if framework == Numpy.name:
        return Numpy
    from frameval import frameworks
    return frameworks.part(framework, "behaviour").ADAPTER

"""TensorFlow's adapter for the behaviour cases (what each method means: frameval/envscripts/behaviour_adapters.py,
whose `Numpy` is the reference). numpy + standard library + the framework, loaded only in its own environment."""
from __future__ import annotations

import numpy as np

from frameval.envscripts.behaviour_adapters import Numpy


class TensorFlow(Numpy):
    name, api = "tensorflow", "tf.Tensor"
    immutable = "tf.Tensor is immutable: += makes a new tensor (a tf.Variable's assign_add updates in place)"

    def __init__(self):
        from frameval.frameworks.tensorflow import support  # noqa: F401 - its log silencing
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

    def gelu(self, t):
        return self.m.nn.gelu(t)

    def gelu_layer(self, t):
        return __import__("keras").layers.Activation("gelu")(t)


ADAPTER = TensorFlow

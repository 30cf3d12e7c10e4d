"""JAX's adapter for the behaviour cases (what each method means: frameval/envscripts/behaviour_adapters.py,
whose `Numpy` is the reference). numpy + standard library + the framework, loaded only in its own environment."""
from __future__ import annotations

import os

import numpy as np

from frameval.envscripts.behaviour_adapters import NotApplicable, Numpy


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

    def gelu(self, t):
        return self.m.nn.gelu(t)

    def gelu_layer(self, t):
        raise NotApplicable("JAX has no layer classes of its own (Flax's nn.gelu is jax.nn.gelu)")


ADAPTER = Jax

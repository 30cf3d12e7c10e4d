"""MXNet's adapter for the behaviour cases (what each method means: frameval/envscripts/behaviour_adapters.py,
whose `Numpy` is the reference). numpy + standard library + the framework, loaded only in its own environment."""
from __future__ import annotations

import numpy as np

from frameval.envscripts.behaviour_adapters import NotApplicable, Numpy


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

    def gelu(self, t):
        return self.m.nd.LeakyReLU(t, act_type="gelu")

    def gelu_layer(self, t):
        nn = self.m.gluon.nn
        if not hasattr(nn, "GELU"):
            raise NotApplicable("mxnet.gluon.nn has no GELU layer")
        return nn.GELU()(t)


ADAPTER = MXNet

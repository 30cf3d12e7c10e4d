"""MindSpore's adapter for the behaviour cases (what each method means: frameval/envscripts/behaviour_adapters.py,
whose `Numpy` is the reference). numpy + standard library + the framework, loaded only in its own environment."""
from __future__ import annotations

import os

import numpy as np

from frameval.envscripts.behaviour_adapters import Numpy


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

    def gelu(self, t):
        return self.m.ops.gelu(t)

    def gelu_layer(self, t):
        return self.m.nn.GELU()(t)


ADAPTER = MindSpore

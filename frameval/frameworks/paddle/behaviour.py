"""PaddlePaddle's adapter for the behaviour cases (what each method means: frameval/envscripts/behaviour_adapters.py,
whose `Numpy` is the reference). numpy + standard library + the framework, loaded only in its own environment."""
from __future__ import annotations

import os

import numpy as np

from frameval.envscripts.behaviour_adapters import Numpy


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

    def gelu(self, t):
        return self.m.nn.functional.gelu(t)

    def gelu_layer(self, t):
        return self.m.nn.GELU()(t)


ADAPTER = Paddle

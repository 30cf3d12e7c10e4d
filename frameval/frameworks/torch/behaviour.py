"""PyTorch's adapter for the behaviour cases (what each method means: frameval/envscripts/behaviour_adapters.py,
whose `Numpy` is the reference). numpy + standard library + the framework, loaded only in its own environment."""
from __future__ import annotations

import numpy as np

from frameval.envscripts.behaviour_adapters import Numpy


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

    def gelu(self, t):
        return self.m.nn.functional.gelu(t)

    def gelu_layer(self, t):
        return self.m.nn.GELU()(t)


ADAPTER = Torch

"""MegEngine's adapter for the behaviour cases (what each method means: frameval/envscripts/behaviour_adapters.py,
whose `Numpy` is the reference). numpy + standard library + the framework, loaded only in its own environment."""
from __future__ import annotations

import numpy as np

from frameval.envscripts.behaviour_adapters import NotApplicable, Numpy


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

    def gelu(self, t):
        return self.F.nn.gelu(t)

    def gelu_layer(self, t):
        import megengine.module as M
        if not hasattr(M, "GELU"):
            raise NotApplicable("megengine.module has no GELU layer")
        return M.GELU()(t)


ADAPTER = MegEngine

"""MegEngine: F.max_pool2d's backward sends the gradient to every tied maximum.

A 2x2 window [[1, 1], [1, 1]] gets gradient 1 on all four elements; PyTorch
(and the spec's reference) give it to one element, the first maximum. After
conv + ReLU on MNIST's flat background ties are everywhere, so LeNet's first
Adam update was 73% off the reference. frameval's LeNet pools with argmax +
indexing_one_hot. Exit 1 while the defect is present, 0 once fixed.
"""
import sys

import numpy as np
import megengine
import megengine.functional as F
from megengine.autodiff import GradManager

print("version:", megengine.__version__)
x = megengine.tensor(np.ones((1, 1, 2, 2), np.float32))
gm = GradManager().attach([x])
with gm:
    y = F.max_pool2d(x, 2, 2)
    gm.backward(y.sum())
g = x.grad.numpy().ravel()
print("input [[1, 1], [1, 1]], pooled", float(y.numpy().ravel()[0]), "; gradient per element:", g.tolist(),
      "(expected one element 1, the others 0)")
present = float(g.sum()) != 1.0
print("defect", "present" if present else "fixed", f"(gradient total {float(g.sum()):g}, expected 1)")
sys.exit(1 if present else 0)

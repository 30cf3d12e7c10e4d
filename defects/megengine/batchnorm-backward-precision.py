"""MegEngine: M.BatchNorm2d's backward loses precision in the per-channel sums.

The bias gradient of a batch norm is the per-channel sum of the upstream
gradient. With an upstream gradient whose per-channel mean almost cancels (as
in the DCGAN generator), MegEngine's fused backward is several times further
from the float64 value than a plain float32 sum; the generator's gradients were
1.6e-3 off the reference at batch 64 (tolerance 1e-3). frameval's DCGAN uses
fw.BatchNorm2d, batch norm written in MegEngine ops. Exit 1 while the defect is
present, 0 once fixed.
"""
import sys

import numpy as np
import megengine
import megengine.module as M
from megengine.autodiff import GradManager

print("version:", megengine.__version__)
rng = np.random.default_rng(0)
N, C, S = 64, 64, 14
x = rng.standard_normal((N, C, S, S)).astype(np.float32)
dy = rng.standard_normal((N, C, S, S))
dy = (dy - dy.mean(axis=(0, 2, 3), keepdims=True) + 1e-4 * rng.standard_normal((1, C, 1, 1))).astype(np.float32)
bn = M.BatchNorm2d(C)
xt = megengine.tensor(x)
gm = GradManager().attach(list(bn.parameters()))
with gm:
    y = bn(xt)
    gm.backward((y * megengine.tensor(dy)).sum())
got = bn.bias.grad.numpy().ravel()
ref = dy.astype(np.float64).sum(axis=(0, 2, 3))
plain = dy.sum(axis=(0, 2, 3), dtype=np.float32)
size = np.abs(ref).max()
err_mge, err_plain = float(np.abs(got - ref).max() / size), float(np.abs(plain - ref).max() / size)
print(f"bias gradient (per-channel sum of {N * S * S} terms that almost cancel), max error relative to the sums: "
      f"BatchNorm2d {err_mge:.2e}, float32 numpy sum {err_plain:.2e}")
present = err_mge > 5 * max(err_plain, 1e-7)
print("defect", "present" if present else "fixed", "(present when more than 5x the float32 sum's error)")
sys.exit(1 if present else 0)

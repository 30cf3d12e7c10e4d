"""MegEngine: the CPU convolution backward is very slow (a measurement, no workaround).

The DCGAN generator's 256->128 5x5 stride-2 transposed convolution: its
backward takes far longer than its forward on the CPU (about 5 s at batch 64 on
a 2-core machine with megengine 1.13.0; 13x the forward at batch 16). A
backward is about two convolutions' work (input and weight gradients): measured
here at batch 8 with one thread, present while it takes more than 5x the forward.
Exit 1 while present, 0 once fixed.
"""
import sys
import time

import numpy as np
import megengine
import megengine.module as M
from megengine.autodiff import GradManager

print("version:", megengine.__version__)
megengine.set_default_device("cpu0")
np.random.seed(0)
layer = M.ConvTranspose2d(256, 128, 5, stride=2, padding=2, output_padding=1)
x = megengine.tensor(np.random.randn(8, 256, 7, 7).astype(np.float32))
gm = GradManager().attach(list(layer.parameters()) + [x])


def timed(fn, n=2):
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        megengine._full_sync()
        best = min(best, time.perf_counter() - t0)
    return best


fwd = timed(lambda: layer(x))


def both():
    with gm:
        gm.backward(layer(x).mean())


total = timed(both)
back = max(total - fwd, 0.0)
ratio = back / fwd if fwd > 0 else float("inf")
print(f"batch 8, 256->128 5x5 stride 2 transposed conv: forward {fwd * 1e3:.1f} ms, backward {back * 1e3:.1f} ms "
      f"({ratio:.1f}x the forward)")
present = ratio > 5
print("defect", "present" if present else "fixed", "(present above 5x)")
sys.exit(1 if present else 0)

"""MegEngine: an elementwise op on a column slice and a broadcast vector reads the slice's rows wrongly.

A column slice of a 2-D tensor (`a[:, 3:]`, rows strided by the full width)
plus a 1-D vector broadcast over its rows comes out wrong on the CPU
(megengine 1.13.0, eager and under jit.trace): the kernel walks the slice's
elements as if its rows were packed one after another, so row 0 is right and
every later row is read from the wrong place. The same slice plus a tensor of
its own shape, or plus a scalar, is right; so is a packed tensor plus the
vector. frameval's GRU (-p lstm.cell=gru, written in MegEngine ops) meets it
where its first step adds bias_hh's gate slices to the input part's: it
starts from a zero state tensor, so every step adds two tensors of one shape.
Exit 1 while the defect is present, 0 once fixed.
"""
import sys

import numpy as np
import megengine
import megengine.functional as F
from megengine.jit import trace

print("version:", megengine.__version__)
megengine.set_default_device("cpu0")
rng = np.random.RandomState(0)
a = rng.standard_normal((4, 6)).astype(np.float32)
b = rng.standard_normal(3).astype(np.float32)
A, B = megengine.tensor(a), megengine.tensor(b)


@trace(symbolic=True)
def traced(A, B):
    return A[:, 3:] + B


cases = {
    "a[:, 3:] + b (b broadcast over rows)": (lambda: A[:, 3:] + B, a[:, 3:] + b),
    "a[:, 3:] * b": (lambda: A[:, 3:] * B, a[:, 3:] * b),
    "b + a[:, 3:]": (lambda: B + A[:, 3:], b + a[:, 3:]),
    "a[:, 3:] + b under jit.trace(symbolic=True)": (lambda: traced(A, B), a[:, 3:] + b),
    "control: a[:, 3:] + a tensor of its shape": (lambda: A[:, 3:] + megengine.tensor(np.ones((4, 3), np.float32)),
                                                   a[:, 3:] + 1),
    "control: a[:, 3:] + 1.0": (lambda: A[:, 3:] + 1.0, a[:, 3:] + 1),
    "control: packed (4, 3) + b": (lambda: megengine.tensor(a[:, 3:].copy()) + B, a[:, 3:] + b),
}
wrong = []
for name, (fn, want) in cases.items():
    err = float(np.abs(fn().numpy() - want).max())
    print(f"{name}: max difference {err:.3g}")
    if err > 1e-6 and not name.startswith("control"):
        wrong.append(name)
controls = [n for n, (fn, want) in cases.items() if n.startswith("control") and np.abs(fn().numpy() - want).max() > 1e-6]
if controls:  # the plain cases are wrong too: something else is broken, the comparison would mean nothing
    print("no verdict: the controls are wrong too:", controls)
    sys.exit(3)
print("defect", "present" if wrong else "fixed", "(tolerance 1e-6)")
sys.exit(1 if wrong else 0)

"""MXNet: no AdamW; mx.optimizer.Adam's weight decay is an L2 term through the gradient, not decoupled.

mx.optimizer registers no AdamW (1.9.1), and Adam(wd=...) adds wd * w to the
gradient before the moments, so Adam normalises the decay: on a zero
gradient the first step moves a weight of 1 by about lr, where AdamW's
decoupled decay (the spec's, PyTorch's) moves it by lr * wd, 10x less at
wd 0.1. Only the fused kernel contrib.adamw_update decouples it, and it has
no bias correction. frameval's GPT notebook writes AdamW out over that kernel
(fw.AdamW). Exit 1 while MXNet has no decoupled AdamW optimizer, 0 once
mx.optimizer registers one whose zero-gradient step is the decoupled decay.
"""
import sys

import mxnet as mx
from mxnet import nd

print("version:", mx.__version__)
lr, wd = 1e-3, 0.1


def first_step(opt):
    """How far one step with a zero gradient moves a weight of 1."""
    w = nd.ones((1,))
    opt.update(0, w, nd.zeros((1,)), opt.create_state(0, w))
    return 1.0 - float(w.asnumpy()[0])


decoupled = lr * wd
registered = sorted(n for n in mx.optimizer.Optimizer.opt_registry if "adamw" in n)
print("optimizers named like adamw:", registered or "none")
moved = first_step(mx.optimizer.Adam(learning_rate=lr, wd=wd))
print(f"Adam(wd={wd}) moves a weight of 1 by {moved:.4g} on a zero gradient; decoupled decay moves it by {decoupled:.4g}")
fixed = False
for name in registered:
    got = first_step(mx.optimizer.create(name, learning_rate=lr, wd=wd))
    print(f"{name} moves it by {got:.4g}")
    fixed = fixed or abs(got - decoupled) <= 1e-3 * decoupled
print("defect", "fixed" if fixed else "present")
sys.exit(0 if fixed else 1)

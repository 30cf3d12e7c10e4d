"""MXNet: under contrib.amp (bfloat16, CPU), a hybridized Dense -> reshape -> Conv2DTranspose dies in backward (a measurement, no workaround).

amp.init(target_dtype="bfloat16") runs Dense (FullyConnected, on its BF16 list)
in bfloat16 and keeps Deconvolution (on its FP32 list) in float32, with an
amp_cast between them. Hybridized (a CachedOp, static_alloc or not), the
backward of that block aborts the process ("terminate called without an active
exception") or raises "could not create a primitive descriptor for a reorder
primitive" when the Dense weight's gradient is read (mxnet 1.9.1, oneDNN). The
same block runs imperatively under the AMP, and hybridized in float32. It is the
DCGAN generator's head (Dense 100 -> 256*7*7, reshape, BatchNorm, LeakyReLU,
Conv2DTranspose): frameval's DCGAN runs bf16 in eager mode only; its graph-mode
bf16 run fails with this error (no workaround: the AMP's own lists place the
cast). The abort takes the process down, so each case runs in a child process.
Exit 1 while the defect is present, 0 once fixed.
"""
import subprocess
import sys

import mxnet as mx

print("version:", mx.__version__)
CHILD = r"""
import sys
import numpy as np
import mxnet as mx
from mxnet import autograd, gluon, nd
from mxnet.gluon import nn
from mxnet.contrib import amp
hybrid, mixed = sys.argv[1] == "hybrid", sys.argv[2] == "bf16"
if mixed:
    amp.init(target_dtype="bfloat16")


class Head(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.fc = nn.Dense(64 * 7 * 7, use_bias=False, in_units=16)
            self.deconv = nn.Conv2DTranspose(8, 5, strides=1, padding=2, in_channels=64, use_bias=False)

    def hybrid_forward(self, F, z):
        return self.deconv(F.reshape(self.fc(z), shape=(-1, 64, 7, 7)))


mx.random.seed(0)
net = Head()
net.initialize(mx.init.Normal(0.05))
if hybrid:
    net.hybridize(static_alloc=True)
z = nd.array(np.random.RandomState(0).standard_normal((4, 16)).astype(np.float32))
with autograd.record():
    loss = nd.mean(net(z) ** 2)
loss.backward()
g = net.fc.weight.grad().asnumpy()
print("RESULT", float(np.linalg.norm(g)))
"""


def case(mode, precision):
    r = subprocess.run([sys.executable, "-c", CHILD, mode, precision], capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr
    norm = next((float(l.split()[1]) for l in out.splitlines() if l.startswith("RESULT")), None)
    said = next((l.strip() for l in out.splitlines() if "primitive" in l or "terminate" in l or "Error" in l), "")
    print(f"{mode:6s} {precision:7s}: exit {r.returncode}, " + (f"|grad fc.weight| {norm:.6g}" if norm is not None
                                                             else f"no gradient: {said[:160]}"))
    return norm


eager_bf16 = case("eager", "bf16")
hybrid_f32 = case("hybrid", "float32")
hybrid_bf16 = case("hybrid", "bf16")
fixed = hybrid_bf16 is not None and eager_bf16 is not None and abs(hybrid_bf16 - eager_bf16) <= 1e-2 * eager_bf16
print("defect", "fixed" if fixed else "present (hybridized Dense -> reshape -> Conv2DTranspose backward under AMP bf16)")
sys.exit(0 if fixed else 1)

"""MXNet (oneDNN, CPU): the input gradient of a transposed convolution with one output channel fails.

The DCGAN generator's last layer (64 -> 1 channel, 5x5, stride 2) is exactly
that: its backward with respect to the input raises "could not create a
primitive descriptor for a reorder primitive" (mxnet 1.9.1); 2 output channels
work. frameval computes that layer as zero insertion + an ordinary convolution
with the flipped kernel. Exit 1 while the defect is present, 0 once fixed.
"""
import sys

import numpy as np
import mxnet as mx
from mxnet import autograd, nd
from mxnet.gluon import nn

print("version:", mx.__version__)
np.random.seed(0)
layer = nn.Conv2DTranspose(1, 5, strides=2, padding=2, output_padding=1, in_channels=64)
layer.initialize()
x = nd.array(np.random.randn(4, 64, 14, 14).astype(np.float32))
x.attach_grad()
try:
    with autograd.record():
        y = layer(x)
    y.backward()
    g = x.grad.asnumpy()
except mx.base.MXNetError as e:
    line = next((ln for ln in str(e).splitlines() if "primitive" in ln or "Check failed" in ln), str(e).splitlines()[0])
    print("backward failed:", line.strip()[:200])
    print("defect present (input gradient of a 1-output-channel Conv2DTranspose)")
    sys.exit(1)
print(f"backward ran: output {y.shape}, input gradient max |g| {float(np.abs(g).max()):.4g}")
present = not np.isfinite(g).all()
print("defect", "present" if present else "fixed")
sys.exit(1 if present else 0)

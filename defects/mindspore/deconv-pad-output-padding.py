"""MindSpore: nn.Conv2dTranspose with pad_mode="pad", padding and output_padding gives wrong numbers.

Stride 2, 5x5, padding=2, output_padding=1 (the DCGAN generator's layers, PyTorch's
semantics) gives the right 14x14 shape, but values that match no crop of the
full transposed convolution. frameval runs pad_mode="valid" and slices
[2:-1]. Compared here with a numpy transposed convolution. Exit 1 while the
defect is present, 0 once fixed.
"""
import os
import sys

os.environ.setdefault("GLOG_v", "3")
os.environ.setdefault("ONEDNN_MAX_CPU_ISA", "AVX2")
import numpy as np
import mindspore as ms
from mindspore import Tensor, nn

print("version:", ms.__version__)
ms.set_context(mode=ms.PYNATIVE_MODE)
rng = np.random.default_rng(0)
x = rng.standard_normal((2, 4, 7, 7)).astype(np.float32)
w = rng.standard_normal((4, 3, 5, 5)).astype(np.float32)  # (in, out, kh, kw)
layer = nn.Conv2dTranspose(4, 3, 5, stride=2, pad_mode="pad", padding=2, output_padding=1, has_bias=False)
layer.weight.set_data(Tensor(w))
got = layer(Tensor(x)).asnumpy()
full = np.zeros((2, 3, 2 * 6 + 5, 2 * 6 + 5))  # (H-1)*stride + k = 17
for kh in range(5):
    for kw in range(5):
        full[:, :, kh:kh + 13:2, kw:kw + 13:2] += np.einsum("nchw,co->nohw", x, w[:, :, kh, kw])
ref = full[:, :, 2:16, 2:16]  # PyTorch: crop padding=2 at the start; output 14 = 13 - 4 + 5 + 1
err = float(np.abs(got - ref).max()) if got.shape == ref.shape else float("inf")
print(f"output {got.shape}, reference {ref.shape}, max difference {err:.3g} (values up to {np.abs(ref).max():.3g})")
present = err > 1e-3
print("defect", "present" if present else "fixed")
sys.exit(1 if present else 0)

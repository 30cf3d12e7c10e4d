"""MegEngine: F.nn.multi_head_attention(..., is_causal=True) fails on the CPU.

MegEngine 1.13's fused attention (`F.nn.multi_head_attention`, behind
`M.MultiHeadAttention`) runs on the CPU with an explicit attention mask, but
with `is_causal=True` it fails: a dtype assertion in an elementwise op
(`dtype == i->dtype`, megdnn elemwise check_layout_and_broadcast). frameval's
GPT passes the causal mask as `attn_mask` (fw.causal_mask). Here: batch 2, 6
tokens, width 16, 4 heads with projections and biases, both ways, against
numpy float64. Exit 1 while `is_causal=True` fails (or is off by more than
1e-5), 0 once it runs and agrees.
"""
import math
import sys

import numpy as np
import megengine
import megengine.functional as F

print("version:", megengine.__version__)
megengine.set_default_device("cpu0")
rng = np.random.default_rng(0)
B, T, C, H = 2, 6, 16, 4
x = rng.standard_normal((B, T, C))
wqkv, wo = rng.standard_normal((3 * C, C)) * 0.2, rng.standard_normal((C, C)) * 0.2  # (out, in)
bqkv, bo = rng.standard_normal(3 * C) * 0.1, rng.standard_normal(C) * 0.1
qkv = x @ wqkv.T + bqkv
q, k, v = (qkv[..., i * C:(i + 1) * C].reshape(B, T, H, -1).transpose(0, 2, 1, 3) for i in range(3))
s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(C // H)
s = np.where(np.tril(np.ones((T, T), bool)), s, -np.inf)
p = np.exp(s - s.max(-1, keepdims=True))
p /= p.sum(-1, keepdims=True)
ref = (p @ v).transpose(0, 2, 1, 3).reshape(B, T, C) @ wo.T + bo
# io_weight_bias: query, key, value and output weights as (in, out) (Y = X W), then their biases
io = np.concatenate([wqkv[:C].T.ravel(), wqkv[C:2 * C].T.ravel(), wqkv[2 * C:].T.ravel(), wo.T.ravel(),
                     bqkv[:C], bqkv[C:2 * C], bqkv[2 * C:], bo]).astype(np.float32)
xt = megengine.tensor(x.astype(np.float32))
megengine.config.async_level = 0  # the error where it happens, not at the next sync


def attend(**mask):
    return F.nn.multi_head_attention(xt, xt, xt, C, H, 0.0, 0.0, megengine.tensor(io), qbias=True, kbias=True,
                                     vbias=True, obias=True, **mask)[0].numpy()


explicit = attend(attn_mask=megengine.tensor(np.triu(np.full((T, T), -np.inf, np.float32), 1)))
rel = lambda a: float(np.abs(a - ref).max() / np.abs(ref).max())
print(f"with the causal mask as attn_mask: max error relative to float64 {rel(explicit):.2e}")
try:
    err = rel(attend(is_causal=True))
except Exception as e:  # noqa: BLE001 - the failure is the finding
    cause = e.__cause__ or e
    print(f"with is_causal=True ({B}x{T}x{C}, {H} heads, CPU): {type(cause).__name__}: "
          f"{str(cause).strip().splitlines()[0][:160]}")
    print("defect present (is_causal=True fails on the CPU)")
    sys.exit(1)
print(f"with is_causal=True: max error relative to float64 {err:.2e}")
present = err > 1e-5
print("defect", "present" if present else "fixed", "(tolerance 1e-5)")
sys.exit(1 if present else 0)

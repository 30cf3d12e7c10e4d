"""Paddle: scaled_dot_product_attention(is_causal=True) on the CPU lets a query attend to later keys when its scores are far below zero (a measurement, no workaround).

A measurement (no workaround in frameval: the GPT's attention scores stay a few
units from zero, where the mask is exact). On the CPU the call runs its "math"
backend, which masks by adding -1e4 above the diagonal (paddle/nn/functional/
flash_attention.py, get_triangle_upper_mask) instead of -inf: a masked score
s - 1e4 wins the softmax over an allowed one below s - 1e4. Here query 0 may
only see key 0 (score -3e4); the later key 1 (score 0) gets its weight, so the
output is value 1, not value 0 (Paddle 3.3.1). Exit 1 while the defect is
present, 0 once fixed.
"""
import os
import sys

os.environ["GLOG_v"] = "0"
os.environ["GLOG_minloglevel"] = "2"
import numpy as np
import paddle
import paddle.nn.functional as F

print("version:", paddle.__version__)
paddle.set_device("cpu")
# (batch, length, heads, head size) = (1, 2, 1, 1); scale 1 / sqrt(1) = 1
q = paddle.to_tensor(np.array([1.0, 1.0], np.float32).reshape(1, 2, 1, 1))
k = paddle.to_tensor(np.array([-3e4, 0.0], np.float32).reshape(1, 2, 1, 1))
v = paddle.to_tensor(np.array([0.0, 1.0], np.float32).reshape(1, 2, 1, 1))
out = F.scaled_dot_product_attention(q, k, v, is_causal=True).numpy().reshape(-1)
# causal: query 0 sees key 0 only -> value 0; query 1 sees both, key 1's score is far larger -> value 1
expected = np.array([0.0, 1.0])
print("output per query:", out, " causal attention gives:", expected)
present = abs(out[0] - expected[0]) > 0.5
print("defect", "present (query 0 attended to key 1, a later position)" if present else "fixed")
sys.exit(1 if present else 0)

"""Paddle: scaled_dot_product_attention(is_causal=True) on bfloat16 under auto_cast in a converted forward fails on the CPU (a measurement, no workaround: the GPT's bf16 runs are recorded as not offered).

Inside paddle.jit.to_static, paddle.amp.auto_cast(dtype="bfloat16", level="O1")
computes q, k and v (matmuls, on its white list) in bfloat16; on the CPU
F.scaled_dot_product_attention runs its math backend, whose causal mask
(flash_attention.py, get_triangle_upper_mask) calls paddle.triu on the bfloat16
scores, and the trace fails with "(InvalidType) Check data type error for op:
triu, input: x, x.dtype: bfloat16, and expected_dtype: bool, complex128,
complex64, float16, float32, float64, int32, int64" (Paddle 3.3.1). Exit 1
while the defect is present, 0 once fixed.
"""
import os
import sys

os.environ["GLOG_v"] = "0"
os.environ["GLOG_minloglevel"] = "2"
import paddle
import paddle.nn.functional as F

print("version:", paddle.__version__, "on", paddle.get_device())
w = paddle.ones([4, 4], dtype="float32")


def attention(x):
    with paddle.amp.auto_cast(enable=True, dtype="bfloat16", level="O1"):
        q = paddle.matmul(x, w).reshape([0, 0, 2, 2])  # (batch 1, length 3, 2 heads of width 2), bfloat16
        out = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    return out.astype("float32")  # a float32 output: a converted program's bfloat16 output fails on its own


try:
    out = paddle.jit.to_static(attention, full_graph=True, backend=None)(paddle.ones([1, 3, 4], dtype="float32"))
except (TypeError, ValueError) as e:
    lines = [l.strip() for l in str(e).strip().splitlines() if l.strip()]
    print("converted attention failed:", lines[-1][:300] if lines else type(e).__name__)
    print("defect present (causal attention under bfloat16 auto_cast in to_static, CPU)")
    sys.exit(1)
print("converted attention ran:", out.dtype, tuple(out.shape))
print("defect fixed")
sys.exit(0)

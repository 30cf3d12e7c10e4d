"""Paddle: paddle.amp.auto_cast(dtype="bfloat16") does nothing in the dynamic graph on the CPU (a measurement, no workaround: bf16 eager runs are recorded as not offered).

In the dynamic graph (eager mode), Paddle 3.3.1's auto_cast warns "amp_guard can
only be enabled on CUDAPlace, XPUPlace, and CustomPlace, current place is
Place(cpu), so it makes no effect" and every op under it computes in float32,
although paddle.amp.is_bfloat16_supported() is True on this CPU and the same
auto_cast inside paddle.jit.to_static computes the matmul in bfloat16. frameval
records a bf16 eager run as not offered (frameworks/paddle/support.py,
autocast). The operands are 1 + 2^-10, which bfloat16 rounds to 1: a product
computed in bfloat16 gives exactly 4.0, one in float32 4.0078. Exit 1 while the
defect is present, 0 once fixed.
"""
import os
import sys
import warnings

os.environ["GLOG_v"] = "0"
os.environ["GLOG_minloglevel"] = "2"
import paddle

print("version:", paddle.__version__, "on", paddle.get_device())
print("paddle.amp.is_bfloat16_supported():", paddle.amp.is_bfloat16_supported())
x = paddle.full([4, 4], 1 + 2 ** -10, dtype="float32")
with warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    with paddle.amp.auto_cast(enable=True, dtype="bfloat16", level="O1"):
        y = paddle.matmul(x, x)
for w in said:
    print("Paddle said:", f"{w.category.__name__}: {w.message}")
print("matmul under auto_cast (dynamic graph):", y.dtype, float(y.astype("float32")[0, 0]))
present = y.dtype != paddle.bfloat16
print("defect", "present (computed in float32)" if present else "fixed")
sys.exit(1 if present else 0)

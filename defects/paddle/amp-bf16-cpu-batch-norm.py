"""Paddle: BatchNorm after a bfloat16 product fails under auto_cast in a converted forward on the CPU (a measurement, no workaround: the DCGAN's bf16 runs are recorded as not offered).

Inside paddle.jit.to_static, paddle.amp.auto_cast(dtype="bfloat16", level="O1")
runs a bias-free Linear (matmul, on its white list) in bfloat16 and hands its
bfloat16 output on to BatchNorm, which is on neither list; the CPU batch_norm_
takes float32/float64 only, so the trace fails with "(InvalidType) Check data
type error for op: batch_norm_, input: x, x.dtype: bfloat16, and expected_dtype:
float32, float64" (Paddle 3.3.1). custom_black_list=["batch_norm",
"batch_norm_"] changes nothing. The DCGAN generator (fc without bias, then
BatchNorm2D) is this; frameval records its bf16 run as not offered
(frameworks/paddle/support.py, autocast(needs=("batch_norm",))). Exit 1 while
the defect is present, 0 once fixed.
"""
import os
import sys

os.environ["GLOG_v"] = "0"
os.environ["GLOG_minloglevel"] = "2"
import paddle

print("version:", paddle.__version__, "on", paddle.get_device())
paddle.seed(0)
net = paddle.nn.Sequential(paddle.nn.Linear(4, 8, bias_attr=False), paddle.nn.Unflatten(1, [2, 2, 2]),
                           paddle.nn.BatchNorm2D(2))


def forward(x):
    with paddle.amp.auto_cast(enable=True, dtype="bfloat16", level="O1"):
        return net(x).astype("float32")  # a float32 output: a converted program's bfloat16 output fails on its own


try:
    out = paddle.jit.to_static(forward, full_graph=True, backend=None)(paddle.ones([2, 4], dtype="float32"))
except (TypeError, ValueError) as e:
    lines = [l.strip() for l in str(e).strip().splitlines() if l.strip()]
    print("converted forward failed:", f"{type(e).__name__}: {lines[-1][:300] if lines else ''}")
    print("defect present (BatchNorm under bfloat16 auto_cast in to_static, CPU)")
    sys.exit(1)
print("converted forward ran:", out.dtype, tuple(out.shape))
print("defect fixed")
sys.exit(0)

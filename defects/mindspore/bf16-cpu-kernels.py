"""MindSpore: no bfloat16 CPU kernels, so its AMP cannot run at bfloat16 on the CPU (a measurement, no workaround: bf16 runs are recorded as not offered).

`mindspore.amp.auto_mixed_precision(net, "O2", dtype=mstype.bfloat16)` casts
the cells to bfloat16, and kernel selection then fails: Conv2D's CPU kernel is
registered for Float32 only, MatMul's and ReLU's for Float16 to Float64 and
the integers, none for BFloat16 (MindSpore documents its bfloat16 operators
for Ascend). The same at O1, O3 and "auto", in GRAPH_MODE and PYNATIVE_MODE,
and with ONEDNN_MAX_CPU_ISA=AVX2 (frameval's onednn-reference-conv setting) or
AVX512_CORE_AMX: the kernel registry refuses the type before oneDNN is asked.
Here: PYNATIVE_MODE, a Conv2d + ReLU + Dense cell at O2, and one bare
bfloat16 matmul. Exit 1 while either fails (or a bfloat16 matmul gives
another dtype or is off the float32 result by more than bfloat16's rounding),
0 once both run.
"""
import os
import sys

os.environ.setdefault("GLOG_v", "3")
os.environ.setdefault("ONEDNN_MAX_CPU_ISA", "AVX2")
import numpy as np
import mindspore as ms
from mindspore import Tensor, amp, nn, ops
from mindspore import dtype as mstype

print("version:", ms.__version__, "ONEDNN_MAX_CPU_ISA:", os.environ.get("ONEDNN_MAX_CPU_ISA"))
ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, pad_mode="valid", has_bias=True)
        self.dense = nn.Dense(2 * 4 * 4, 3)

    def construct(self, x):
        return self.dense(ops.relu(self.conv(x)).reshape(x.shape[0], -1))


def first_lines(e):
    keep = [ln.strip() for ln in str(e).splitlines() if ln.strip() and not set(ln.strip()) <= set("-")
            and ln.strip() != "- Kernel select failed:"]
    return " ".join(keep[:3])[:400]


failed = []
rng = np.random.default_rng(0)
x = Tensor(rng.standard_normal((2, 1, 6, 6)).astype(np.float32))
try:
    out = amp.auto_mixed_precision(Net(), "O2", dtype=mstype.bfloat16)(x)
    print("auto_mixed_precision(O2, bfloat16) forward: output", out.dtype, out.shape)
except Exception as e:  # noqa: BLE001 - the failure is the finding
    print(f"auto_mixed_precision(O2, bfloat16) forward: {type(e).__name__}: {first_lines(e)}")
    failed.append("auto_mixed_precision")
a, b = rng.standard_normal((8, 16)).astype(np.float32), rng.standard_normal((16, 4)).astype(np.float32)
try:
    r = ops.matmul(Tensor(a).astype(mstype.bfloat16), Tensor(b).astype(mstype.bfloat16))
    err = float(np.abs(r.astype(mstype.float32).asnumpy() - a @ b).max() / np.abs(a @ b).max())
    print(f"bfloat16 matmul: {r.dtype}, max error relative to float32 {err:.2e}")
    if r.dtype != mstype.bfloat16 or err > 16 * 2.0 ** -8:
        failed.append("matmul")
except Exception as e:  # noqa: BLE001
    print(f"bfloat16 matmul: {type(e).__name__}: {first_lines(e)}")
    failed.append("matmul")
present = bool(failed)
print("defect", "present" if present else "fixed", f"({', '.join(failed)} failed)" if failed else "")
sys.exit(1 if present else 0)

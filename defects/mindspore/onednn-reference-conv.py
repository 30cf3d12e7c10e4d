"""MindSpore (CPU): the bundled oneDNN runs convolutions with a slow reference kernel unless the ISA is limited.

On an AVX-512 Xeon, MindSpore's oneDNN picks `jit_uni_ncsp:conv+ref:any` for
every convolution: about 50x slower than the `x64:gemm:jit` kernel it picks
with ONEDNN_MAX_CPU_ISA=AVX2. frameval's MindSpore notebooks set
ONEDNN_MAX_CPU_ISA=AVX2 before the import. Measured here in two child
processes (the variable is read at start-up): one 64->128 5x5 stride-2 conv
forward + backward at batch 8. Present while the default is more than 5x
slower. Exit 1 while present, 0 once fixed; on a CPU without AVX-512 there is
no verdict (exit 3: could not run).
"""
import os
import subprocess
import sys

CHILD = r"""
import os, sys, time
os.environ["GLOG_v"] = "3"
import numpy as np
import mindspore as ms
from mindspore import Tensor, nn, ops
ms.set_context(mode=ms.PYNATIVE_MODE)
conv = nn.Conv2d(64, 128, 5, stride=2, pad_mode="pad", padding=2, has_bias=True)
x = Tensor(np.random.default_rng(0).standard_normal((8, 64, 14, 14)).astype(np.float32))
grad = ms.value_and_grad(lambda x: conv(x).sum(), None, conv.trainable_params())
best = 1e9
for _ in range(3):
    t0 = time.perf_counter()
    loss, g = grad(x)
    g[0].asnumpy()
    best = min(best, time.perf_counter() - t0)
print("SECONDS", best, ms.__version__)
"""


def measure(isa):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("ONEDNN_MAX_CPU_ISA", None)
    if isa:
        env["ONEDNN_MAX_CPU_ISA"] = isa
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("SECONDS")), None)
    if line is None:
        print(out.stderr[-2000:], file=sys.stderr)
        sys.exit(3)
    _, secs, version = line.split()
    return float(secs), version


try:
    flags = open("/proc/cpuinfo").read()
except OSError:
    flags = ""
if "avx512" not in flags:
    print("no verdict: this CPU has no AVX-512, where the defect shows (/proc/cpuinfo)")
    sys.exit(3)
default, version = measure(None)
avx2, _ = measure("AVX2")
print("version:", version)
ratio = default / avx2
print(f"64->128 5x5 stride-2 conv, batch 8, forward + backward: default ISA {default * 1e3:.0f} ms, "
      f"ONEDNN_MAX_CPU_ISA=AVX2 {avx2 * 1e3:.0f} ms ({ratio:.1f}x)")
present = ratio > 5
print("defect", "present" if present else "fixed", "(present above 5x)")
sys.exit(1 if present else 0)

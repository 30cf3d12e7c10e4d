"""MegEngine: its autocast takes bfloat16 but the CPU has no bfloat16 convolution or matmul (a measurement, no workaround: bf16 runs are recorded as not offered).

`megengine.amp.autocast(enabled=True, low_prec_dtype="bfloat16")` is accepted
(megengine.amp.low_prec_dtype reads "bfloat16" inside it) and casts the
operands of a convolution or a matmul to bfloat16; megdnn's CPU kernels then
fail: "not support data type of BFloat16 * BFloat16 -> BFloat16" (the
convolution, megdnn::fallback ConvBias) and "matmul not support data type of
BFloat16 * BFloat16 -> BFloat16". The same autocast at float16 runs (the
mechanism works; only bfloat16 lacks kernels). Here: one thread (cpu0), a
Conv2d and a matmul under the bfloat16 autocast, with async_level 0 so the
error is raised where it happens. Exit 1 while either fails (or gives another
dtype than bfloat16, or is off the float32 result by more than bfloat16's
rounding), 0 once both run.
"""
import sys

import numpy as np
import megengine
import megengine.functional as F
import megengine.module as M

print("version:", megengine.__version__)
megengine.set_default_device("cpu0")
megengine.config.async_level = 0  # the error where it happens, not at the next sync
rng = np.random.default_rng(0)
x = megengine.tensor(rng.standard_normal((2, 1, 6, 6)).astype(np.float32))
a = megengine.tensor(rng.standard_normal((8, 16)).astype(np.float32))
b = megengine.tensor(rng.standard_normal((16, 4)).astype(np.float32))
conv = M.Conv2d(1, 2, 3)
failed = []
for name, fn in [("conv2d", lambda: conv(x)), ("matmul", lambda: F.matmul(a, b))]:
    ref = fn().numpy()
    try:
        with megengine.amp.autocast(enabled=True, low_prec_dtype="bfloat16"):
            got = fn()
        err = float(np.abs(got.numpy().astype(np.float32) - ref).max() / np.abs(ref).max())
        print(f"{name} under autocast(bfloat16): {got.dtype}, max error relative to float32 {err:.2e}")
        if "bfloat16" not in str(got.dtype) or err > 16 * 2.0 ** -8:
            failed.append(name)
    except Exception as e:  # noqa: BLE001 - the failure is the finding
        cause = e.__cause__ or e
        print(f"{name} under autocast(bfloat16): {type(cause).__name__}: "
              f"{str(cause).split('backtrace:')[0].strip().splitlines()[0][:200]}")
        failed.append(name)
present = bool(failed)
print("defect", "present" if present else "fixed", f"({', '.join(failed)} failed)" if failed else "")
sys.exit(1 if present else 0)

"""MindSpore (PyNative): Parameter.set_data detaches the parameter from the compiled Adam update.

nn.Adam's update is @jit-compiled even in PyNative mode. After a first step,
`param.set_data(...)` swaps the parameter's storage: the compiled update keeps
writing the old one, so training silently stops moving the weight. frameval
writes into the parameter's own storage with ops.assign (fw.assign) when it puts
the initial weights back after the check. Exit 1 while the defect is present,
0 once fixed.
"""
import os
import sys

os.environ.setdefault("GLOG_v", "3")
os.environ.setdefault("ONEDNN_MAX_CPU_ISA", "AVX2")
import numpy as np
import mindspore as ms
from mindspore import Parameter, Tensor, nn

print("version:", ms.__version__)
ms.set_context(mode=ms.PYNATIVE_MODE)
w = Parameter(Tensor(np.zeros(3, np.float32)), name="w")
opt = nn.Adam([w], learning_rate=0.1)
grad = (Tensor(np.ones(3, np.float32)),)
opt(grad)
first = w.asnumpy().copy()
w.set_data(Tensor(np.zeros(3, np.float32)))  # put the initial weight back, as a check would
opt(grad)
second = w.asnumpy().copy()
print(f"after step 1: {first.tolist()}; after set_data(0) and step 2: {second.tolist()} "
      "(an update moves it away from 0)")
present = bool(np.all(second == 0.0))
print("defect", "present" if present else "fixed")
sys.exit(1 if present else 0)

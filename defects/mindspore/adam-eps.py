"""MindSpore: nn.Adam adds epsilon before the bias correction (the Keras form), not the spec's (PyTorch's) form.

nn.Adam's kernel computes lr*sqrt(1-b2^t)/(1-b1^t) * m/(sqrt(v) + eps): the
spec's update with epsilon scaled by 1/sqrt(1-b2^t). With plain nn.Adam the
check failed on the update (LSTM biases 6.8e-3, DCGAN bn0.bias 2.9e-2).
frameval's notebooks use fw.Adam (eps*sqrt(1-b2^t) into the same kernel).
Exit 1 while nn.Adam differs from the spec's, 0 once it matches.
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
lr, b1, b2, eps, g = 0.1, 0.9, 0.999, 1e-8, 1e-8
w = Parameter(Tensor(np.zeros(1, np.float32)), name="w")
opt = nn.Adam([w], learning_rate=lr, beta1=b1, beta2=b2, eps=eps)
opt((Tensor(np.full(1, g, np.float32)),))
got = -float(w.asnumpy()[0])
spec = lr * g / (np.sqrt(g * g) + eps)
print(f"one Adam step with gradient {g:g}, lr {lr}, eps {eps:g}: nn.Adam moves the weight by {got:.4g}, "
      f"the spec's Adam by {spec:.4g}")
present = abs(got - spec) > 1e-3 * spec
print("defect", "present" if present else "fixed")
sys.exit(1 if present else 0)

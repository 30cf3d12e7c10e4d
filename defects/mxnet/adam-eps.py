"""MXNet: Adam adds epsilon before the bias correction (the Keras form), not the spec's (PyTorch's) form.

mx.optimizer.Adam computes lr*sqrt(1-b2^t)/(1-b1^t) * m/(sqrt(v) + eps), which is
the spec's update with epsilon scaled by 1/sqrt(1-b2^t) (31.6x at step 1). Where
gradients are small the steps differ. frameval's notebooks pass
epsilon*sqrt(1-b2^t) to the same fused update (fw.SpecAdam). Exit 1 while
MXNet's Adam differs from the spec's, 0 once it matches.
"""
import sys

import numpy as np
import mxnet as mx
from mxnet import nd

print("version:", mx.__version__)
lr, b1, b2, eps, g = 0.1, 0.9, 0.999, 1e-8, 1e-8
opt = mx.optimizer.Adam(learning_rate=lr, beta1=b1, beta2=b2, epsilon=eps)
w = nd.zeros((1,))
state = opt.create_state(0, w)
opt.update(0, w, nd.full((1,), g), state)
got = -float(w.asnumpy()[0])
m_hat, v_hat = g, g * g  # step 1, bias-corrected
spec = lr * m_hat / (np.sqrt(v_hat) + eps)
print(f"one Adam step with gradient {g:g}, lr {lr}, eps {eps:g}: MXNet moves the weight by {got:.4g}, "
      f"the spec's Adam by {spec:.4g}")
present = abs(got - spec) > 1e-3 * spec
print("defect", "present" if present else "fixed")
sys.exit(1 if present else 0)

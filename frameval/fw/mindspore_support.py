"""MindSpore helpers shared by notebooks/mindspore/{lenet,dcgan,lstm}.ipynb.

- `Adam`: `nn.Adam` with the spec's epsilon placement (see its docstring and
  docs/frameworks/mindspore.md, "Adam epsilon"); `ADAM_EPS_PLACEMENT` is how
  the notebooks record that in `rec.settings`.
- `gpu_name()`: the GPU's name for the recorder (MindSpore has no call for it).

Imported in the setup cell after `import mindspore`, so the environment
variables the notebook sets before that import (GLOG_v, ONEDNN_MAX_CPU_ISA...)
are in place first.
"""
import os

import mindspore as ms
from mindspore import nn, ops

ADAM_EPS_PLACEMENT = "sqrt(v_hat) + eps (spec); nn.Adam kernel fed eps*sqrt(1-b2^t)"


class Adam(nn.Adam):
    """`nn.Adam` with the spec's epsilon. MindSpore's fused Adam kernel computes
    lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps): eps is added before v's bias
    correction (as in Keras). The spec, PyTorch and the numpy reference add eps to
    sqrt(v / (1 - b2^t)); passing eps * sqrt(1 - b2^t) to the same kernel gives exactly that."""

    @ms.jit  # as in nn.Adam.construct: MindSpore compiles the update in both modes
    def construct(self, gradients):
        lr = self.get_lr()
        self.assignadd(self.global_step, self.global_step_increase_tensor)
        beta1_power = self.beta1_power * self.beta1
        self.beta1_power = beta1_power
        beta2_power = self.beta2_power * self.beta2
        self.beta2_power = beta2_power
        eps = self.eps * ops.sqrt(1.0 - beta2_power)
        success = True
        for param, m, v, grad in zip(self._parameters, self.moment1, self.moment2, gradients):
            success = ops.depend(success, self.opt(param, m, v, beta1_power, beta2_power, lr,
                                                   self.beta1, self.beta2, eps, grad))
        return success


def gpu_name():
    """The name of the GPU the run uses (FRAMEVAL_GPU_INDEX, default 0), from pynvml when installed."""
    try:
        import pynvml
        pynvml.nvmlInit()
        name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(int(os.environ.get("FRAMEVAL_GPU_INDEX", "0"))))
        return name.decode() if isinstance(name, bytes) else name
    except Exception:
        return "GPU (name not available)"

"""MXNet (Gluon) helpers shared by notebooks/mxnet/{lenet,dcgan,lstm}.ipynb.

- `Adam`: Gluon's fused Adam corrected to the spec's (PyTorch's) epsilon placement.
- `check_device`, `gpu_name`: the GPU guard and the GPU name for `rec.after_import`.
- `param_count`: trainable parameters, as recorded by `rec.set_param_counts`.
- `cached_op_built`: whether `hybridize()` really built a CachedOp, for `rec.set_compiled`.

This module imports mxnet: import it only after the setup cell has set the thread
environment variables (MXNet reads them once, at import).
"""
import math

import mxnet as mx
from mxnet import nd


class Adam(mx.optimizer.Adam):
    """The spec's Adam (eps added to the bias-corrected sqrt(v)). Gluon's Adam runs
    lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t); w -= lr_t * m / (sqrt(v) + eps), i.e. eps scaled by sqrt(1 - b2^t):
    handing the fused operator eps * sqrt(1 - b2^t) instead gives lr * m_hat / (sqrt(v_hat) + eps) exactly."""

    def update(self, index, weight, grad, state):
        self._update_count(index)
        t = self._index_update_count[index]
        c1, c2 = 1 - self.beta1 ** t, 1 - self.beta2 ** t
        mean, var = state
        nd.adam_update(weight, grad, mean, var, out=weight, lr=self._get_lr(index) * math.sqrt(c2) / c1,
                       wd=self._get_wd(index), beta1=self.beta1, beta2=self.beta2,
                       epsilon=self.epsilon * math.sqrt(c2), rescale_grad=self.rescale_grad)


def check_device(device):
    """Raise when device == "gpu" but this MXNet build sees no GPU (never fall back to the CPU)."""
    if device == "gpu" and mx.context.num_gpus() == 0:
        raise RuntimeError("device='gpu' but mx.context.num_gpus() is 0 (this MXNet build has no CUDA; "
                           "GPU builds are the separate mxnet-cuXXX packages)")


def gpu_name(device):
    """MXNet has no device-name API: "CUDA device 0 of N" on the GPU, None on the CPU."""
    return f"CUDA device 0 of {mx.context.num_gpus()}" if device == "gpu" else None


def param_count(net):
    """Trainable parameters: grad_req != "null" (BatchNorm running statistics are "null")."""
    return sum(p.data().size for p in net.collect_params().values() if p.grad_req != "null")


def cached_op_built(*nets):
    """Whether hybridize() really built a CachedOp graph for every block (set after its first call)."""
    return all(getattr(net, "_cached_op", None) is not None for net in nets)

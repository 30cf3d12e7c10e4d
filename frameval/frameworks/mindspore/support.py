"""MindSpore helpers shared by notebooks/mindspore/{lenet,dcgan,lstm,gpt}.ipynb.

- `Adam`: `nn.Adam` with the spec's epsilon placement (see its docstring and
  docs/frameworks/mindspore.md, "Adam epsilon"); `ADAM_EPS_PLACEMENT` is how
  the notebooks record that in `rec.settings`.
- `read_adamw`, `reset_adamw`: the GPT's `mindspore.experimental.optim.AdamW`
  (PyTorch's AdamW; its state lives in other attributes than nn.Adam's).
- `gpu_name()`: the GPU's name for the recorder (MindSpore has no call for it).

Imported in the setup cell after `import mindspore`, so the environment
variables the notebook sets before that import (GLOG_v, ONEDNN_MAX_CPU_ISA...)
are in place first.
"""
import os

import numpy as np

import mindspore as ms
from mindspore import Tensor, nn, ops

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


def set_threads(rec):
    """The CPU kernel thread pool, set and confirmed. MindSpore 2.10 has a setter
    (`op_tuning.threads_num`) but no getter for the count: the runtime only says
    whether it was configured, so the counts are recorded as not reported."""
    ms.device_context.cpu.op_tuning.threads_num(rec.threads)
    missing = ["no getter for device_context.cpu.op_tuning.threads_num (the intra-op count cannot be read back)",
               "no inter-op thread count API (get_context('inter_op_parallel_num') = "
               f"{ms.get_context('inter_op_parallel_num')}, the framework default)"]
    how = "mindspore.device_context.cpu.op_tuning.threads_num"
    try:
        from mindspore._c_expression import RuntimeConf
        how += f" (RuntimeConf.is_op_threads_num_configured() = {RuntimeConf.get_instance().is_op_threads_num_configured()})"
    except Exception as e:  # pragma: no cover - internal API
        missing.append(f"RuntimeConf: {type(e).__name__}")
    rec.set_threads_effective(None, None, how, missing)


PLACEMENT = "host numpy; each batch handed to the step as a new Tensor (host copy)"


def _num(v):
    return float(v.asnumpy()) if hasattr(v, "asnumpy") else float(v)


def read_adam(rec, *opts):
    """Adam's lr, betas and eps as the optimizer objects hold them."""
    o = opts[0]
    rec.settings_read(optimizer=type(o).__name__, lr=_num(o.get_lr()), betas=[_num(o.beta1), _num(o.beta2)],
                      adam_eps=_num(o.eps))


def assign(param, value):
    """Write `value` into the Parameter's own storage (ops.assign). `set_data` would
    swap the storage: in PYNATIVE_MODE the already compiled (@jit) Adam update keeps
    writing the old one, so training would silently stop moving the weights."""
    ops.assign(param, Tensor(np.asarray(value)).astype(param.dtype).reshape(param.shape))


def reset_adam(*opts):
    """A fresh Adam state, in place: the compiled step keeps its Parameters."""
    for o in opts:
        for m in list(o.moment1) + list(o.moment2):
            assign(m, np.zeros(m.shape))
        for p in (o.beta1_power, o.beta2_power):
            assign(p, np.ones(p.shape))
        assign(o.global_step, np.zeros(o.global_step.shape))


def read_adamw(rec, opt):
    """experimental.optim.AdamW's lr, betas and eps as its first parameter group holds them
    (the groups differ only in weight decay)."""
    g = opt.param_groups[0]
    rec.settings_read(optimizer="mindspore.experimental.optim.AdamW", lr=_num(g["lr"]),
                      betas=[float(b) for b in g["betas"]], adam_eps=float(g["eps"]))


def reset_adamw(opt):
    """A fresh experimental.optim.AdamW state, in place (moments and step count)."""
    for m in list(opt.exp_avg) + list(opt.exp_avg_sq) + list(opt.max_exp_avg_sq):
        assign(m, np.zeros(m.shape))
    assign(opt.state_step, np.zeros(opt.state_step.shape))


def named_grads(opt, grads):
    """{parameter name: gradient} from the grads tuple the step returned (opt.parameters order)."""
    return {p.name: g for p, g in zip(opt.parameters, grads)}


class Dropout(nn.Cell):
    """Inverted dropout whose rate is a (non-trainable) Parameter. GRAPH_MODE bakes
    `nn.Dropout`'s rate and training flag into the compiled step, so switching it
    off for the check would take a second graph; with the rate a Parameter the
    check sets it to 0 (an exact identity: every uniform draw is >= 0) in the
    very graph training uses, and puts it back in place (`assign`)."""

    def __init__(self, p):
        super().__init__()
        self.p = ms.Parameter(Tensor(p, ms.float32), name="p", requires_grad=False)

    def construct(self, x):
        if not self.training:
            return x
        keep = (ops.rand_like(x) >= self.p).astype(x.dtype)
        return x * keep / (1.0 - self.p)

    def set_rate(self, p):
        assign(self.p, p)

    @property
    def rate(self):
        return _num(self.p)


class WindowCallback(ms.train.Callback):
    """Marks the recorder's timing windows (ep.step_windows) from Model.train's own loop
    (on_train_step_begin / on_train_step_end of step j), and keeps each step's loss
    on the device (`losses`: one host read per epoch, as in the basic loop)."""

    def __init__(self, windows):
        super().__init__()
        self.windows, self.step, self.losses = windows, 0, []

    def on_train_step_begin(self, run_context):
        self.windows.begin(self.step)

    def on_train_step_end(self, run_context):
        self.windows.end(self.step)
        self.losses.append(run_context.original_args().net_outputs)
        self.step += 1


class Batches:
    """The epoch's batches for mindspore.dataset.GeneratorDataset, one item per batch in
    the given order, cut from the host arrays as the basic loop cuts them: Model.train
    takes nothing but a mindspore.dataset pipeline."""

    def __init__(self, items, x, y):
        self.items, self.x, self.y = items, x, y

    def __len__(self):
        return len(self.items)

    def __getitem__(self, j):
        idx = self.items[j]
        return self.x[idx], self.y[idx]


def batch_dataset(items, x, y):
    """A GeneratorDataset over `Batches`, in order, one worker, no Python multiprocessing."""
    return ms.dataset.GeneratorDataset(Batches(items, x, y), column_names=["x", "y"], shuffle=False,
                                       num_parallel_workers=1, python_multiprocessing=False)

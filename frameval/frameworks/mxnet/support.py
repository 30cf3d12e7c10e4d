"""MXNet (Gluon) helpers shared by notebooks/mxnet/{lenet,dcgan,lstm,gpt}.ipynb.

- `Adam`: Gluon's fused Adam corrected to the spec's (PyTorch's) epsilon placement.
- `AdamW`: the spec's AdamW (decoupled decay), which mx.optimizer lacks, over the
  fused `contrib.adamw_update` kernel.
- `check_device`, `gpu_name`: the GPU guard and the GPU name for `rec.after_import`.
- `param_count`: trainable parameters, as recorded by `rec.set_param_counts`.
- `threads_effective`: the OpenMP thread count read back (MXNet 1.9.1 has no getter).
- `read_adam`, `reset_adam`: the optimizer's settings as the Trainer holds them; a
  fresh Adam state put back in place after the check.
- `grads`: the gradients the last backward left on the parameters.
- `record_scope`: `rec.set_graph_scope` from the CachedOps the training step built.

This module imports mxnet: import it only after the setup cell has set the thread
environment variables (MXNet reads them once, at import).
"""
import ctypes
import math
import os

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


class AdamW(Adam):
    """The spec's (PyTorch's) AdamW. MXNet 1.9 has no AdamW optimizer: mx.optimizer.Adam's `wd` is an L2 term
    added to the gradient (then normalised by Adam). Its fused contrib kernel `adamw_update` decouples the
    decay but has no bias correction: w -= eta * (lr * m / (sqrt(v) + eps) + wd * w). Given eta = 1,
    lr * sqrt(1 - b2^t) / (1 - b1^t), eps * sqrt(1 - b2^t) (as `Adam`) and wd = lr * weight_decay * wd_mult,
    it is w * (1 - lr * weight_decay) - lr * m_hat / (sqrt(v_hat) + eps) exactly. Which weights decay is
    each Parameter's `wd_mult` (1 or 0), as the Trainer hands them over."""

    def update(self, index, weight, grad, state):
        self._update_count(index)
        t = self._index_update_count[index]
        c1, c2 = 1 - self.beta1 ** t, 1 - self.beta2 ** t
        lr = self._get_lr(index)
        if getattr(self, "_rescale", None) is None or self._rescale[1] != self.rescale_grad:
            # the kernel takes rescale_grad as an array (it skips the update where it is not finite): one, kept
            self._rescale = (nd.full((1,), self.rescale_grad, ctx=weight.context), self.rescale_grad)
        mean, var = state
        nd.contrib.adamw_update(weight, grad, mean, var, self._rescale[0], out=weight, eta=1.0,
                                lr=lr * math.sqrt(c2) / c1, wd=lr * self._get_wd(index), beta1=self.beta1,
                                beta2=self.beta2, epsilon=self.epsilon * math.sqrt(c2))


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


def threads_effective(rec):
    """MXNet 1.9.1 reads OMP_NUM_THREADS / MXNET_CPU_WORKER_NTHREADS at import and has
    no getter (the C API exports only MXSetNumOMPThreads). The OpenMP count is read
    back from the libgomp that MXNet loaded; the engine's worker count cannot be."""
    intra, how = None, "no MXNet thread getter"
    try:
        gomp = ctypes.CDLL("libgomp.so.1", mode=getattr(os, "RTLD_NOLOAD", 0))
        intra, how = gomp.omp_get_max_threads(), "omp_get_max_threads() of the libgomp MXNet loaded (ctypes)"
    except OSError:
        pass
    missing = ["MXNet 1.9.1 has no thread-count getter (only MXSetNumOMPThreads in the C API)",
               "engine workers (MXNET_CPU_WORKER_NTHREADS=" + os.environ.get("MXNET_CPU_WORKER_NTHREADS", "?")
               + ") cannot be read back"]
    rec.set_threads_effective(intra, None, how, missing)


def read_adam(rec, *trainers):
    """Adam's lr, betas and eps as the Trainer's optimizer object holds them."""
    o = trainers[0].optimizer
    rec.settings_read(optimizer=type(o).__name__, lr=trainers[0].learning_rate, betas=[o.beta1, o.beta2],
                      adam_eps=o.epsilon)


def reset_adam(*trainers):
    """A fresh Adam state in place: the moment arrays zeroed, the step counts cleared."""
    for trainer in trainers:
        for updater in trainer._updaters:
            for state in updater.states.values():
                for arr in (state if isinstance(state, (list, tuple)) else [state]):
                    if arr is not None:
                        arr[:] = 0
        o = trainer.optimizer
        for counts in o._all_index_update_counts.values():
            counts.clear()
        o.num_update = o.begin_num_update


def grads(params, prefix=""):
    """{prefix + name: gradient} of the Gluon Parameters in `params` ({name: Parameter}),
    as the last backward wrote them (grad_req="write")."""
    return {prefix + k: p.grad().asnumpy() for k, p in params.items()}


def record_scope(rec, mode, blocks, how, why):
    """rec.set_graph_scope: forward and backward in graphs when every hybridized block
    of the training step built its CachedOp; the update stays outside (see `why`)."""
    if mode != "graph":
        rec.set_graph_scope(False, False, False)
        return
    built = sum(getattr(b, "_cached_op", None) is not None for b in blocks)
    whole = built == len(blocks)
    rec.set_graph_scope(whole, whole, False, graphs=built, graph_breaks=None, how=how,
                        why=why if whole else f"only {built} of {len(blocks)} CachedOps built; " + why)


def placement(device):
    """Where the data set lives once the data cell moved it (nd.array copies)."""
    return "host copy (nd.array copies numpy's buffer)" if device == "cpu" else "device copy (mx.gpu(0))"


UPDATE_WHY = ("the Adam update runs eagerly: Gluon's Trainer.step calls the fused adam_update operator once per "
              "parameter from Python, and MXNet 1.9 has no supported way to put an optimizer update into a CachedOp "
              "(hybridize() compiles HybridBlocks only)")


def window_handler(windows):
    """A Gluon Estimator event handler that marks the recorder's timing windows
    (ep.step_windows) from Estimator.fit's own loop: step j's batch_begin, and its
    batch_end after every other handler (the Trainer's update, the metrics), so the
    step's whole work is inside."""
    from mxnet.gluon.contrib.estimator.event_handler import BatchBegin, BatchEnd

    class WindowHandler(BatchBegin, BatchEnd):
        priority = 1e9  # batch_end after the update (-2000) and the metrics (-1000); logging is inf

        def __init__(self):
            self.step = 0

        def batch_begin(self, estimator, *args, **kwargs):
            windows.begin(self.step)

        def batch_end(self, estimator, *args, **kwargs):
            windows.end(self.step)
            self.step += 1
            return False  # never asks fit to stop

    return WindowHandler()


def batch_loader(items, x, y):
    """A Gluon DataLoader (Estimator.fit takes nothing else) over the epoch's batches in
    the given order, each gathered from the arrays with one `take`, as the basic loop
    does: the dataset yields indices and the batchify function gathers them, so the
    DataLoader's per-sample stacking is not used."""
    from mxnet import gluon, nd

    def gather(idx):
        i = nd.array(idx, ctx=x.context, dtype="int32")
        return x.take(i), y.take(i)

    return gluon.data.DataLoader(gluon.data.SimpleDataset(list(range(x.shape[0]))),
                                 batch_sampler=[list(map(int, b)) for b in items], batchify_fn=gather)

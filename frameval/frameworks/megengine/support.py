"""MegEngine helpers shared by notebooks/megengine/{lenet,dcgan,lstm,gpt}.ipynb:
the contract every framework folder fulfils (frameval/frameworks/contract.py)
and MegEngine's own pieces.

    rec = nb.Recorder(...)
    import megengine as mge, ...                   # what the notebook's own code uses
    from frameval.frameworks.megengine import support as fw
    dev = fw.setup(rec, mode, device, seed)        # device by name, threads read back, seed, hooks

MegEngine reads nothing from the environment that the setup must set before its
import (the runner's kernel sets MGE_DEFAULT_DEVICE itself), so this module
imports it at its top.

- `setup`: the device (CPU threads are part of its name), the thread count read
  back (`record_threads`), the seed, the recorder's hooks (MegEngine runs
  asynchronously, on the CPU too: the clock waits for its queue).
- `placement`: where the data set lives once the data cell moved it.
- `compile_step`, `compile_eval`, `record_scope`: `megengine.jit.trace(symbolic=True)`
  of the step (graph) or the plain function (eager), and the graph scope from the
  traced step's recorded ops.
- `read_adam`, `reset_adam`, `load_weights`: read the optimizer's (Adam's or AdamW's) settings back;
  put the shared initial weights and a fresh optimizer state back in place
  after the check (`Tensor._reset`, as `load_state_dict` does), which the
  traced step sees: it reads its parameters and optimizer states by handle.
- `Dropout`: dropout whose rate is a tensor, so the check turns it off in the
  very traced step training uses.
- `BatchNorm2d`: BatchNorm in MegEngine ops (M.BatchNorm2d's backward is off
  beyond the check's tolerance at batch 64).
- `causal_mask`: the causal mask F.nn.multi_head_attention takes as attn_mask
  (its `is_causal=True` fails on the CPU in 1.13).
- `export`, `load`: the forward traced with capture_as_const and dumped (`trace.dump`),
  run in a fresh process by MegEngine Lite (`megenginelite`; #70, frameval/nb/serving.py).

See docs/frameworks/megengine.md.
"""
import os
import re

import numpy as np
import megengine as mge
import megengine.functional as F
import megengine.module as M
from megengine.jit import trace


def setup(rec, mode, device, seed):
    """The device, threads, seed and recorder hooks; -> the device name the notebook
    records ('cpu0', 'multithreadN:0' or 'gpu0', MegEngine's default device from here on)."""
    if mode not in ("graph", "eager"):
        raise ValueError(f"mode must be 'graph' or 'eager', not {mode!r}")
    gpu = device == "gpu"
    if gpu and not mge.is_cuda_available():
        raise RuntimeError("device='gpu' but megengine.is_cuda_available() is False in this environment")
    # Left alone MegEngine picks 'xpux' (any device). On the CPU the thread count is part of the device name:
    # 'cpu0' is one thread, 'multithreadN:0' runs each operator on N threads.
    dev = "gpu0" if gpu else (f"multithread{rec.threads}:0" if rec.threads > 1 else "cpu0")
    mge.set_default_device(dev)
    record_threads(rec)  # read back from the device name
    mge.random.seed(seed)  # MegEngine's global RNG (mge.random: dropout masks)
    rec.after_import(mge.__version__,
                     sync=mge._full_sync,  # asynchronous on the CPU as well
                     reset_device_peak=(lambda: (mge._full_sync(), mge.device.reset_max_memory_stats(dev))) if gpu else None,
                     device_peak_mb=(lambda: (mge._full_sync(), mge.device.get_max_allocated_memory(dev) / 1e6)[1]) if gpu else None,
                     gpu_name=mge.device.get_cuda_device_property(0).name if gpu else None)
    print(f"megengine {mge.__version__} on {mge.get_default_device()}, {rec.threads} threads, mode={mode}")
    return dev


def record_threads(rec):
    """The intra-op thread count of the default device, read back from its name."""
    dev = mge.get_default_device()
    m = re.match(r"multithread(\d+):", dev)
    intra = int(m.group(1)) if m else (1 if dev.startswith("cpu") else None)
    missing = ["no inter-op thread setting (MegEngine runs a comp node's operators in order)"]
    if intra is None:
        missing.append(f"no CPU thread count for device {dev!r}")
    rec.set_threads_effective(intra, None, "mge.get_default_device() name ('cpu0' = 1 thread, 'multithreadN:0' = N)",
                              missing)


def autocast(rec, precision):
    """-p precision as MegEngine's own AMP (#69): `megengine.amp.autocast(enabled=...,
    low_prec_dtype="bfloat16")` around the forward and the loss. Off (a float32 Amp) for
    "default" and "highest".

    For "bf16" it tries the real thing first, on the run's default device: a Conv2d and a
    matmul under the autocast, read back. MegEngine 1.13 takes low_prec_dtype="bfloat16"
    (it reads back as set, and casts the operands to bfloat16), but its CPU kernels have
    none: megdnn fails with "not support data type of BFloat16 * BFloat16 -> BFloat16"
    (convolution, fallback ConvBias) and "matmul not support data type of BFloat16 *
    BFloat16 -> BFloat16" (float16 runs, so the mechanism itself works). The error (the
    AsyncError's cause) is raised as NotOffered: the run is recorded as not offered
    (defects/megengine/bf16-cpu-kernels.py reproduces it). Where the probe runs (a later
    version), it still raises NotOffered: the notebooks do not apply the autocast yet,
    and a bf16 run must never train float32."""
    from frameval.nb.amp import Amp
    from frameval.frameworks.contract import NotOffered
    if Amp(precision).precision is None:
        return rec.set_amp(Amp(precision))
    if precision != "bf16":
        raise NotOffered(f"MegEngine's AMP at {precision} is not ported in frameval (bf16 only)")
    what = (f"megengine {mge.__version__} on {mge.get_default_device()}: "
            "megengine.amp.autocast(enabled=True, low_prec_dtype='bfloat16')")
    try:
        out = _amp_probe()
    except Exception as e:  # noqa: BLE001 - MegEngine's own error is the evidence
        cause = e.__cause__ or e  # MegEngine runs asynchronously: an AsyncError carries the kernel's error
        text = str(cause).split("backtrace:")[0].strip()
        raise NotOffered(f"{what} around a Conv2d and a matmul raised {type(cause).__name__}: {text[:800]}") from e
    raise NotOffered(f"{what} ran ({out}), but frameval's MegEngine notebooks do not apply the autocast yet: "
                     "not offered rather than float32 under the bf16 name")


def _amp_probe():
    """A Conv2d and a matmul under the bfloat16 autocast, read back; -> their dtypes."""
    x = mge.tensor(np.ones((2, 1, 6, 6), np.float32))
    conv = M.Conv2d(1, 2, 3)
    level, mge.config.async_level = mge.config.async_level, 0  # the kernel's error where it happens
    try:
        with mge.amp.autocast(enabled=True, low_prec_dtype="bfloat16"):
            y = conv(x)
            z = F.matmul(F.flatten(y, 1), F.flatten(y, 1).transpose(1, 0))
        return f"conv {y.dtype}, matmul {z.dtype}, {y.numpy().dtype}, {z.numpy().dtype}"
    finally:
        mge.config.async_level = level


def placement(dev):
    """Where the data set lives once the data cell moved it: `mge.tensor` copies the numpy
    arrays onto the default device (`dev`); the loop gathers each batch by an index tensor."""
    if str(dev).startswith("gpu"):
        return f"device copy (mge.tensor of the numpy arrays onto {dev}); batches gathered by index tensors"
    return "host copy (mge.tensor of the numpy arrays); batches gathered by index tensors"


def compile_step(step, mode):
    """The training step as the mode runs it: `megengine.jit.trace(symbolic=True)` (the first
    call records a static graph, later calls replay it) in graph mode, the function itself in eager."""
    return trace(step, symbolic=True) if mode == "graph" else step


def compile_eval(fn, mode):
    """An evaluation function (forward only) as the mode runs it: traced like the step in graph
    mode (its own trace: one input shape per trace), the function itself in eager."""
    return trace(fn, symbolic=True) if mode == "graph" else fn


def record_scope(rec, mode, step, how="the whole train step", why=""):
    """rec.set_graph_scope from the traced step (compile_step's): forward, backward and update
    are all in its one graph when the trace recorded ops. `how` names what was traced; the
    recorded text is "megengine.jit.trace(symbolic=True) of <how>: <n> ops recorded"."""
    if mode != "graph":
        rec.set_graph_scope(False, False, False)
        return
    n_ops = len(step.ops or [])
    rec.set_graph_scope(n_ops > 0, n_ops > 0, n_ops > 0, graphs=1 if n_ops else 0, graph_breaks=0,
                        how=f"megengine.jit.trace(symbolic=True) of {how}: {n_ops} ops recorded", why=why)


def read_adam(rec, *opts):
    """Adam's lr, betas and eps as the optimizer objects hold them."""
    g = opts[0].param_groups[0]
    rec.settings_read(optimizer=type(opts[0]).__name__, lr=g["lr"], betas=list(g["betas"]), adam_eps=g["eps"])


def reset_adam(*opts):
    """A fresh Adam or AdamW state (step, exp_avg, exp_avg_sq all zero), in place."""
    for opt in opts:
        for state in opt._state.values():
            for t in state.values():
                t._reset(F.zeros_like(t))


def load_weights(module, weights):
    """Canonical numpy weights into the module's own tensors (load_state_dict: in place,
    reshaped to MegEngine's layouts); tensors not in `weights` (a dropout rate) are left alone."""
    module.load_state_dict(lambda k, v: weights[k].reshape(v.shape) if k in weights else None, strict=False)


class Dropout(M.Module):
    """Inverted dropout whose rate is a tensor (a buffer): the traced step reads it by
    handle, so the check sets it to 0 (an exact identity: every uniform draw is >= 0)
    in the very traced step training uses. `M.Dropout`'s rate is a Python float the
    trace records as a constant."""

    def __init__(self, p):
        super().__init__()
        self.p = mge.tensor(np.float32(p))

    def forward(self, x):
        if not self.training:
            return x
        keep = (mge.random.uniform(size=x.shape) >= self.p).astype("float32")
        return x * keep / (1.0 - self.p)

    def set_rate(self, p):
        self.p._reset(mge.tensor(np.float32(p)))

    @property
    def rate(self):
        return float(self.p.numpy())


class BatchNorm2d(M.Module):
    """BatchNorm over (N, H, W) per channel, written in MegEngine ops, with
    `M.BatchNorm2d`'s names, shapes (1, C, 1, 1) and momentum convention
    (running = momentum * running + (1 - momentum) * batch; the running variance
    takes the unbiased batch variance). Not `M.BatchNorm2d`: in 1.13 its fused
    backward is off at batch 64 (the check's generator gradients 1.6e-3 against
    a 1e-3 tolerance, growing towards the first layers; fine at batch 16); the
    gradient of these ops is MegEngine's autodiff of mean, subtract, multiply,
    sqrt and divide."""

    def __init__(self, num_features, momentum=0.9, eps=1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        shape = (1, num_features, 1, 1)
        self.weight = mge.Parameter(np.ones(shape, np.float32))
        self.bias = mge.Parameter(np.zeros(shape, np.float32))
        self.running_mean = mge.tensor(np.zeros(shape, np.float32))
        self.running_var = mge.tensor(np.ones(shape, np.float32))

    def forward(self, x):
        if not self.training:
            return (x - self.running_mean) / F.sqrt(self.running_var + self.eps) * self.weight + self.bias
        mean = x.mean(axis=(0, 2, 3), keepdims=True)
        d = x - mean
        var = (d * d).mean(axis=(0, 2, 3), keepdims=True)
        n = x.shape[0] * x.shape[2] * x.shape[3]
        m = self.momentum
        self.running_mean[...] = m * self.running_mean + (1 - m) * mean.detach()
        self.running_var[...] = m * self.running_var + (1 - m) * var.detach() * (n / (n - 1))
        return d / F.sqrt(var + self.eps) * self.weight + self.bias


def causal_mask(t):
    """The (t, t) additive causal mask for F.nn.multi_head_attention's attn_mask:
    0 on and below the diagonal, -inf above (a key after its query gets weight
    0). Passed explicitly: in 1.13 `is_causal=True` fails on the CPU (a dtype
    assertion in an elementwise op; defects/megengine/mha-is-causal-cpu.py).
    Made from numpy at each call: a constant inside a trace, a small copy when eager."""
    return mge.tensor(np.triu(np.full((t, t), -np.inf, np.float32), 1))


def _as_input(x):
    """A numpy batch as the dumped graph takes it: int32 token ids (MegEngine's index type), else float32."""
    x = np.ascontiguousarray(x)
    return x.astype(np.int32) if np.issubdtype(x.dtype, np.integer) else x.astype(np.float32)


LITE_OPTIONS = "lite_options.json"  # beside model.mge: the LiteOptions the graph needs (lite-mha-static-memory)


def export(rec, model, example, path):
    """The forward traced (`megengine.jit.trace(symbolic=True, capture_as_const=True)`: the
    trained weights captured as constants) and dumped with `trace.dump` (optimize_for_inference,
    the default): MegEngine's deployment form, the serialized computing graph that MegEngine
    Lite (megenginelite, C++ and Python) and load_and_run execute without the Python code.
    The batch dimension stays free: the graph infers its shapes again from each input.

    The trace runs on a copy of `model` on the logical device 'xpux', the default device of
    MegEngine's dump: the dump places its input there, and a graph whose constants sit on
    another comp node ('multithreadN:0', 'cpu0', the notebook's device) fails its check
    ("different input comp_nodes found"). The notebook's model is left as it is.

    A graph with fused attention ops (MultiHeadAttnForward: the GPT) gets lite_options.json
    beside it, {"force_dynamic_alloc": true}, which `load` applies: with Lite's default
    static memory plan a graph with two of them is wrong from its second forward on (the
    `lite-mha-static-memory` workaround, declared here)."""
    import copy
    import json
    from megengine.core.tensor import megbrain_graph as G
    from megengine.utils import comp_graph_tools as cgtools
    file = os.path.join(str(path), "model.mge")
    device = mge.get_default_device()
    mge.set_default_device("xpux")  # tensors made inside the forward (a causal mask) land there too
    try:
        served = copy.deepcopy(model)
        for _, t in served.named_tensors():
            t._reset(t.to("xpux"))
        fn = trace(lambda x: served(x), symbolic=True, capture_as_const=True)
        fn(mge.tensor(_as_input(example), device="xpux"))
        fn.dump(file, arg_names=["x"], output_names=["y"])
    finally:
        mge.set_default_device(device)
    ops = {op.type for op in cgtools.get_oprs_seq(G.load_graph(file).output_vars_list)}
    fmt = ("traced graph dump .mge (megengine.jit.trace(symbolic=True, capture_as_const=True) + trace.dump, "
           "optimize_for_inference: the serialized graph MegEngine deploys with MegEngine Lite and load_and_run; "
           "run here by megenginelite), dynamic batch")
    if "MultiHeadAttnForward" in ops:
        with open(os.path.join(str(path), LITE_OPTIONS), "w", encoding="utf-8") as f:
            json.dump({"force_dynamic_alloc": True}, f)
        rec.workaround("lite-mha-static-memory")
        fmt += "; Lite with force_dynamic_alloc (its static memory plan breaks fused attention)"
    return fmt


def load(path, device):
    """The dumped graph run by MegEngine Lite (megenginelite.LiteNetwork: MegEngine's inference
    runtime, the deployment path; its import is part of this load): on the CPU with the
    notebook's thread count (the kernel's OMP_NUM_THREADS), or CUDA; the LiteOptions of
    lite_options.json where `export` wrote one. Each call copies the batch in (the input's
    shape set from it), runs forward and waits, copies the output out."""
    import json
    import megenginelite as lite
    gpu = device == "gpu"
    config = lite.LiteConfig(device_type=lite.LiteDeviceType.LITE_CUDA if gpu else lite.LiteDeviceType.LITE_CPU)
    options = os.path.join(str(path), LITE_OPTIONS)
    if os.path.exists(options):
        with open(options, encoding="utf-8") as f:
            for k, v in json.load(f).items():
                setattr(config.options, k, v)  # force_dynamic_alloc = True: lite-mha-static-memory
    net = lite.LiteNetwork(config=config)
    threads = int(os.environ.get("OMP_NUM_THREADS") or 1)
    if not gpu and threads > 1:
        net.threads_number = threads  # before load, as Lite requires
    net.load(os.path.join(str(path), "model.mge"))
    x_name, y_name = net.get_input_name(0), net.get_output_name(0)

    def predict(x):
        net.get_io_tensor(x_name).set_data_by_copy(_as_input(x))
        net.forward()
        net.wait()
        return net.get_io_tensor(y_name).to_numpy()
    return predict


# ------------------------------------------------------------------ checkpoint and resume (#70)
def checkpoint(rec, path, *state):
    """megengine.save of each object's state_dict (the module's tensors, the optimizer's:
    Adam's step and moments), MegEngine's own checkpoint (a pickle). MegEngine keeps its
    random state in the C++ runtime without a getter: LeNet and the LSTM draw no random
    numbers while they train."""
    mge.save({"state": [s.state_dict() for s in state]}, os.path.join(path, "checkpoint.pkl"))
    return "megengine.save of the module's and the optimizer's state_dict (Adam's step and moments); " \
           "no random state (MegEngine has no getter for it)"


def restore(rec, path, *state):
    """load_state_dict of each: the module's tensors and the optimizer's state written in place."""
    saved = mge.load(os.path.join(path, "checkpoint.pkl"))["state"]
    for s, sd in zip(state, saved):
        s.load_state_dict(sd)
    return state

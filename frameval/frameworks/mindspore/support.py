"""MindSpore helpers shared by notebooks/mindspore/{lenet,dcgan,lstm,gpt}.ipynb: the
contract every framework folder fulfils (frameval/frameworks/contract.py) and
MindSpore's own parts.

MindSpore reads GLOG_v, ONEDNN_MAX_CPU_ISA and where its graph dumps and
compiler cache go when it is imported, so importing this module does NOT import
MindSpore: the setup cell calls `setup` first.

    rec = nb.Recorder(...)
    from frameval.frameworks.mindspore import support as fw
    dev = fw.setup(rec, mode, device, seed)   # environment variables, then `import mindspore`
    import mindspore as ms

- `setup`: the environment variables (before the import), GRAPH_MODE or
  PYNATIVE_MODE, the device, the CPU thread pool (`set_threads`), the seed, the
  recorder's hooks; the oneDNN workaround declared (see `setup`).
- `placement`, `compile_step`, `compile_eval`, `record_scope`: where the data
  lives, and graph mode as MindSpore runs it (the context's mode compiles every
  cell; the graph scope from the step cell's own compile cache).
- `Adam`: `nn.Adam` with the spec's epsilon placement (see its docstring and
  docs/frameworks/mindspore.md, "Adam epsilon"); `ADAM_EPS_PLACEMENT` is how
  the notebooks record that in `rec.settings`.
- `read_adam`, `reset_adam`: `nn.Adam` (`fw.Adam`) and the GPT's
  `mindspore.experimental.optim.AdamW` (PyTorch's AdamW; its state lives in
  other attributes than nn.Adam's).
- `gpu_name()`: the GPU's name for the recorder (MindSpore has no call for it).
- `export`, `load`: the trained cell saved as MindIR (`mindspore.export`, the batch
  dimension None) and loaded in a fresh process with `mindspore.load` + `nn.GraphCell`
  (#70, frameval/nb/serving.py).
- `Adam`, `Dropout` and `WindowCallback` are MindSpore classes: defined at their
  first use, once MindSpore is imported (module `__getattr__`).
"""
import os

import numpy as np

ms = Tensor = nn = ops = None  # imported by setup() (or at first use), after the environment variables

ADAM_EPS_PLACEMENT = "sqrt(v_hat) + eps (spec); nn.Adam kernel fed eps*sqrt(1-b2^t)"
_MODES = {"graph": "GRAPH_MODE", "eager": "PYNATIVE_MODE"}


def _import():
    """MindSpore and the names this module uses of it: imported once, at first use."""
    global ms, Tensor, nn, ops
    if ms is None:
        import mindspore
        from mindspore import Tensor as _Tensor, nn as _nn, ops as _ops
        ms, Tensor, nn, ops = mindspore, _Tensor, _nn, _ops
    return ms


def setup(rec, mode, device, seed):
    """Everything before the data; -> the device target ("CPU" or "GPU": MindSpore places
    every Tensor there by its context, the notebooks hand no device around).

    Before the import: GLOG_v (MindSpore's C++ log: errors only), the graph dumps and the
    compiler cache in the run's work/ folder (the recorder chdir'ed there) and, on the CPU,
    ONEDNN_MAX_CPU_ISA=AVX2 (oneDNN's AVX-512 path falls back to a reference convolution:
    the `onednn-reference-conv` workaround); a value of the user's own wins. Then the mode
    (GRAPH_MODE or PYNATIVE_MODE), the device (a GPU that is not there raises), the CPU
    thread pool, the seed (MindSpore's own random ops: dropout masks) and the recorder's hooks."""
    if mode not in _MODES:
        raise ValueError(f"mode must be 'graph' or 'eager', not {mode!r}")
    os.environ.setdefault("GLOG_v", "4")  # MindSpore's C++ log: errors only
    os.environ.setdefault("MS_DEV_SAVE_GRAPHS_PATH", os.getcwd())  # the run's work/ folder (the recorder chdir'ed there)
    os.environ.setdefault("MS_COMPILER_CACHE_PATH", os.getcwd())
    if device == "cpu":  # oneDNN's AVX-512 path falls back to a reference convolution (see below)
        os.environ.setdefault("ONEDNN_MAX_CPU_ISA", "AVX2")
    _import()
    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    if device == "gpu" and not ms.device_context.gpu.is_available():
        raise RuntimeError("device='gpu' but mindspore.device_context.gpu.is_available() is False in this environment")
    ms.set_device("GPU" if device == "gpu" else "CPU")
    set_threads(rec)  # CPU kernel thread pool (op_tuning.threads_num); MindSpore has no getter for it
    ms.set_seed(seed)
    gpu = device == "gpu"

    rec.after_import(ms.__version__,
                     sync=ms.runtime.synchronize if gpu else None,
                     reset_device_peak=ms.runtime.reset_peak_memory_stats if gpu else None,
                     device_peak_mb=(lambda: ms.runtime.max_memory_allocated() / 1e6) if gpu else None,
                     gpu_name=gpu_name() if gpu else None)
    if not gpu:
        rec.settings(onednn_max_cpu_isa=os.environ.get("ONEDNN_MAX_CPU_ISA"))
    print(f"mindspore {ms.__version__} on {ms.get_context('device_target')}, {rec.threads} threads, "
          f"mode={mode} ({_MODES[mode]}), "
          f"ONEDNN_MAX_CPU_ISA={os.environ.get('ONEDNN_MAX_CPU_ISA')}")
    if os.environ.get("ONEDNN_MAX_CPU_ISA") == "AVX2":
        rec.workaround("onednn-reference-conv")
    return ms.get_context("device_target")


def autocast(rec, precision, level="O2"):
    """-p precision as MindSpore's own AMP (#69): `mindspore.amp.auto_mixed_precision(net,
    level, dtype=mstype.bfloat16)` (this version has no `mindspore.amp.autocast`). Off (a
    float32 Amp) for "default" and "highest".

    For "bf16" it tries the real thing first, in the run's own mode and on its device: a
    tiny Conv2d + ReLU + Dense cell through auto_mixed_precision at `level`. O2, the
    default: every cell in bfloat16 but MindSpore's black list (mindspore.amp.get_black_list():
    BatchNorm1d/2d/3d, LayerNorm), the output cast back to float32; O1 goes through
    MindSpore's source rewrite, which cannot parse a class defined inside a function.
    MindSpore 2.10's CPU kernels take no bfloat16 (Conv2D: Float32 only; MatMul and ReLU
    list Float16 to Float64, not BFloat16: its bfloat16 operators are Ascend's), so kernel
    selection fails at every level (O1, O2, O3, "auto"), in GRAPH_MODE and PYNATIVE_MODE
    alike, and whatever ONEDNN_MAX_CPU_ISA says (AVX2 or AVX512_CORE_AMX: the kernel
    registry refuses the type before oneDNN is asked). That error is raised as NotOffered:
    the run is recorded as not offered (defects/mindspore/bf16-cpu-kernels.py reproduces
    it). Where the probe runs (a later version), it still raises NotOffered: the notebooks
    do not apply auto_mixed_precision yet, and a bf16 run must never train float32."""
    from frameval.nb.amp import Amp
    from frameval.frameworks.contract import NotOffered
    if Amp(precision).precision is None:
        return rec.set_amp(Amp(precision))
    if precision != "bf16":
        raise NotOffered(f"MindSpore's AMP at {precision} is not ported in frameval (bf16 only)")
    _import()
    what = (f"mindspore {ms.__version__} on {ms.get_context('device_target')} "
            f"({'GRAPH_MODE' if ms.get_context('mode') == ms.GRAPH_MODE else 'PYNATIVE_MODE'}, "
            f"ONEDNN_MAX_CPU_ISA={os.environ.get('ONEDNN_MAX_CPU_ISA')}): "
            f"mindspore.amp.auto_mixed_precision(Conv2d+ReLU+Dense, '{level}', dtype=mstype.bfloat16)")
    try:
        out = _amp_probe(level)
    except Exception as e:  # noqa: BLE001 - MindSpore's own error is the evidence
        raise NotOffered(f"{what} raised {type(e).__name__}: {_kernel_error(e)}") from e
    raise NotOffered(f"{what} ran (output {out}), but frameval's MindSpore notebooks do not apply "
                     "auto_mixed_precision yet: not offered rather than float32 under the bf16 name")


def _amp_probe(level):
    """One forward of a tiny cell under auto_mixed_precision(level, bfloat16); -> its output's dtype."""
    from mindspore import amp as ms_amp, dtype as mstype

    class Probe(nn.Cell):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 2, 3, pad_mode="valid", has_bias=True)
            self.dense = nn.Dense(2 * 4 * 4, 3)

        def construct(self, x):
            return self.dense(ops.relu(self.conv(x)).reshape(x.shape[0], -1))

    net = ms_amp.auto_mixed_precision(Probe(), level, dtype=mstype.bfloat16)
    out = net(Tensor(np.ones((2, 1, 6, 6), np.float32)))
    out.asnumpy()
    return str(out.dtype)


def _kernel_error(e):
    """MindSpore's error text without its banners, node dump and C++ stack."""
    keep = []
    for line in str(e).splitlines():
        line = line.strip()
        if line.startswith(("- C++ Call Stack", "- The Function Call Stack", "node:", "In file")):
            break
        if line and not set(line) <= set("-") and line != "- Kernel select failed:":
            keep.append(line)
    return " ".join(keep)[:1200] or str(e)[:1200]


def placement(dev):
    """Where the data lives: on the host, each batch a new Tensor (on the CPU and on a GPU alike)."""
    return "host numpy; each batch handed to the step as a new Tensor (host copy)"


def _check_mode(mode):
    want = ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE
    if _import().get_context("mode") != want:
        raise RuntimeError(f"mode={mode!r} but MindSpore's context is in mode {ms.get_context('mode')}: "
                           "call fw.setup(rec, mode, ...) first")


def compile_step(step, mode):
    """The step cell, as it is: MindSpore compiles by the context's mode (setup's
    set_context), not per function. In GRAPH_MODE an nn.Cell's construct is compiled
    whole into one graph on its first call; in PYNATIVE_MODE it runs op by op. Raises
    where the context is not in `mode`."""
    _check_mode(mode)
    return step


def compile_eval(fn, mode):
    """The evaluation forward, as it is: an nn.Cell is compiled by the context's mode
    (in GRAPH_MODE once per input shape), a plain function runs op by op and calls its
    cells. Raises where the context is not in `mode`."""
    _check_mode(mode)
    return fn


def record_scope(rec, mode, step, how="", why=""):
    """The graph scope of the step cell: GRAPH_MODE compiles its whole construct (forward,
    gradients, update) into one graph, with 0 breaks (GRAPH_MODE has none: unsupported
    code fails to compile); graphs = the phases MindSpore compiled for this cell (its
    compile cache: the training step only, not the evaluation cells). In eager mode
    (PYNATIVE_MODE) the recorder records "eager"."""
    graphs = len(step.compile_cache)  # phases MindSpore compiled for the training step cell
    rec.set_graph_scope(True, True, True, graphs=graphs, graph_breaks=0, how=how, why=why)


def _classes():
    """The MindSpore classes of this module, defined once MindSpore is imported."""
    _import()
    global Adam, Dropout, WindowCallback
    Adam, Dropout, WindowCallback = _adam_class(), _dropout_class(), _window_callback_class()


def _adam_class():
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
    return Adam


def _dropout_class():
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
    return Dropout


def _window_callback_class():
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
    return WindowCallback


_CLASSES = ("Adam", "Dropout", "WindowCallback")


def __getattr__(name):
    """`Adam`, `Dropout`, `WindowCallback`: defined at their first use (MindSpore imported then)."""
    if name in _CLASSES:
        _classes()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    _import()
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


def _num(v):
    return float(v.asnumpy()) if hasattr(v, "asnumpy") else float(v)


def read_adam(rec, *opts):
    """Adam's lr, betas and eps as the (first) optimizer object holds them: `nn.Adam`'s
    (`fw.Adam`) attributes, or the first parameter group of a
    `mindspore.experimental.optim` optimizer (the GPT's AdamW: its groups differ only
    in weight decay)."""
    o = opts[0]
    if hasattr(o, "param_groups"):  # experimental.optim (PyTorch's form)
        g = o.param_groups[0]
        rec.settings_read(optimizer=f"mindspore.experimental.optim.{type(o).__name__}", lr=_num(g["lr"]),
                          betas=[float(b) for b in g["betas"]], adam_eps=float(g["eps"]))
        return
    rec.settings_read(optimizer=type(o).__name__, lr=_num(o.get_lr()), betas=[_num(o.beta1), _num(o.beta2)],
                      adam_eps=_num(o.eps))


def assign(param, value):
    """Write `value` into the Parameter's own storage (ops.assign). `set_data` would
    swap the storage: in PYNATIVE_MODE the already compiled (@jit) Adam update keeps
    writing the old one, so training would silently stop moving the weights."""
    _import()
    ops.assign(param, Tensor(np.asarray(value)).astype(param.dtype).reshape(param.shape))


def reset_adam(*opts):
    """A fresh Adam state, in place: the compiled step keeps its Parameters. `nn.Adam`
    (`fw.Adam`): moments 0, beta powers 1, step 0; a `mindspore.experimental.optim`
    AdamW: its moments (and max moments) 0, step count 0."""
    for o in opts:
        if hasattr(o, "exp_avg"):  # experimental.optim.AdamW (PyTorch's form)
            for m in list(o.exp_avg) + list(o.exp_avg_sq) + list(o.max_exp_avg_sq):
                assign(m, np.zeros(m.shape))
            assign(o.state_step, np.zeros(o.state_step.shape))
            continue
        for m in list(o.moment1) + list(o.moment2):
            assign(m, np.zeros(m.shape))
        for p in (o.beta1_power, o.beta2_power):
            assign(p, np.ones(p.shape))
        assign(o.global_step, np.zeros(o.global_step.shape))


def named_grads(opt, grads):
    """{parameter name: gradient} from the grads tuple the step returned (opt.parameters order)."""
    return {p.name: g for p, g in zip(opt.parameters, grads)}


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
    _import()
    return ms.dataset.GeneratorDataset(Batches(items, x, y), column_names=["x", "y"], shuffle=False,
                                       num_parallel_workers=1, python_multiprocessing=False)


def _input_spec(example):
    """The export's input: a Tensor of `example`'s trailing shape with the batch dimension
    None (MindSpore's dynamic shape), float32, or int32 for token ids (MindSpore's index type)."""
    dtype = ms.int32 if np.issubdtype(np.asarray(example).dtype, np.integer) else ms.float32
    return Tensor(shape=[None, *np.asarray(example).shape[1:]], dtype=dtype)


def _as_input(x):
    """A numpy batch as the exported graph takes it: int32 token ids, else float32."""
    x = np.ascontiguousarray(x)
    return x.astype(np.int32) if np.issubdtype(x.dtype, np.integer) else x.astype(np.float32)


def export(rec, model, example, path):
    """MindIR (mindspore.export(..., file_format="MINDIR")): MindSpore's deployment form,
    the cell's construct compiled to MindSpore's IR with its trained weights in one
    protobuf file, which mindspore.load + nn.GraphCell and MindSpore Lite run without the
    Python code. The input is a Tensor whose batch dimension is None (dynamic shape):
    one graph for every batch size. The cell is exported as the notebook left it (its
    training flag: inference mode in the serve cell)."""
    _import()
    ms.export(model, _input_spec(example), file_name=os.path.join(str(path), "model"), file_format="MINDIR")
    return ("MindIR (mindspore.export, file_format='MINDIR': the compiled graph with its weights, the form "
            "MindSpore and MindSpore Lite deploy; loaded with mindspore.load + nn.GraphCell), dynamic batch")


def load(path, device):
    """The MindIR file loaded with mindspore.load and run as nn.GraphCell on `device`
    (the CPU thread pool as the notebook's: the kernel's OMP_NUM_THREADS); no notebook code."""
    _import()
    ms.set_device("GPU" if device == "gpu" else "CPU")
    if device != "gpu" and os.environ.get("OMP_NUM_THREADS"):
        ms.device_context.cpu.op_tuning.threads_num(int(os.environ["OMP_NUM_THREADS"]))
    graph = nn.GraphCell(ms.load(os.path.join(str(path), "model.mindir")))

    def predict(x):
        return graph(Tensor(_as_input(x))).asnumpy()  # asnumpy waits for the result
    return predict


# ------------------------------------------------------------------ checkpoint and resume (#70)
def checkpoint(rec, path, *state):
    """mindspore.save_checkpoint of each Cell: the network's Parameters, and the optimizer's
    (nn.Adam's moments, beta powers and global step), MindSpore's own .ckpt. MindSpore has no
    getter for its global random state (mindspore.set_seed only sets it): LeNet and the LSTM
    draw no random numbers while they train."""
    _import()
    for i, s in enumerate(state):
        ms.save_checkpoint(s, os.path.join(path, f"{i}.ckpt"))
    return "mindspore.save_checkpoint of the network and of nn.Adam (moments, beta powers, global step); " \
           "no random state (MindSpore has no getter for it)"


def restore(rec, path, *state):
    """Each .ckpt's values assigned into the Cell's own Parameters by name (`assign`, not
    load_param_into_net's set_data, which the compiled update would not see)."""
    _import()
    for i, s in enumerate(state):
        saved = ms.load_checkpoint(os.path.join(path, f"{i}.ckpt"))
        own = dict(s.parameters_and_names())
        missing = [k for k in saved if k not in own]
        if missing:
            raise ValueError(f"checkpoint {i}.ckpt holds parameters this {type(s).__name__} lacks: {missing[:5]}")
        for k, v in saved.items():
            assign(own[k], v.asnumpy())
    return state

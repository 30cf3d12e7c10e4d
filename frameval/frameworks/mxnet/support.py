"""MXNet (Gluon) helpers shared by notebooks/mxnet/{lenet,dcgan,lstm,gpt}.ipynb: the
contract of frameval/frameworks/contract.py, and MXNet's own helpers.

Importing this module does NOT import MXNet: MXNet reads its thread settings
(MXNET_CPU_WORKER_NTHREADS, MXNET_OMP_MAX_THREADS) once, at import, so the setup
cell calls `setup` first:

    rec = nb.Recorder(...)                          # OMP_NUM_THREADS first
    from frameval.frameworks.mxnet import support as fw
    ctx = fw.setup(rec, mode, device, seed)         # MXNet's thread variables, then `import mxnet`
    import mxnet as mx

The contract:
- `setup`: the thread variables, `import mxnet`, the seed, the GPU guard, the context,
  the recorder's hooks (the clock waits with `mx.nd.waitall`), the OpenMP count read back.
- `placement`: where the data set lives once the data cell moved it.
- `compile_step`, `compile_eval`: the function as is; Gluon compiles blocks (`hybridize`,
  in the model cell), not functions.
- `record_scope`: `rec.set_graph_scope` from the CachedOps the training step's blocks built.
- `read_adam`, `reset_adam`: the optimizer's settings as the Trainer holds them; a
  fresh Adam state put back in place after the check.
- `autocast`: -p precision=bf16 as mxnet.contrib.amp (amp.init's wrappers, switched by
  the notebooks' `with amp.scope(blocks...):`); `wide`: a bfloat16 output read back as float32.
- `export`, `load` (#70): the served block as HybridBlock.export's symbol graph and parameters,
  loaded back with gluon.SymbolBlock.imports in the serving process.

MXNet's own:
- `Adam`: Gluon's fused Adam corrected to the spec's (PyTorch's) epsilon placement.
- `AdamW`: the spec's AdamW (decoupled decay), which mx.optimizer lacks, over the
  fused `contrib.adamw_update` kernel. Both are built on first use (they subclass
  mx.optimizer.Adam), after `setup` imported MXNet.
- `check_device`, `gpu_name`: the GPU guard and the GPU name for `rec.after_import`.
- `param_count`: trainable parameters, as recorded by `rec.set_param_counts`.
- `threads_effective`: the OpenMP thread count read back (MXNet 1.9.1 has no getter).
- `grads`: the gradients the last backward left on the parameters.
- `window_handler`, `batch_loader`: the LeNet notebook's Estimator (api = "high").
"""
import contextlib
import ctypes
import math
import os

mx = nd = None  # imported by setup(), after the thread variables


def _mxnet():
    """mxnet, imported on first use (setup() imports it first, after the thread variables)."""
    global mx, nd
    if mx is None:
        import mxnet
        mx, nd = mxnet, mxnet.nd
    return mx


def setup(rec, mode, device, seed):
    """Threads, `import mxnet`, seed, device and recorder hooks; -> the mx.Context the notebook places its arrays on."""
    # MXNet reads its thread settings once, at import. The recorder has set OMP_NUM_THREADS (threads inside
    # one operator); one engine worker runs the operators one after another, so the run uses rec.threads threads.
    os.environ["MXNET_CPU_WORKER_NTHREADS"] = "1"
    os.environ["MXNET_OMP_MAX_THREADS"] = str(rec.threads)
    _mxnet()
    mx.random.seed(seed)  # MXNet's own random numbers (DCGAN's dropout masks)
    check_device(device)  # device='gpu' without a GPU build raises, never falls back
    ctx = mx.gpu(0) if device == "gpu" else mx.cpu()
    # MXNet queues work asynchronously on the CPU too: waitall() before every clock read. MXNet has no allocator
    # peak counter, so device_peak_mb stays "not available"; on a GPU the recorder's NVML probe measures the process.
    rec.after_import(mx.__version__, sync=mx.nd.waitall, gpu_name=gpu_name(device))
    threads_effective(rec)  # OpenMP threads read back; MXNet itself has no getter
    print(f"mxnet {mx.__version__} on {ctx}, OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}, mode={mode}")
    return ctx


def _present(defect: str):
    """Run MXNet's reproduction defects/mxnet/<defect>.py in this environment's Python (a child: one of
    them aborts the process): its last lines where it says the defect is present (exit 1), else None."""
    import subprocess
    import sys
    from frameval.paths import REPO
    script = REPO / "defects" / "mxnet" / f"{defect}.py"
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, PYTHONPATH=str(REPO)))
    if p.returncode != 1:
        return None
    return " / ".join(ln.strip() for ln in p.stdout.strip().splitlines()[-3:])


def autocast(rec, precision, ctx=None, mode="eager", needs=()):
    """-p precision=bf16: mxnet.contrib.amp with target_dtype="bfloat16" (oneDNN on the CPU), the
    notebooks' `with amp.scope(*blocks):` around the forward and the loss; weights, gradients and
    Adam stay float32. MXNet's own lists (contrib/amp/lists/symbol_bf16.py) decide: Convolution and
    FullyConnected compute in bfloat16 (their inputs amp_cast), the FP32 list (softmax, log_softmax,
    pick, mean, sum, exp, log, sigmoid, LayerNorm, RNN, Deconvolution, Dropout, Embedding...) in float32,
    the BF16_FP32 list (relu, Pooling, tanh, BatchNorm with float32 parameters, concat...) in whatever
    reaches them, the widest-type list (elemwise/broadcast arithmetic, dot, batch_dot) at the wider input.

    amp.init() wraps the operator functions of mx.nd and mx.sym in place, for good. The switch is
    that same wrapping, taken apart: autocast calls amp.init() once (before the model is built, as
    its documentation asks), keeps MXNet's wrapped functions and the originals, and puts the
    originals back; `amp.scope(*blocks)` installs the wrappers while amp.on (the originals while
    off) and puts back on exit what was there (the originals outside any scope), so that MXNet outside a
    scope is float32 as before.
    Gluon calls F.<op> at call time, so eager mode switches at once; a hybridized block traced its
    graph under one state, so the scope rebuilds the CachedOp of each block given to it whose
    graph was traced under the other state (graph mode: the float32 check pass and training each
    trace their own graph; training's is the one the AMP check ran). Off for float32 runs.

    Graph mode fails where MXNet's AMP does (docs/frameworks/mxnet.md): the DCGAN generator's
    hybridized Dense -> reshape -> Conv2DTranspose backward (defects/mxnet/amp-bf16-hybrid-deconv.py)
    and the LSTM, whose hybridized gluon.rnn layer builds a zero state the AMP's symbol wrapper
    cannot (defects/mxnet/amp-bf16-symbol-zeros.py); eager mode trains both."""
    from frameval.frameworks.contract import NotOffered
    from frameval.nb.amp import Amp
    if precision != "bf16":
        if precision == "fp16":
            raise NotOffered("MXNet's AMP casts to float16 on a GPU context only (contrib/amp/amp.py, "
                             "_cast_symbol_NDArray): on the CPU nothing would compute in float16")
        amp = Amp(precision)
        amp.scope = lambda *blocks: contextlib.nullcontext()  # float32: MXNet's own operators, nothing switched
        return rec.set_amp(amp)
    if mode == "graph":  # what MXNet's AMP fails in graph mode, tried by its reproduction before anything trains
        for defect in needs:
            said = _present(defect)
            if said:
                raise NotOffered(f"mxnet.contrib.amp (target_dtype='bfloat16') in graph mode: its reproduction "
                                 f"defects/mxnet/{defect}.py says: {said}")
    _mxnet()
    from mxnet.contrib import amp as mxamp
    try:
        switch = _AmpSwitch(mxamp)
        switch.probe(ctx or mx.cpu())
    except Exception as e:  # noqa: BLE001 - MXNet's own error is the evidence
        raise NotOffered(f"mxnet.contrib.amp (target_dtype='bfloat16') on {ctx or mx.cpu()}: a Convolution and a "
                         f"FullyConnected under amp.init's wrappers, forward and backward, raised "
                         f"{type(e).__name__}: {e}") from e
    fp32 = [op for op in mxamp.list_fp32_ops(_bf16()) if not op.startswith("_")]
    used = ("softmax", "log_softmax", "softmax_cross_entropy", "pick", "mean", "sum", "exp", "log", "sigmoid",
            "LayerNorm", "RNN", "Deconvolution", "Dropout", "Embedding", "argmax", "adam_update")
    amp = Amp(precision, "mxnet.contrib.amp.init(target_dtype='bfloat16')", "",
              [op for op in used if op in fp32] + ["BatchNorm parameters and running statistics"],
              how="amp.init's operator wrappers installed in mx.nd/mx.sym while amp.on, MXNet's originals while off "
                  "(amp.scope); graph mode rebuilds a block's CachedOp when the switch changed since its trace")
    amp.scope = switch.scope_for(amp)
    return rec.set_amp(amp)


def wide(a):
    """An array as float32 for reading back (numpy cannot hold MXNet's bfloat16): amp_cast, exact."""
    _mxnet()
    return nd.amp_cast(a, dtype="float32") if a.dtype == _bf16() else a


class _AmpSwitch:
    """amp.init()'s operator wrappers, installable and removable (autocast's docstring)."""

    def __init__(self, mxamp):
        before = self._functions()
        if mxamp.amp._amp_initialized:
            raise RuntimeError("mxnet.contrib.amp was initialised before autocast: its originals are lost")
        mxamp.init(target_dtype="bfloat16")
        after = self._functions()
        self.swaps = [(mod, name, before[mod, name], fn) for (mod, name), fn in after.items()
                      if (mod, name) in before and before[mod, name] is not fn]
        if not self.swaps:
            raise RuntimeError("amp.init(target_dtype='bfloat16') wrapped no operator")
        self.state = True
        self.install(False)

    @staticmethod
    def _functions():
        from mxnet import base, ndarray, symbol
        mods = []
        for m in (ndarray, symbol):
            mods += [m, m.op, m._internal] + [getattr(m, p[1:-1]) for p in base._OP_NAME_PREFIX_LIST
                                             if hasattr(m, p[1:-1])]
        return {(mod, k): v for mod in mods for k, v in vars(mod).items() if callable(v)}

    def install(self, on):
        if on != self.state:
            for mod, name, orig, wrapped in self.swaps:
                setattr(mod, name, wrapped if on else orig)
            self.state = on

    def probe(self, ctx):
        """One Convolution and one FullyConnected under the wrappers, forward and backward: the
        outputs bfloat16, the weight gradients float32 (NotOffered with MXNet's error otherwise)."""
        from mxnet import autograd
        x = nd.ones((2, 1, 6, 6), ctx=ctx)
        w, b = nd.ones((2, 1, 3, 3), ctx=ctx) * 0.1, nd.zeros((2,), ctx=ctx)
        w2, b2 = nd.ones((3, 32), ctx=ctx) * 0.1, nd.zeros((3,), ctx=ctx)
        for p in (w, w2):
            p.attach_grad()
        self.install(True)
        try:
            with autograd.record():
                h = nd.Convolution(x, w, b, kernel=(3, 3), num_filter=2)
                y = nd.FullyConnected(nd.relu(h), w2, b2, num_hidden=3)
                loss = nd.mean(y)
            loss.backward()
            nd.waitall()
        finally:
            self.install(False)
        kinds = {"Convolution output": h.dtype, "FullyConnected output": y.dtype,
                 "Convolution weight gradient": w.grad.dtype, "FullyConnected weight gradient": w2.grad.dtype}
        want = [_bf16(), _bf16(), w.dtype, w2.dtype]
        if [str(k) for k in kinds.values()] != [str(k) for k in want]:
            raise RuntimeError(f"dtypes {kinds}, expected bfloat16 outputs and float32 weight gradients")

    def scope_for(self, amp):
        switch = self

        class Scope:
            def __init__(self, *blocks):
                self.blocks = blocks

            def __enter__(self):
                on = bool(amp.on)
                for blk in self.blocks:  # a CachedOp traced under the other state is rebuilt
                    traced = getattr(blk, "_frameval_amp", False)  # outside a scope: MXNet's originals
                    if getattr(blk, "_cached_op", None) is not None and traced != on:
                        blk._clear_cached_op()
                    blk._frameval_amp = on
                self.outer = switch.state
                switch.install(on)
                return self

            def __exit__(self, *exc):
                switch.install(self.outer)  # an enclosing scope's state, MXNet's originals outside any
                return False

        return Scope


def _bf16():
    from mxnet.contrib.amp.amp import bfloat16
    return bfloat16


def _optimizers():
    """The spec's Adam and AdamW, subclasses of mx.optimizer.Adam: built once MXNet is imported."""
    _mxnet()

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

    for cls in (Adam, AdamW):  # module-level names, as when they were defined at the top (pickle finds them)
        cls.__qualname__, cls.__module__ = cls.__name__, __name__
    return Adam, AdamW


def __getattr__(name):  # fw.Adam, fw.AdamW: built on first use, after setup() imported MXNet
    if name in ("Adam", "AdamW"):
        globals()["Adam"], globals()["AdamW"] = _optimizers()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def check_device(device):
    """Raise when device == "gpu" but this MXNet build sees no GPU (never fall back to the CPU)."""
    _mxnet()
    if device == "gpu" and mx.context.num_gpus() == 0:
        raise RuntimeError("device='gpu' but mx.context.num_gpus() is 0 (this MXNet build has no CUDA; "
                           "GPU builds are the separate mxnet-cuXXX packages)")


def gpu_name(device):
    """MXNet has no device-name API: "CUDA device 0 of N" on the GPU, None on the CPU."""
    _mxnet()
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


def placement(dev):
    """Where the data set lives once the data cell moved it (nd.array copies); `dev` is setup()'s context."""
    return "host copy (nd.array copies numpy's buffer)" if dev.device_type == "cpu" else "device copy (mx.gpu(0))"


def compile_step(step, mode):
    """`step` as is, in both modes: Gluon compiles blocks, not functions. Graph mode is the model cell's
    `hybridize(static_alloc=True)` of the blocks the step calls (each a CachedOp, forward and backward);
    the Adam update (Trainer.step) runs from Python in both modes (UPDATE_WHY). The notebooks call the
    step directly; `record_scope` records what the blocks compiled."""
    return step


def compile_eval(fn, mode):
    """`fn` as is, in both modes: evaluation calls the same blocks as the step, outside autograd.record()
    (inference mode), through their CachedOps in graph mode (hybridized in the model cell)."""
    return fn


def record_scope(rec, mode, step, how="", why=""):
    """rec.set_graph_scope: forward and backward in graphs when every hybridized block
    of the training step built its CachedOp; the update stays outside (see `why`).
    `step`: the blocks the training step calls (Gluon compiles blocks, not the step function)."""
    if mode != "graph":
        rec.set_graph_scope(False, False, False)
        return
    built = sum(getattr(b, "_cached_op", None) is not None for b in step)
    whole = built == len(step)
    rec.set_graph_scope(whole, whole, False, graphs=built, graph_breaks=None, how=how,
                        why=why if whole else f"only {built} of {len(step)} CachedOps built; " + why)


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


def export(rec, model, example, path):
    """HybridBlock.export: the block's symbol graph (`model-symbol.json`) and its parameters
    (`model-0000.params`, `arg:`/`aux:` names), MXNet's deployment form: what
    gluon.SymbolBlock.imports, the Module API and the C++ predictor load without the
    block's Python code. The graph has no batch size (shapes are inferred at each call).
    Export takes the graph a hybridized block traced: in graph mode the one the model runs
    (its CachedOp, traced by the predictions just before); in eager mode the block is
    hybridized for one inference forward of `example`, exported, and set back to imperative."""
    _mxnet()
    ctx = next(iter(model.collect_params().values())).list_ctx()[0]
    traced = bool(model._cached_graph)
    if not traced:  # eager mode: no graph yet
        model.hybridize()
        model(nd.array(example, ctx=ctx, dtype=example.dtype)).wait_to_read()
    try:
        model.export(os.path.join(str(path), "model"), epoch=0)
    finally:
        if not traced:
            model.hybridize(False)  # imperative again, its traced graph dropped
    return ("MXNet symbol JSON + params (HybridBlock.export), any batch: the format gluon.SymbolBlock.imports "
            "and MXNet's C++ predictor load")


def load(path, device):
    """The exported graph and parameters loaded with gluon.SymbolBlock.imports onto the
    device's context, hybridized with static_alloc as the notebooks' blocks are; called
    outside autograd (inference: BatchNorm's running statistics), read back with asnumpy."""
    _mxnet()
    check_device(device)
    ctx = mx.gpu(0) if device == "gpu" else mx.cpu()
    import warnings
    with warnings.catch_warnings():  # the input's dtype is the first call's: "Cannot decide type ... data: None"
        warnings.filterwarnings("ignore", "Cannot decide type", UserWarning)
        block = mx.gluon.SymbolBlock.imports(os.path.join(str(path), "model-symbol.json"), ["data"],
                                             os.path.join(str(path), "model-0000.params"), ctx=ctx)
    block.hybridize(static_alloc=True)

    def predict(x):
        return block(nd.array(x, ctx=ctx, dtype=x.dtype)).asnumpy()
    return predict


# ------------------------------------------------------------------ checkpoint and resume (#70)
def _is_trainer(obj) -> bool:
    return type(obj).__name__ == "Trainer"


def checkpoint(rec, path, *state):
    """Gluon's own pair: the block's save_parameters (.params) and the Trainer's save_states
    (.states: Adam's moments and update counts). MXNet has no getter for its generators'
    state (mx.random.seed only sets it): LeNet and the LSTM draw no random numbers while
    they train."""
    for i, s in enumerate(state):
        if _is_trainer(s):
            s.save_states(os.path.join(path, f"{i}.states"))
        else:
            s.save_parameters(os.path.join(path, f"{i}.params"))
    return "Gluon save_parameters (.params) and Trainer.save_states (.states: Adam's moments, update counts); " \
           "no random state (MXNet has no getter for it)"


def restore(rec, path, *state):
    """load_parameters into the block's own arrays (on their context) and load_states into the Trainer."""
    for i, s in enumerate(state):
        if _is_trainer(s):
            s.load_states(os.path.join(path, f"{i}.states"))
        else:
            ctx = next(iter(s.collect_params().values())).list_ctx()
            s.load_parameters(os.path.join(path, f"{i}.params"), ctx=ctx)
    return state

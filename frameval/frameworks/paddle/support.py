"""PaddlePaddle helpers shared by notebooks/paddle/{lenet,dcgan,lstm,gpt}.ipynb: the
contract of frameval/frameworks/contract.py (#68), and the notebooks' own helpers.

Importing this module does NOT import paddle: Paddle reads its log levels and the
home directory at import, so the setup cell calls `setup` first (docs/frameworks/paddle.md, "Traps"):

    rec = nb.Recorder(...)                   # thread env vars first
    dev = fw.setup(rec, mode, device, seed)  # log levels, warnings, HOME; import paddle; threads, seed, device, hooks
    import paddle                            # already imported by setup: the notebook's own names

- `setup`: `prepare_env`, `import paddle` inside `drop_omp_warning`, `set_threads`, the seed,
  the device (a GPU that is not there raises), `rec.after_import` with `gpu_hooks`; -> the device name.
- `placement`, `read_adam`, `reset_adam`, `record_scope`: the contract's, as Paddle does them.
- `compile_step`, `compile_eval`: the step and the evaluation run as they are; graph mode converts
  the model's forward in the notebook (`paddle.jit.to_static`): the whole step does not convert
  (WHOLE_STEP_ERROR).
"""
import contextlib
import io
import os
import sys
import warnings

from frameval.nb.paths import user_cache_dir


def prepare_env(rec):
    """Before `import paddle`: quiet logs and move Paddle's home-dir writes into the run's work/ folder."""
    # GLOG_v > 0 (MindSpore's "quiet" value 4 is Paddle's "verbose") prints whole IR programs on stdout.
    os.environ["GLOG_v"] = "0"
    os.environ.setdefault("GLOG_minloglevel", "2")                   # C++ INFO lines ("New Executor is Running")
    warnings.filterwarnings("ignore", module=r"paddle(\.|$)")        # e.g. "No ccache found" at import
    # Paddle writes under ~/.cache/paddle: a dataset folder at import, to_static's converted sources on first call.
    # There is no Paddle variable for it, so HOME points at the run's work/ folder for this kernel from here on;
    # frameval's data cache keeps its path.
    os.environ.setdefault("FRAMEVAL_CACHE_DIR", str(user_cache_dir()))
    os.environ["HOME"] = str(rec.out / "work")


@contextlib.contextmanager
def drop_omp_warning():
    """Around `import paddle`: drop its stderr lines "WARNING: OMP_NUM_THREADS set to N, not 1 ..." (printed
    whenever the recorder set it above 1); every other stderr line is printed after the import."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            yield
    finally:
        print("".join(l for l in err.getvalue().splitlines(True) if "OMP_NUM_THREADS" not in l), end="", file=sys.stderr)


def gpu_hooks(gpu):
    """`rec.after_import` keywords: clock sync, allocator peak and GPU name on the GPU build; None on the CPU."""
    import paddle

    cuda = paddle.device.cuda
    return dict(sync=cuda.synchronize if gpu else None,
                reset_device_peak=cuda.reset_max_memory_allocated if gpu else None,
                device_peak_mb=(lambda: cuda.max_memory_allocated() / 1e6) if gpu else None,
                gpu_name=cuda.get_device_name(0) if gpu else None)


def count_params(model):
    """Trainable parameters. BatchNorm's `_mean`/`_variance` are in `parameters()` too, with stop_gradient=True."""
    return sum(p.numel().item() for p in model.parameters() if not p.stop_gradient)


def set_threads(rec):
    """paddle.base.core.set_num_threads, read back from the OpenMP runtime Paddle ships (libiomp5:
    Paddle has no get_num_threads)."""
    import ctypes

    import paddle

    missing = ["paddle has no get_num_threads (only paddle.base.core.set_num_threads)",
               "no inter-op thread setting or getter"]
    if hasattr(paddle.base.core, "set_num_threads"):
        paddle.base.core.set_num_threads(rec.threads)
    else:
        missing.append("paddle.base.core.set_num_threads")
    intra, how = None, "no Paddle thread getter"
    for lib in ("libiomp5.so", "libgomp.so.1"):
        try:
            path = os.path.join(os.path.dirname(paddle.__file__), "libs", lib)
            omp = ctypes.CDLL(path if os.path.exists(path) else lib, mode=getattr(os, "RTLD_NOLOAD", 0))
            intra, how = omp.omp_get_max_threads(), f"omp_get_max_threads() of the {lib} Paddle loaded (ctypes)"
            break
        except OSError:
            continue
    rec.set_threads_effective(intra, None, how, missing)


def setup(rec, mode, device, seed):
    """Everything before the data, in the order the notebooks' setup cell had it: `prepare_env` (before the
    import), `import paddle` (its OMP_NUM_THREADS warning dropped), the thread count set and read back, the
    seed, the device (device='gpu' on a CPU build raises, never falls back), the recorder's hooks, the print
    line. Graph and eager mode need no switch here: graph mode is the notebook's `paddle.jit.to_static` of the
    model's forward. -> the device as Paddle names it ("cpu", "gpu:0"): paddle.to_tensor places there."""
    prepare_env(rec)
    with drop_omp_warning():  # "WARNING: OMP_NUM_THREADS set to N, not 1 ..." on stderr
        import paddle

    set_threads(rec)  # paddle.base.core.set_num_threads, read back from Paddle's OpenMP runtime
    paddle.seed(seed)
    if device == "gpu" and not paddle.device.is_compiled_with_cuda():
        raise RuntimeError("device='gpu' but this Paddle build is not compiled with CUDA (install paddlepaddle-gpu)")
    paddle.set_device("gpu:0" if device == "gpu" else "cpu")
    gpu = device == "gpu"
    rec.after_import(paddle.__version__, **gpu_hooks(gpu))
    print(f"paddle {paddle.__version__} on {paddle.get_device()}, {rec.threads} threads, mode={mode}")
    return paddle.get_device()


def placement(dev):
    """`dev`: setup's device name."""
    gpu = str(dev).startswith("gpu")
    return "device copy (paddle.to_tensor on gpu:0)" if gpu else "host copy (paddle.to_tensor copies numpy's buffer)"


def compile_step(step, mode):
    """The step as it is, in both modes: Paddle cannot convert the whole step (forward, loss.backward(),
    opt.step()) under to_static(full_graph=True) (WHOLE_STEP_ERROR). In graph mode the notebook converts the
    model's forward (`paddle.jit.to_static(model, full_graph=True, backend=None)`), which the step calls:
    its backward runs as the static program's, the loss and the update in the dynamic graph (`record_scope`
    records that, with the workaround `to-static-whole-step`)."""
    return step


def compile_eval(fn, mode):
    """The evaluation as it is, in both modes: it calls the same converted forward as the step (graph mode's
    `paddle.jit.to_static` of the model, in the notebook), which builds one static program per input shape
    and train/eval flag. Nothing else to convert."""
    return fn


def read_adam(rec, *opts):
    """Adam's lr, betas and eps as the optimizer objects hold them."""
    o = opts[0]
    rec.settings_read(optimizer=type(o).__name__, lr=o.get_lr(), betas=[float(o._beta1), float(o._beta2)],
                      adam_eps=float(o._epsilon))


def reset_adam(*opts):
    """A fresh Adam state in place: every accumulator (moments, beta powers) set back to its
    initial value; the optimizer objects and the converted programs stay."""
    import paddle

    for opt in opts:
        for name, accs in opt._accumulators.items():
            for acc in accs.values():
                if "beta1_pow" in name:
                    acc.set_value(paddle.full_like(acc, opt._beta1))
                elif "beta2_pow" in name:
                    acc.set_value(paddle.full_like(acc, opt._beta2))
                else:
                    acc.set_value(paddle.zeros_like(acc))


def grads(model, prefix="", transpose=(), rename=None, clip=None):
    """{prefix + canonical name: p.grad} as the step's backward left them (before the next clear_grad);
    names in `transpose` are Linear weights, stored (in, out) in Paddle. `clip`: the optimizer's
    grad_clip object. Paddle clips a copy inside opt.step() and leaves p.grad unclipped, so the
    gradients the update used are that same object applied to the same gradients (it is deterministic)."""
    pairs = [(k, p) for k, p in model.named_parameters() if not p.stop_gradient and p.grad is not None]
    values = [p.grad for _, p in pairs]
    if clip is not None:
        values = [g for _, g in clip([(p, p.grad) for _, p in pairs])]  # keeps the order (paddle/nn/clip.py)
    out = {}
    for (k, _), g in zip(pairs, values):
        name = (rename or {}).get(k, k)
        out[prefix + name] = g.numpy().T if name in transpose else g.numpy()
    return out


def programs(*static_layers):
    """Static programs built so far by the converted forwards (one per input shape and train/eval flag)."""
    return sum(len(m.forward.program_cache) for m in static_layers)


WHOLE_STEP_ERROR = ("paddle.jit.to_static(full_graph=True) of the whole step (forward, loss.backward(), opt.step()) "
                    "fails in Paddle 3.2.2 and 3.3.1 (the versions tried): \"AttributeError: 'paddle.base.libpaddle.pir.Value' object has no "
                    "attribute 'backward'\"; with opt.minimize(loss) or paddle.grad(loss, params) instead: "
                    "\"TypeError: Value Wrapper is only support None and pir.Value\" (the parameters are dynamic-graph "
                    "tensors, not values of the traced program)")


HOW = "paddle.jit.to_static (AST, full_graph=True) on forward: the forward and its backward as static programs"


def record_scope(rec, mode, step, how=HOW, why=""):
    """rec.set_graph_scope for the converted forward: its backward runs as the static program's backward
    (run_program's grad); the Adam update runs in the dynamic graph (WHOLE_STEP_ERROR). `step`: the static
    programs the training step built (`programs(...)` after the check: evaluation adds its own); `why`:
    what else runs outside the programs, after the update's reason."""
    if mode != "graph":
        rec.set_graph_scope(False, False, False)
        return
    ok = step > 0
    rec.workaround("to-static-whole-step")
    rec.set_graph_scope(ok, ok, False, graphs=step, graph_breaks=0, how=how,
                        why="the Adam update runs in the dynamic graph: " + WHOLE_STEP_ERROR + ("; " + why if why else ""))


def window_callback(windows):
    """A paddle.callbacks.Callback that marks the recorder's timing windows
    (ep.step_windows) from paddle.Model.fit's own loop: step j's `on_train_batch_begin`
    and `on_train_batch_end` (fit has already read the step's loss to the host there).
    It keeps each step's loss (`losses`) and the last step's logs (`last`: fit's
    accuracy over the epoch so far), which fit itself returns nowhere.
    Built on call: this module imports no paddle at its top."""
    from paddle.callbacks import Callback

    class WindowCallback(Callback):
        def __init__(self):
            super().__init__()
            self.losses, self.last = [], {}

        def on_train_batch_begin(self, step, logs=None):
            windows.begin(step)

        def on_train_batch_end(self, step, logs=None):
            windows.end(step)  # the two lines below sit between steps, as the basic loop's list appends do
            self.last = dict(logs or {})
            self.losses.append(float(self.last["loss"][0]))

    return WindowCallback()


class Batches:
    """The epoch's batches for paddle.Model.fit, gathered from the device copy one step
    at a time, as the basic loop gathers them (`[x, y]` per step; fit takes any iterable
    with a length). `gather` is paddle.gather, `to_tensor` paddle.to_tensor."""

    def __init__(self, items, x, y, gather, to_tensor):
        self.items, self.x, self.y, self.gather, self.to_tensor = items, x, y, gather, to_tensor

    def __len__(self):
        return len(self.items)

    def __iter__(self):
        for idx in self.items:
            i = self.to_tensor(idx)
            yield [self.gather(self.x, i), self.gather(self.y, i)]

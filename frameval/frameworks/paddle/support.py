"""PaddlePaddle helpers shared by notebooks/paddle/{lenet,dcgan,lstm,gpt}.ipynb.

The setup cell calls, in this order (see docs/frameworks/paddle.md, "Traps"):

    rec = nb.Recorder(...)                 # thread env vars first
    fw.prepare_env(rec)                    # log levels, warnings, HOME
    with fw.drop_omp_warning():
        import paddle
    ...
    rec.after_import(paddle.__version__, **fw.gpu_hooks(gpu))

Paddle reads its log levels and the home directory at import, so this module
does not import paddle at module level: `prepare_env` must run before it.
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


def placement(gpu):
    return "device copy (paddle.to_tensor on gpu:0)" if gpu else "host copy (paddle.to_tensor copies numpy's buffer)"


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


def record_scope(rec, mode, n_programs, how, outside):
    """rec.set_graph_scope for the converted forward: its backward runs as the static program's backward
    (run_program's grad); the Adam update runs in the dynamic graph (WHOLE_STEP_ERROR)."""
    if mode != "graph":
        rec.set_graph_scope(False, False, False)
        return
    ok = n_programs > 0
    rec.workaround("to-static-whole-step",
                   "to_static(full_graph=True) of the whole step fails (pir.Value has no attribute 'backward'); "
                   "the forward is converted (its backward runs as the static program's), the Adam update runs in "
                   "the dynamic graph", versions="3.3.1",
                   found_by="building the graph-mode notebooks (the converted step raised)",
                   cost="the update runs outside the graph (graph scope: forward + backward)")
    rec.set_graph_scope(ok, ok, False, graphs=n_programs, graph_breaks=0, how=how,
                        why="the Adam update runs in the dynamic graph: " + WHOLE_STEP_ERROR + "; " + outside)


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

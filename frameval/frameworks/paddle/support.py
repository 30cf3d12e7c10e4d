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
- `autocast`: -p precision=bf16 as `paddle.amp.auto_cast(dtype="bfloat16", level="O1")` inside the converted
  forward (#69); eager on the CPU, the DCGAN, the GPT and paddle.Model raise NotOffered with Paddle's own words.
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


AMP_LEVEL = "O1"  # weights and Adam in float32, no paddle.amp.decorate; Paddle's own lists decide the rest


def _amp_lists():
    """Paddle's own O1 lists for bfloat16 (paddle/amp/amp_lists.py): the white list runs in bfloat16,
    the black list in float32, any other op in its inputs' type (a float32 input promotes it)."""
    from paddle.amp import amp_lists

    return sorted(amp_lists.white_list()["bfloat16"][AMP_LEVEL]), sorted(amp_lists.black_list()["bfloat16"][AMP_LEVEL])


def _amp_probe(mode):
    """One matmul under paddle.amp.auto_cast(dtype='bfloat16', level='O1'), in the run's mode: graph mode
    inside a paddle.jit.to_static function (the notebooks' converted forward), eager in the dynamic graph.
    Its operands are 1 + 2^-10, which bfloat16 rounds to 1: a product computed in bfloat16 sums to exactly
    4.0, one in float32 to 4.0078. -> (the product's dtype, its value, the warnings Paddle printed).
    The converted function returns float32: a converted program whose output is bfloat16 fails on the
    CPU ("dst_tensor `output_0` shall be defined", or a segmentation fault in run_program); the notebooks'
    forwards end in a float32 op (a bias add, tanh after a transposed convolution)."""
    import warnings

    import paddle

    seen = []

    def mm(x):
        with paddle.amp.auto_cast(enable=True, dtype="bfloat16", level=AMP_LEVEL):
            y = paddle.matmul(x, x)
        seen.append(str(y.dtype).replace("paddle.", ""))  # at trace time in graph mode: the program's type
        return y.astype("float32")

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        fn = paddle.jit.to_static(mm, full_graph=True, backend=None) if mode == "graph" else mm
        out = fn(paddle.full([4, 4], 1 + 2 ** -10, dtype="float32"))
    return seen[-1], float(out[0, 0]), [f"{w.category.__name__}: {w.message}" for w in said if "amp" in str(w.message).lower()]


# what the workload needs under the AMP, as the NotOffered reason says it where Paddle fails it
NEEDS = {
    "batch_norm": ("the workload's BatchNorm after a bfloat16 product fails: {failed} (its CPU kernel takes float32/"
                   "float64 and the AMP does not cast its input back; custom_black_list=['batch_norm', 'batch_norm_'] "
                   "was tried and changes nothing; defects/paddle/amp-bf16-cpu-batch-norm.py)"),
    "sdpa_causal": ("the workload's F.scaled_dot_product_attention(is_causal=True) on bfloat16 q, k, v (from "
                    "white-list products) fails: {failed} (on the CPU it is the math backend, whose causal mask "
                    "calls triu on the bfloat16 scores, and triu's CPU kernel has no bfloat16; "
                    "defects/paddle/amp-bf16-cpu-sdpa-triu.py)"),
    "bfloat16_output": ("the workload's forward ends in a white-list product (the logits: matmul with the tied "
                        "embedding), so the converted program's output is bfloat16, and such a program fails on the "
                        "CPU: {failed} (run_program's CreateOutputTensorsFromValue; tried in a child process, as it "
                        "takes the kernel down; defects/paddle/amp-bf16-cpu-program-output.py)"),
}


def _layer_probe(layer):
    """A layer the workload needs, behind a white-list product (a bias-free Linear, as the DCGAN generator's
    fc; a matmul, as the GPT's qkv), in a converted function under the AMP: None where it runs, else
    Paddle's error (type and last line). These fail while tracing, in this process; "bfloat16_output"
    crashes the process, so it runs in a child (_output_probe)."""
    if layer == "bfloat16_output":
        return _output_probe()
    import paddle

    def attention(x):  # (batch, length, heads, head width), as the GPT's blocks call it
        q = paddle.matmul(x, w).reshape([0, 0, 2, 2])
        return paddle.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)

    w = paddle.ones([4, 4], dtype="float32")
    net = {"batch_norm": lambda: paddle.nn.Sequential(paddle.nn.Linear(4, 8, bias_attr=False),
                                                     paddle.nn.Unflatten(1, [2, 2, 2]), paddle.nn.BatchNorm2D(2)),
           "sdpa_causal": lambda: attention}[layer]()
    shape = {"batch_norm": [2, 4], "sdpa_causal": [1, 3, 4]}[layer]

    def fwd(x):
        with paddle.amp.auto_cast(enable=True, dtype="bfloat16", level=AMP_LEVEL):
            return net(x).astype("float32")  # a converted program's bfloat16 output fails on the CPU (_amp_probe)

    try:
        paddle.jit.to_static(fwd, full_graph=True, backend=None)(paddle.ones(shape, dtype="float32"))
        return None
    except Exception as e:
        lines = [l.strip() for l in str(e).strip().splitlines() if l.strip()]
        last = lines[-1] if lines else ""
        return last if last.startswith(type(e).__name__) else f"{type(e).__name__}: {last}"


OUTPUT_PROBE = """
import paddle
class M(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.w = paddle.nn.Embedding(10, 8)
    def forward(self, idx):
        with paddle.amp.auto_cast(enable=True, dtype="bfloat16", level="O1"):
            return paddle.matmul(self.w(idx), self.w.weight, transpose_y=True)
y = paddle.jit.to_static(M(), full_graph=True, backend=None)(paddle.to_tensor([[1, 2, 3]]))
print("ran", y.dtype)
"""


def _output_probe():
    """A converted forward whose output is a white-list product (bfloat16: the GPT's logits, matmul with the
    tied embedding), in a child process: on the CPU the program dies in run_program (a segmentation fault,
    which would take the notebook's kernel with it). None where the child runs it, else what it said."""
    import signal
    import subprocess
    import tempfile

    env = dict(os.environ, GLOG_v="0", GLOG_minloglevel="2")
    with tempfile.TemporaryDirectory() as tmp:  # a file: to_static's AST translator reads the forward's source
        script = os.path.join(tmp, "amp_output_probe.py")
        with open(script, "w", encoding="utf-8") as f:
            f.write(OUTPUT_PROBE)
        try:
            r = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=300, env=env, cwd=tmp)
        except subprocess.TimeoutExpired:
            return "the child process did not finish in 300 s"
    if r.returncode == 0 and "ran paddle.bfloat16" in r.stdout:
        return None
    said = [l.strip() for l in (r.stderr + r.stdout).splitlines() if l.strip() and ("Error" in l or "Signal" in l)]
    died = (f"killed by {signal.Signals(-r.returncode).name}" if r.returncode < 0 else f"exit status {r.returncode}")
    return f"the child process: {died}" + (": " + " | ".join(said[-2:]) if said else "")


def _high_api_refusal() -> str:
    """Why paddle.Model takes no bfloat16 AMP, in Paddle's own words where it has some."""
    import paddle
    try:
        paddle.Model(paddle.nn.Linear(2, 2)).prepare(amp_configs={"level": AMP_LEVEL, "dtype": "bfloat16"})
        said = "prepare accepted it, but Model.train_batch calls paddle.amp.auto_cast without a dtype (float16)"
    except Exception as e:  # the framework's own words
        said = f"{type(e).__name__}: {e}"
    return (f"precision=bf16 with api='high': paddle.Model.prepare(amp_configs={{'level': '{AMP_LEVEL}', "
            f"'dtype': 'bfloat16'}}) in Paddle {paddle.__version__}: {said} (paddle/hapi/model.py: "
            "train_batch's auto_cast takes no dtype, float16 only); the loop written out (api='basic') "
            "runs bfloat16 in graph mode")


# Where it is not offered (NotOffered, with what Paddle said): the dynamic graph on the CPU (Paddle 3.3.1's
# auto_cast warns "amp_guard can only be enabled on CUDAPlace, XPUPlace, and CustomPlace ... so it makes
# no effect" and computes in float32; defects/paddle/amp-bf16-cpu-dygraph.py), and paddle.Model (its
# prepare(amp_configs) takes no dtype: its auto_cast is float16 only). Both are tried here, not assumed:
# a matmul under the AMP in the run's mode must come back in bfloat16. `needs`: the workload's layers
# to try under it first (NEEDS): "batch_norm", the DCGAN's (Paddle 3.3.1's converted AMP hands BatchNorm a
# bfloat16 input that its CPU kernel refuses, defects/paddle/amp-bf16-cpu-batch-norm.py); "bfloat16_output",
# the GPT's (its logits are a matmul, so its converted program returns bfloat16, which dies on the CPU,
# defects/paddle/amp-bf16-cpu-program-output.py), and "sdpa_causal", the GPT's too (the CPU attention's
# causal mask calls triu on bfloat16 scores, which has no CPU kernel, defects/paddle/amp-bf16-cpu-sdpa-triu.py).
def autocast(rec, precision, mode="graph", api="basic", needs=()):
    """-p precision=bf16: `paddle.amp.auto_cast(dtype="bfloat16", level="O1")` around the model's forward,
    inside the converted forward (graph mode), weights and Adam in float32. O1, not O2: O2 would also
    need `paddle.amp.decorate` of the model and the optimizer (bfloat16 weights with float32 master
    copies); O1 keeps the weights, the check's weight handling and Adam as they are, and is the level
    that matches torch.autocast. Paddle's O1 lists decide what stays float32 (its black list: softmax,
    cross-entropy, the losses, layer_norm, group_norm, the reductions, ...); ops on neither list run in
    their inputs' type. The losses run in the dynamic graph, outside the converted forward, on its float32
    output: the cross-entropy, the MSE and the BCE are on Paddle's black list, so O1 would keep them in
    float32 there too.

    The notebook's forward takes the switch as an argument, `net(x, amp.on)`, and opens
    `with amp.scope(on):` (a nullcontext while off, so a float32 program is the one it always was):
    to_static keys its program cache on a Python argument's value, so the float32 check pass and
    training each build their own static program, and training's is the one the AMP check ran.
    Where it is not offered: the comment above."""
    from frameval.frameworks.contract import NotOffered
    from frameval.nb.amp import Amp

    if precision not in ("bf16",):
        if Amp(precision).precision:  # a mixed format this port does not set (fp16): never float32 under its name
            raise NotOffered(f"precision={precision}: frameval's Paddle port sets bfloat16 only (paddle.amp.auto_cast "
                             "dtype='bfloat16'); frameworks/paddle/__init__.py does not declare it")
        amp = Amp(precision)
        amp.scope = lambda on=False: contextlib.nullcontext()
        return rec.set_amp(amp)
    import paddle

    if api == "high":
        raise NotOffered(_high_api_refusal())
    dtype, value, said = _amp_probe(mode)
    if dtype != "bfloat16" or value != 4.0:
        where = ("inside paddle.jit.to_static" if mode == "graph" else "in the dynamic graph (mode='eager')")
        raise NotOffered(f"paddle.amp.auto_cast(dtype='bfloat16', level='{AMP_LEVEL}') {where} on {paddle.get_device()}, "
                         f"Paddle {paddle.__version__}: paddle.matmul under it gave {dtype} ({value:.6g} from operands 1 + 2^-10: 4 in bfloat16, "
                         f"4.0078 in float32); Paddle said: "
                         + ("; ".join(said) or "nothing") + (" (paddle/amp/auto_cast.py: the dynamic graph's AMP is enabled on "
                         "CUDAPlace, XPUPlace and CustomPlace only; mode='graph' converts the forward, where it computes "
                         "in bfloat16; defects/paddle/amp-bf16-cpu-dygraph.py)" if mode != "graph" else ""))
    failed = {layer: _layer_probe(layer) for layer in needs}  # each tried: the reason names every one that fails
    failed = {layer: why for layer, why in failed.items() if why}
    if failed:
        raise NotOffered(f"paddle.amp.auto_cast(dtype='bfloat16', level='{AMP_LEVEL}') inside paddle.jit.to_static on "
                         f"{paddle.get_device()}, Paddle {paddle.__version__}: "
                         + "; and ".join(NEEDS[layer].format(failed=why) for layer, why in failed.items()))
    white, black = _amp_lists()
    amp = Amp(precision, f"paddle.amp.auto_cast(dtype='bfloat16', level='{AMP_LEVEL}') inside paddle.jit.to_static's "
                         f"converted forward, weights and Adam in float32; bfloat16: its white list ({', '.join(white)}), "
                         "float32: its black list, any other op in its inputs' type", AMP_LEVEL, black,
              "the switch enters the converted forward as an argument (net(x, amp.on)): to_static keys its program "
              "cache on it, so the float32 pass and training each have their own static program")
    amp.scope = lambda on=False: (paddle.amp.auto_cast(enable=True, dtype="bfloat16", level=AMP_LEVEL) if on
                                  else contextlib.nullcontext())
    return rec.set_amp(amp)


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


# ------------------------------------------------------------------ serving (#70)
SERVED = "model"  # the path prefix inside export's folder: model.json (the PIR program), model.pdiparams (the weights)


def export(rec, model, example, path):
    """paddle.jit.save of the layer in inference mode with an InputSpec whose batch dimension is
    None: Paddle's inference model (its static program as PIR JSON, model.json, and the weights,
    model.pdiparams), the form Paddle's deployment tools take (paddle.jit.load, and the same files
    in the Paddle Inference predictor, C++ or Python). The forward's other arguments (amp_on) keep
    their defaults: float32. `model`: the nn.Layer (converted by to_static in graph mode, or not:
    jit.save converts it here with the spec)."""
    import paddle

    spec = paddle.static.InputSpec([None, *example.shape[1:]], str(example.dtype), "x")
    training = model.training
    model.eval()
    try:
        paddle.jit.save(model, os.path.join(str(path), SERVED), input_spec=[spec])
    finally:
        if training:  # Paddle's Layer.train() takes no flag
            model.train()
    _check_saved(model, str(path))
    return (f"paddle.jit.save inference model (model.json PIR program + model.pdiparams), InputSpec "
            f"[None, {', '.join(map(str, example.shape[1:]))}] {example.dtype}: Paddle's deployment form, "
            "loaded here with paddle.jit.load (the Paddle Inference predictor reads the same files)")


def _check_saved(model, path):
    """paddle.jit.save on a full disk returns without an error, its files cut short (Paddle 3.3.1:
    a 16 KiB tmpfs kept 12 KiB of an 800 KiB model.pdiparams): the program must parse as JSON and
    the weights file hold at least every parameter's bytes (BatchNorm's statistics are parameters
    too; each tensor adds a header), else the save raises here, as a short write."""
    import errno
    import json
    import math

    with open(os.path.join(path, SERVED + ".json"), encoding="utf-8") as f:
        json.load(f)  # a truncated program raises (JSONDecodeError)
    unique = {id(p): p for p in model.parameters()}.values()
    need = sum(math.prod(p.shape) * p.element_size() for p in unique)
    got = os.path.getsize(os.path.join(path, SERVED + ".pdiparams"))
    if got < need:
        st = os.statvfs(path)
        full = st.f_bavail * st.f_frsize < need - got  # the rest would not fit: the disk is full
        code = errno.ENOSPC if full else errno.EIO
        raise OSError(code, f"{os.strerror(code)} (paddle.jit.save returned without an error, but wrote {got} "
                            f"bytes of {SERVED}.pdiparams for {need} bytes of parameters)")


def load(path, device):
    """The inference model loaded with paddle.jit.load (a TranslatedLayer running the saved program),
    in eval mode, without gradients; .numpy() waits for the device."""
    import paddle

    paddle.set_device("gpu:0" if device == "gpu" else "cpu")
    layer = paddle.jit.load(os.path.join(str(path), SERVED))
    layer.eval()

    def predict(x):
        with paddle.no_grad():
            return layer(paddle.to_tensor(x)).numpy()
    return predict


# ------------------------------------------------------------------ checkpoint and resume (#70)
def checkpoint(rec, path, *state):
    """paddle.save of each object's state_dict (the layer's .pdparams, the optimizer's .pdopt:
    Adam's moments and beta powers), Paddle's own checkpoint for resuming, with the
    generator's state (paddle.get_rng_state)."""
    import paddle

    for i, s in enumerate(state):
        paddle.save(s.state_dict(), os.path.join(path, f"{i}.{'pdopt' if _is_opt(s) else 'pdparams'}"))
    paddle.save(paddle.get_rng_state(), os.path.join(path, "rng.pdstate"))
    return "paddle.save of the layer's state_dict (.pdparams) and the optimizer's (.pdopt: Adam's moments " \
           "and beta powers), paddle.get_rng_state"


def _is_opt(obj) -> bool:
    import paddle
    return isinstance(obj, paddle.optimizer.Optimizer)


def restore(rec, path, *state):
    """set_state_dict of each: values written into the existing parameters and accumulators."""
    import paddle

    for i, s in enumerate(state):
        s.set_state_dict(paddle.load(os.path.join(path, f"{i}.{'pdopt' if _is_opt(s) else 'pdparams'}")))
    paddle.set_rng_state(paddle.load(os.path.join(path, "rng.pdstate")))
    return state

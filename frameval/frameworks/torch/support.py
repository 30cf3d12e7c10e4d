"""PyTorch helpers shared by notebooks/torch/{lenet,dcgan,lstm}.ipynb.

    rec = nb.Recorder(...)                         # thread env vars first
    from frameval.frameworks.torch import support as fw
    dev = fw.setup(rec, mode, device, seed)        # threads (read back), compile settings, device hooks

- `setup`: threads set and read back, inductor and dynamo settings for graph
  mode, the device and the recorder's GPU hooks.
- `grad_step`: gradients with `torch.autograd.grad` assigned to `.grad`, the
  form of the backward that dynamo traces into the step's graph.
- `StepGraphs`: counts the graphs and breaks of the training step only.
- `read_adam`, `reset_adam`, `load_weights`: read the optimizer's settings back;
  put the shared initial weights and a fresh optimizer state back in place
  after the check, keeping the compiled step valid.

See docs/frameworks/torch.md.
"""
import os

import torch
import torch._dynamo
import torch._inductor.config

from frameval.frameworks.torch import isa_probe
from frameval.nb.weights import has_convolutions

# torch.optim graph-breaks on purpose before and after every step() (see the
# note in torch/optim/optimizer.py and pytorch#104053): the update compiles as
# a graph of its own. Breaks with this text are counted, but explained as such.
OPTIMIZER_BREAK = "torch._dynamo.graph_break()"


def setup(rec, mode, device, seed):
    """Threads, graph-mode settings, device; -> torch.device."""
    torch.set_num_threads(rec.threads)
    missing = []
    try:
        torch.set_num_interop_threads(rec.threads)
    except RuntimeError as e:  # only allowed before any inter-op work started
        missing.append(f"set_num_interop_threads: {e}")
    rec.set_threads_effective(torch.get_num_threads(), torch.get_num_interop_threads(),
                              "torch.get_num_threads / get_num_interop_threads", missing)
    if mode == "graph" and has_convolutions(rec.workload):
        # inductor's layout optimisation breaks the convolutions' backward on both devices:
        # torch 2.13 on the CPU computes wrong gradients at some batch sizes (zero for
        # LeNet's convs at batch 16, ~1e-3 off for the DCGAN generator; the check found it),
        # and torch 2.11 on an H100 stops the DCGAN's first step with an AssertionError on
        # convolution_backward's strides (docs/gpu.md: tried there without it on 2026-11-27).
        # A model without convolutions (the LSTM, the GPT) keeps inductor's defaults.
        torch._inductor.config.layout_optimization = False
        rec.note("torch.compile: inductor layout_optimization off (wrong conv gradients on the CPU in torch 2.13, "
                 "a stride assertion in convolution_backward on the GPU in torch 2.11)")
        rec.workaround("inductor-layout-opt-conv-grad")
    if mode == "graph":
        # Lets dynamo trace torch.autograd.grad, so the backward is in the step's graph.
        torch._dynamo.config.trace_autograd_ops = True
        rec.workaround("dynamo-backward-in-step")
    torch.manual_seed(seed)  # dropout masks
    if device == "gpu" and not torch.cuda.is_available():
        raise RuntimeError("device='gpu' but torch.cuda.is_available() is False in this environment")
    dev = torch.device("cuda:0" if device == "gpu" else "cpu")
    cuda = dev.type == "cuda"
    rec.after_import(torch.__version__,
                     sync=torch.cuda.synchronize if cuda else None,
                     reset_device_peak=torch.cuda.reset_peak_memory_stats if cuda else None,
                     device_peak_mb=(lambda: torch.cuda.max_memory_allocated() / 1e6) if cuda else None,
                     gpu_name=torch.cuda.get_device_name(0) if cuda else None,
                     gpu_runtime={"cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version()} if cuda else None)
    if mode == "graph":  # after the import's clock, before any compile
        # inductor's vector-ISA probe, built with the environment: a machine's once, not this model's compile
        planted = isa_probe.plant(os.environ.get("TORCHINDUCTOR_CACHE_DIR"))
        if planted:
            rec.note(f"torch.compile: inductor's vector-ISA probe ({len(planted)} file(s)) was built with the "
                     "environment, as on a machine where inductor has run before; this run's graphs compile cold")
    print(f"torch {torch.__version__} on {dev}, {torch.get_num_threads()} threads, mode={mode}")
    return dev


def autocast(rec, precision, dev=None):
    """-p precision=bf16: torch.autocast around the forward and the loss (the notebooks'
    `with amp.scope():`), weights and Adam in float32. torch's own lists decide what
    stays float32 (its autocast runs softmax, log_softmax, cross-entropy, MSE and the
    normalisations in float32). Off (`amp.on` False) the scope is a disabled autocast:
    dynamo guards on the flag, so the float32 check and training each compile their
    own graph, and training's is the one the AMP check ran."""
    from frameval.nb.amp import Amp
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    amp = Amp(precision, "torch.autocast", "", ("cross_entropy", "log_softmax", "softmax", "mse_loss", "layer_norm",
                                                 "batch_norm") if dtype else ())
    kind = "cuda" if dev is not None and dev.type == "cuda" else "cpu"
    amp.scope = lambda: torch.autocast(kind, dtype=dtype or torch.bfloat16, enabled=bool(amp.on and dtype))
    return rec.set_amp(amp)


def placement(dev):
    """Where the data set lives once the data cell moved it."""
    return "host, shares numpy's buffer (torch.from_numpy)" if dev.type == "cpu" else f"device copy ({dev})"


def grad_step(loss, params):
    """d loss / d params into each param's .grad (what opt.step() reads)."""
    for p, g in zip(params, torch.autograd.grad(loss, params)):
        p.grad = g


def compile_step(step, mode):
    return torch.compile(step) if mode == "graph" else step


def compile_eval(fn, mode):
    """The evaluation forward (LeNet's, the LSTM's prediction), compiled in graph
    mode with its batch dimension dynamic from the first call. The check calls
    it at the training batch size, evaluation at 1,000 (LeNet) or 256 (the
    LSTM): compiled for the check's static shape alone, the first evaluation
    recompiled it with a dynamic batch (dynamo's automatic dynamic shapes)
    inside epoch 1's first evaluation point: 3.9 s for LeNet, 12 s for the
    LSTM's 20 unrolled steps on 2 cores. Marked dynamic up front, the one
    compile is the check's (the LSTM's about 2 s longer). Its prediction is as
    fast: 5.6 ms against 6.0 ms for the 566 validation windows, idle, median of
    20 (an earlier reading of "slower" was taken on a busy machine, while the
    LSTM's windows still had a stride-0 axis that recompiled anyway; they have
    standard strides now). The training step is not touched: its compile
    stays cold in every run."""
    if mode != "graph":
        return fn
    compiled = torch.compile(fn)

    def forward(x):
        torch._dynamo.maybe_mark_dynamic(x, 0)
        return compiled(x)
    return forward


class Dropout(torch.nn.Module):
    """Inverted dropout whose rate is a tensor (a non-persistent buffer). The
    check turns dropout off (rate 0: every uniform draw is >= 0, an exact
    identity) in the very compiled step training uses. nn.Dropout's rate is a
    Python float that dynamo guards on, so changing it recompiled the whole DCGAN
    step at the start of training (18 s of the first epoch on 2 cores)."""

    def __init__(self, p):
        super().__init__()
        self.register_buffer("rate", torch.tensor(float(p)), persistent=False)

    def forward(self, x):
        if not self.training:
            return x
        keep = (torch.rand_like(x) >= self.rate).to(x.dtype)
        return x * keep / (1.0 - self.rate)

    @torch.no_grad()
    def set_rate(self, p):
        self.rate.fill_(float(p))  # in place: the compiled graph reads this tensor

    @property
    def p(self):
        return float(self.rate)


class StepGraphs:
    """Dynamo's graph and break counts between start() and stop(): the check
    cell brackets the training step's first calls with it, so evaluation and
    prediction graphs are not counted."""

    def start(self):
        c = torch._dynamo.utils.counters
        self.g0 = c["stats"]["unique_graphs"]
        self.b0 = dict(c["graph_break"])
        return self

    def stop(self):
        c = torch._dynamo.utils.counters
        self.graphs = c["stats"]["unique_graphs"] - self.g0
        self.breaks = {k: v - self.b0.get(k, 0) for k, v in c["graph_break"].items() if v - self.b0.get(k, 0)}
        return self

    def record(self, rec, mode, how, why=""):
        """rec.set_graph_scope from what dynamo captured. forward/backward/update
        are in compiled code when the step compiled with no break other than the
        optimizer's own (the update then runs as its own graph)."""
        if mode != "graph":
            rec.set_graph_scope(False, False, False)
            return
        other = {k: v for k, v in self.breaks.items() if OPTIMIZER_BREAK not in k}
        n_breaks = sum(self.breaks.values())
        opt_breaks = n_breaks - sum(other.values())
        reasons = [why] if why else []
        if opt_breaks:
            reasons.append(f"{opt_breaks} break(s) are torch.optim's own around step(): the Adam update is a graph "
                           "of its own")
        reasons += [k.splitlines()[0][:160] for k in other]
        # Any other break leaves part of the step eager. Seen in the DCGAN: after
        # opt_d.step()'s own break, the generator's autograd.grad reaches into the
        # previous graph ("external grad_fn") and runs eagerly; the forward passes
        # and both updates are still compiled, the backward only in part.
        captured = self.graphs > 0
        rec.set_graph_scope(captured, captured and not other, captured and bool(opt_breaks),
                            graphs=self.graphs, graph_breaks=n_breaks, how=how, why="; ".join(reasons))


def record_scope(rec, mode, step, how="", why=""):
    """What graph mode compiled, from `step`: the StepGraphs that bracketed the training
    step's first calls (frameval/frameworks/contract.py)."""
    step.record(rec, mode, how, why)


def read_adam(rec, *opts):
    """Adam's lr, betas and eps as the optimizer objects hold them."""
    g = opts[0].param_groups[0]
    rec.settings_read(optimizer=type(opts[0]).__name__, lr=g["lr"], betas=list(g["betas"]), adam_eps=g["eps"])


@torch.no_grad()
def reset_adam(*opts):
    """A fresh Adam state, in place: the compiled update keeps its tensors."""
    for opt in opts:
        for state in opt.state.values():
            for v in state.values():
                if torch.is_tensor(v):
                    v.zero_()


@torch.no_grad()
def load_weights(module, weights, dev):
    """Copy canonical weights (numpy) into the module's tensors in place."""
    own = module.state_dict()
    for k, v in weights.items():
        own[k].copy_(torch.from_numpy(v).to(dev))
    for m in module.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.num_batches_tracked is not None:
            m.num_batches_tracked.zero_()


def export(rec, model, example, path):
    """torch.export's ExportedProgram in a .pt2 archive (torch.export.save): PyTorch's
    recommended form for deployment since TorchScript went into maintenance; the graph of
    aten operators with the weights, a dynamic batch dimension (any size from 1)."""
    import io
    import warnings

    from torch.export import Dim
    dev = next(model.parameters()).device
    x = torch.from_numpy(example).to(dev)
    with torch.no_grad(), warnings.catch_warnings():
        # nn.LSTM reassigns its _flat_weights during the trace: a warning, not a fault
        warnings.simplefilter("ignore", UserWarning)
        program = torch.export.export(model, (x,), dynamic_shapes=({0: Dim("batch", min=1)},))
    # Through memory, then one Python write: torch's archive writer aborts the whole process
    # (SIGABRT) when the disk fills under it, which would lose the run; Python raises OSError.
    buffer = io.BytesIO()
    torch.export.save(program, buffer)
    with open(os.path.join(path, "model.pt2"), "wb") as f:
        f.write(buffer.getbuffer())
    return "torch.export ExportedProgram (.pt2, torch.export.save), dynamic batch"


def load(path, device):
    """The .pt2 archive loaded with torch.export.load; its module run under no_grad."""
    dev = torch.device("cuda" if device == "gpu" else "cpu")
    module = torch.export.load(os.path.join(path, "model.pt2")).module().to(dev)

    def predict(x):
        with torch.no_grad():
            return module(torch.from_numpy(x).to(dev)).cpu().numpy()
    return predict


# ------------------------------------------------------------------ checkpoint and resume (#70)
CHECKPOINT = "checkpoint.pt"


def checkpoint(rec, path, *state):
    """torch.save of every object's state_dict (the module's tensors; the optimizer's
    moments and step count) with the CPU generator's state (torch.get_rng_state), the
    checkpoint PyTorch's own tutorials describe for resuming a training."""
    blob = {"state": [s.state_dict() for s in state], "rng": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        blob["cuda_rng"] = torch.cuda.get_rng_state_all()
    torch.save(blob, os.path.join(path, CHECKPOINT))
    return ("torch.save of the module's and the optimizer's state_dict (Adam's moments and step), "
            "torch.get_rng_state" + (" and the CUDA generators'" if "cuda_rng" in blob else ""))


@torch.no_grad()
def restore(rec, path, *state):
    """The state_dicts loaded back: the module's copied into its tensors in place (the
    compiled step keeps them), the optimizer's with load_state_dict; the generators' state."""
    blob = torch.load(os.path.join(path, CHECKPOINT), map_location="cpu", weights_only=True)
    for obj, saved in zip(state, blob["state"]):
        obj.load_state_dict(saved)
    torch.set_rng_state(blob["rng"])
    if "cuda_rng" in blob:
        torch.cuda.set_rng_state_all(blob["cuda_rng"])
    return state

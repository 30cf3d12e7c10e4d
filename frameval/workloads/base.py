"""What a workload is: one record that every module asks instead of comparing
the workload's name (issue #36). A workload folder (lenet/, dcgan/, lstm/)
builds one `Workload` in its `__init__.py` and the registry
(`frameval.workloads`) finds it.

Standard library only, like `frameval.catalog`: the runner reads the records
before its own environment exists, and the notebook kernels read them in every
framework environment (numpy < 1.24, Python 3.10). The hooks that compute with
arrays therefore receive their tools (`Kit`: numpy, the shared layer maths, the
data loaders) from the caller, `frameval.nb.check`, or load their own folder's
reference.py and data.py inside the hook, never at module level.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

# The parameters every notebook of a workload declares, in every framework
# (ilkarman-style shared params). A test checks each notebook's parameters cell.
COMMON_PARAMS = ("mode", "device", "precision", "epochs", "batch_size", "lr", "seed", "threads", "max_train_samples",
                 "serve", "serve_calls", "out_dir")
# -p resume_check (#70): the workloads whose notebooks checkpoint and resume declare these too
# (frameval/nb/resume.py); resume_from is the runner's, for the second kernel it starts.
RESUME_PARAMS = ("resume_check", "resume_from")
# Every workload's profile settings beside its own. The quick profile leaves serving out (#70): saving
# for deployment, a fresh process's import and load and 25 timed calls a batch size added 114 s to the
# default report's 389 s (2026-12-02, 2-core AMD EPYC with AVX-512: 000b672 against e0e3ee2 in one
# sitting), beyond its 1.25x; --serve adds it (100 calls: a p99), the scope box says so.
COMMON_PROFILES = {"quick": {"serve": False}, "full": {}}

@dataclass(frozen=True)
class Quality:
    """A workload's quality figure: where a result holds it, how the report
    names it (an i18n key), and which direction is better (False: lower,
    e.g. the DCGAN's distance to real digits; None: neither, a figure that
    is no score, e.g. a GAN's generator loss)."""
    key: str
    label: str
    axis: str
    higher_is_better: bool | None
    per_epoch: bool  # True: read the last epoch that has it (top-level value first)
    # How the report writes it and a difference of two (report/called.py): "percent"
    # (a share, differences in points), "fixed1", "fixed4" (decimals), or "sig".
    format: str = "sig"


@dataclass(frozen=True)
class SeedSpread:
    """How far one framework's quality moves with the seed on a data set,
    measured on the development machine (docs/workloads.md): the standard
    deviation over `seeds` seeds within each framework, pooled over
    `frameworks` frameworks, at `epochs` epochs. A one-seed report widens its
    quality statements by it (issue #38)."""
    sd: float
    seeds: int
    frameworks: int
    epochs: int
    measured: str  # when and where, for the report's sentence


@dataclass(frozen=True)
class Network:
    """One network's canonical weight table: [(name, shape, kind)], kind
    "dense", "conv", "deconv" (Glorot), "zeros", "ones", or "stat0"/"stat1"
    (BatchNorm running statistics, not trainable). `stream`: its own random
    stream, so that adding a network never changes another's weights."""
    name: str
    stream: int
    table: tuple
    aliases: tuple = ()  # how notebooks may spell its key in result["param_counts"]
    # Where the network's initialisation is not the table's kinds (Glorot,
    # zeros, ones): (seed) -> {name: float64 array}, e.g. the GPT's normal(0, 0.02)
    init: Callable = None


# ------------------------------------------------------------------ FLOPs
@dataclass(frozen=True)
class Layer:
    name: str
    macs: int  # multiply-adds of one forward pass on one sample
    on_input: bool = False  # reads the network's input (data, noise, h0, a fake), not another layer's output
    # A product of two activations (attention's Q K^T, its weighted sum of V):
    # no weights, and both operands want their gradient (each costs the forward again)
    operands: int = 1       # operands other than weights that want an input gradient
    weighted: bool = True   # one operand is a weight (its gradient costs the forward again)


@dataclass(frozen=True)
class Pass:
    """One forward and backward pass of a network in a training step, `times`
    per training sample; `weights`: the step wants its weights' gradients;
    `input_grad`: it wants the gradient of the network's input."""
    name: str
    layers: tuple
    times: int = 1
    weights: bool = True
    input_grad: bool = False


# ------------------------------------------------------------------ layer timing
@dataclass(frozen=True)
class Op:
    """One layer as the training step runs it, for the layer timing
    (frameval/layers.py; each framework builds it in frameworks/<fw>/layers.py).

    Unlike `Layer` (FLOPs: products only) every layer is here, the uncounted
    ones too (BatchNorm, pooling, activations, dropout, the loss), so a slow
    BatchNorm is not read as dispatch time. `shape`: one sample's input, channels
    first; `args`: the kind's settings as (name, value) pairs; `uses`: what one
    step asks of the layer, ((times, input_grad, weight_grad), ...), each use
    one forward and the backward it needs (none where both are False);
    `macs`: one forward's multiply-adds per sample (0: not counted)."""
    name: str
    kind: str
    shape: tuple
    args: tuple = ()
    uses: tuple = ((1, True, True),)
    macs: int = 0

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "shape": list(self.shape), "args": dict(self.args),
                "uses": [list(u) for u in self.uses], "macs": self.macs}


# The kinds a framework's layers.py builds (docs/layers.md says what each is).
OP_KINDS = ("conv2d", "tconv2d", "dense", "relu", "leaky_relu", "tanh", "gelu", "maxpool2d", "batchnorm2d",
            "dropout", "recurrent", "embedding", "layernorm", "attention", "softmax_ce", "bce_logits", "mse")


def conv(h_out: int, w_out: int, c_in: int, c_out: int, k: int) -> int:
    """Multiply-adds of a k x k convolution producing an h_out x w_out x c_out map."""
    return h_out * w_out * c_out * c_in * k * k


def tconv(h_in: int, w_in: int, c_in: int, c_out: int, k: int) -> int:
    """Multiply-adds of a k x k transposed convolution: each input pixel of each
    input channel scatters a k x k x c_out patch (whatever the stride and crop)."""
    return h_in * w_in * c_in * c_out * k * k


def dense(n_in: int, n_out: int) -> int:
    return n_in * n_out


# ------------------------------------------------------------------ report
@dataclass(frozen=True)
class Figure:
    """A figure a workload's table shows after its quality figure: i18n label,
    result key, how it is written (a name in report.tables.FORMATS), higher is
    better (True, False, or None for neither)."""
    label: str
    key: str
    format: str
    higher_is_better: bool | None
    # derived from the result dict where the figure is not recorded as such (the
    # LSTM's skill over persistence, from its two R²): (result dict) -> value or None
    derive: Callable = None


@dataclass(frozen=True)
class Kit:
    """What the array hooks compute with, handed in by the check: numpy, the
    shared float64 layer maths (`frameval.nb.reference`), the MNIST data module
    and the shared initial weights (`frameval.nb.weights.init_weights`)."""
    np: object
    R: object
    data: object
    init: Callable


def _no_finding(*args, **kwargs):
    return None


@dataclass(frozen=True)
class Workload:
    key: str
    display: str             # how the FLOP table writes it
    params: tuple            # the parameters every notebook of the workload declares
    param_counts: dict       # trainable parameters per network, from docs/workloads.md
    quality: Quality
    # ---- data: the cache file whose checksum the run key holds, and the
    # training samples an epoch visits (constraints.py), from the run's parameters
    data_name: Callable       # (params) -> "mnist-embedded", "series-co2", ...
    train_samples: Callable   # (params) -> int
    data_problem: Callable    # (params) -> "" or what cannot train (before the batch check)
    too_few: Callable         # (params, n_train) -> what leaves fewer samples than a batch
    # ---- the check (frameval.nb.check) and its reference
    default_lr: float
    forward_outputs: tuple
    losses: tuple
    networks: tuple           # (Network, ...)
    sample: Callable          # (kit, seed, size) -> x, y, source
    batch: Callable           # (kit, x, y, seed, k) -> one check batch dict
    initial: Callable         # (kit, seed, **check_options) -> float64 initial weights
    forward: Callable         # (kit, w0, batch) -> {output: array}
    train: Callable           # (kit, w0, batches, lr, kink=None) -> {"losses", "grads", "grad_min", "weights"}
    expected: Callable        # (w0) -> ([trainable names], [running statistics names])
    flat: Callable = lambda w0: w0   # nested weights -> {canonical name: array}
    kink_sensitive: bool = False     # LeakyReLU: the check computes a float32 kink budget
    kink_fraction: float = 0.0       # how near the kink counts as float32's choice (0: check.KINK_FRACTION)
    # the workload's own Checker options and their defaults (the LSTM's {"lstm_biases": 1}:
    # one bias vector or two); the check passes them to `initial` and records them by name
    check_options: dict = field(default_factory=dict)
    tolerances: dict = field(default_factory=dict)  # the check's, where this workload needs others
    # the mixed-precision pass's bound (frameval/nb/amp.py): the product layers along the longest path
    # from the input to the loss (0: the layers of its passes, once each), and the longest reduction
    # one sample's forward makes (0: 1)
    amp_depth: int = 0
    amp_reduction: int = 0
    # ---- its data beyond the shared MNIST: the runner's preparation of its caches,
    # (cache_dir) -> {name: path} (frameval/data.py), and the names of its folder's
    # modules that notebooks reach as `nb.<name>` (frameval/nb/__init__.py): {name: module}
    prepare_data: Callable = None
    nb_names: dict = field(default_factory=dict)
    # ---- its own parameters' rules (frameval/plan.py), beside the common ones:
    # {name: (lowest, "what it must be")} and {name: (the values it may take, ...)}
    param_rules: dict = field(default_factory=dict)
    param_values: dict = field(default_factory=dict)
    # ---- FLOPs (frameval.flops)
    passes: Callable = None   # (params) -> (Pass, ...), per training sample
    # the spec's counts for a run's parameters where they move them (the LSTM's -p lstm.cell=gru): (params) -> dict
    counts_for: Callable = None
    # a parameter that swaps the network for another, its base value and the other: the report sets each run
    # of the other against its twin of the base (the LSTM's ("cell", "lstm", "gru"): report/recurrent.py)
    variant: tuple = ()
    # ---- layer timing (frameval.layers): every layer as the step runs it
    ops: Callable = None      # (params) -> (Op, ...)
    # ---- the report
    profiles: dict = field(default_factory=dict)   # profile -> notebook parameter overrides
    spec_settings: dict = field(default_factory=dict)
    # Settings a notebook records to say how its framework met the spec (the GPT's attention
    # kind and GELU call): each framework words them its own way, so the audit shows them and
    # never calls their difference a difference of arithmetic (the check covers that)
    described_settings: tuple = ()
    structural_counts: dict = field(default_factory=dict)  # (network, count) -> i18n reason
    curves: tuple = ()        # ((result key, i18n axis), ...) per epoch
    # True: the curves chart adds the quality figure at every evaluation point
    # (result.json's evaluation.points, at their fractional epoch): a metric that
    # moves within an epoch, e.g. the GPT's exact match, which jumps from 8% to 96%
    # in two epochs of the quick profile
    quality_curve: bool = False
    figures: tuple = ()       # (Figure, ...)
    # extra report parts beside the common charts: (wrows, S, charts, name, assets_dir,
    # problems, out) fills out["gifs"] / out["grids"] (images) or out["prediction"]
    media: Callable = None
    intro_extra: Callable = _no_finding   # (wrows, S) -> text after the intro, or None
    quality_finding: Callable = _no_finding  # (S, fmt, name, best, worst, show) or (S, fmt, name, vals)
    # the quality figure's naive baseline in words, after the quality finding (the LSTM's persistence):
    # (S, fmt, rows) -> text or None
    baseline_finding: Callable = _no_finding
    seed_spread: dict = field(default_factory=dict)  # data_name -> SeedSpread, where measured
    # ---- time to target (frameval/target.py): per data set (`data_name(params)`)
    # (metric, value, higher_is_better), or None where no target is set for it
    # yet; a data set absent here has none either (e.g. a GAN: no score)
    targets: dict = field(default_factory=dict)
    # what is said after the target wherever it is named, for the runs' results (the LSTM's: that it
    # lies below the persistence forecast's R²): (target, [result dict]) -> an i18n key, or ""
    target_note: Callable = None
    # evaluations of the quality metric an epoch during training (frameval/nb/evaluation.py)
    eval_per_epoch: int = 4
    # With no target for the run's data set, evaluate in every epoch ("every") or
    # in the last only ("last"): a costly metric whose curve serves no target is
    # drawn once, for the final figure (issue #50: the DCGAN's distance at quick sizes)
    eval_without_target: str = "every"
    # Its place in the default matrix and every table (lower first, then by key).
    order: int = 100
    # In the default matrix (the runner's `--workloads` left out); False: it runs
    # when named or with `--workloads all` (the GPT, issue #52)
    default: bool = True
    # The frameworks it has notebooks for, where not every one yet (the GPT: torch,
    # JAX and TensorFlow first); empty: every framework. The plan leaves the others out and says so.
    frameworks: tuple = ()

    def written_for(self, framework: str) -> bool:
        return not self.frameworks or framework in self.frameworks

    def final(self, result: dict):
        """The run's quality figure, or None."""
        return final_value(result, self.quality.key) if self.quality.per_epoch else result.get(self.quality.key)

    def target(self, params: dict):
        """(metric, value, higher_is_better) the run's quality must reach, or
        None: keyed by the data set, because the reachable quality depends on
        how much data trains (a target for full MNIST is out of reach of 4,000 digits)."""
        got = self.targets.get(self.data_name(params or {}))
        return tuple(got) if got else None

    def network(self, name: str) -> Network | None:
        return next((n for n in self.networks if n.name == name), None)


def final_value(result: dict, key: str):
    """A result's top-level `key`, else the last epoch that recorded it."""
    v = result.get(key) if isinstance(result, dict) else None
    if v is not None:
        return v
    epochs = result.get("epochs") if isinstance(result, dict) else None
    for e in reversed(epochs if isinstance(epochs, list) else []):
        if isinstance(e, dict) and key in e:
            return e.get(key)
    return None

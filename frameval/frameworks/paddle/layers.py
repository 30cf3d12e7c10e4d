"""PaddlePaddle's side of the layer timing (frameval/envscripts/layers.py): one
layer of a workload's step, built as the paddle notebooks build it (NCHW, the
same layer classes and functions), run forward and backward (`paddle.grad`,
the functional form of the notebooks' `loss.backward()`) for what one use of
it needs. Graph mode converts the layer's forward alone with
`paddle.jit.to_static(full_graph=True, backend=None)`, as the notebooks
convert their models' forwards: its backward is the static program's, and the
losses run in the dynamic graph, as in the notebooks' steps (the whole step
does not convert in Paddle 3.3.1: support.WHOLE_STEP_ERROR). Standard library +
the framework, loaded only in its own environment."""
from __future__ import annotations

import os
import warnings

import numpy as np

from . import support as fw

# As fw.prepare_env before the import: GLOG_v > 0 prints whole IR programs on stdout, where the JSON line goes
os.environ["GLOG_v"] = "0"
os.environ.setdefault("GLOG_minloglevel", "2")
warnings.filterwarnings("ignore", module=r"paddle(\.|$)")
with fw.drop_omp_warning():
    import paddle
    import paddle.nn as nn
    import paddle.nn.functional as F

HOW = {"graph": "paddle.jit.to_static(full_graph=True, backend=None) of the layer's forward, its backward the "
                "static program's (paddle.grad); the losses in the dynamic graph, as in the notebooks' steps",
       "eager": "dynamic graph"}
LOSSES = ("softmax_ce", "bce_logits", "mse")


def setup(threads: int, mode: str) -> str:
    # As fw.set_threads: the caller set OMP_NUM_THREADS before the import; Paddle has no inter-op setting
    paddle.base.core.set_num_threads(threads)
    paddle.set_device("cpu")
    return paddle.__version__


def substitutes(mode: str) -> dict:
    """None: the notebooks use Paddle's own layers throughout (Dropout, BatchNorm2D, Conv2DTranspose's
    output_padding, the LSTM in graph mode too)."""
    return {}


def _arg(op, name, default=None):
    return op["args"].get(name, default)


class _Fn(nn.Layer):
    """A layer without weights (activation, pooling) as a Layer, so that graph mode converts it like a model."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):  # to_static needs the first argument to be named `self`
        return self.fn(x)


class _LastHidden(nn.Layer):
    """The LSTM notebook's recurrence: nn.LSTM over the window (batch-major), its last hidden state."""

    def __init__(self, hidden):
        super().__init__()
        self.lstm = nn.LSTM(1, hidden)

    def forward(self, x):
        out, _ = self.lstm(x)
        return out[:, -1]


class _Embedding(nn.Layer):
    """The GPT notebook's token embedding plus the position table's first T rows."""

    def __init__(self, vocab, width, context):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, width), nn.Embedding(context, width)

    def forward(self, idx):
        return self.wte(idx) + self.wpe.weight[: idx.shape[1]]


class _Tied(nn.Layer):
    """The GPT notebook's output layer: a product with the token embedding's transpose, no Linear."""

    def __init__(self, width, vocab):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)

    def forward(self, x):
        return paddle.matmul(x, self.wte.weight, transpose_y=True)


class _Attention(nn.Layer):
    """The GPT block's attention core on q, k, v concatenated: split, (B, T, heads, head size) as Paddle's
    scaled_dot_product_attention wants, causal (on the CPU its math backend), back to (B, T, C)."""

    def __init__(self, heads, width):
        super().__init__()
        self.heads, self.width = heads, width

    def forward(self, x):
        q, k, v = (z.reshape([0, 0, self.heads, self.width // self.heads]) for z in paddle.split(x, 3, axis=-1))
        return F.scaled_dot_product_attention(q, k, v, is_causal=True).reshape([0, 0, self.width])


def _layer(op):
    """The layer as the notebooks build it (a Layer, its weights Paddle's default initialisation)."""
    k, shape = op["kind"], op["shape"]
    if k == "conv2d":
        return nn.Conv2D(shape[0], _arg(op, "out"), _arg(op, "k"), _arg(op, "stride", 1), _arg(op, "pad", 0),
                         bias_attr=None if _arg(op, "bias", True) else False)
    if k == "tconv2d":
        return nn.Conv2DTranspose(shape[0], _arg(op, "out"), _arg(op, "k"), _arg(op, "stride", 1),
                                  _arg(op, "pad", 0), output_padding=_arg(op, "output_pad", 0),
                                  bias_attr=None if _arg(op, "bias", False) else False)
    if k == "dense" and op["args"].get("tied"):  # the GPT's output, tied to the token embedding
        return _Tied(shape[-1], _arg(op, "out"))
    if k == "dense":
        return nn.Linear(shape[-1], _arg(op, "out"), bias_attr=None if _arg(op, "bias", True) else False)
    if k == "batchnorm2d":  # Paddle's momentum is the running value's weight, as the record's
        return nn.BatchNorm2D(shape[0], momentum=_arg(op, "momentum"), epsilon=_arg(op, "eps"))
    if k == "layernorm":
        return nn.LayerNorm(shape[-1], epsilon=_arg(op, "eps"))
    if k == "dropout":
        return nn.Dropout(_arg(op, "rate"))  # "upscale_in_train": inverted dropout
    if k == "recurrent":
        return _LastHidden(_arg(op, "hidden"))
    if k == "embedding":
        return _Embedding(_arg(op, "vocab"), _arg(op, "width"), _arg(op, "context"))
    if k == "attention":
        return _Attention(_arg(op, "heads", 1), shape[-1] // 3)
    simple = {"relu": F.relu, "tanh": paddle.tanh, "gelu": F.gelu,  # gelu: exact (erf) by default
              "leaky_relu": lambda x: F.leaky_relu(x, _arg(op, "slope")),
              "maxpool2d": lambda x: F.max_pool2d(x, _arg(op, "k"))}
    if k in simple:
        return _Fn(simple[k])
    raise NotImplementedError(f"no paddle layer for kind {k!r}")


def _inputs(op, batch):
    """The layer's input (and a loss's target), the same numbers every run."""
    rng = np.random.default_rng(0)
    shape = (batch, *op["shape"])
    k = op["kind"]
    if k == "embedding":
        return paddle.to_tensor(rng.integers(0, _arg(op, "vocab"), shape)), None
    x = paddle.to_tensor(rng.standard_normal(shape, dtype=np.float32))
    if k == "softmax_ce":
        return x, paddle.to_tensor(rng.integers(0, shape[-1], shape[:-1]))
    if k in ("bce_logits", "mse"):
        return x, paddle.to_tensor(rng.random(shape, dtype=np.float32))
    return x, None


def _loss(k, target):
    return {"softmax_ce": lambda x: F.cross_entropy(x.reshape([-1, x.shape[-1]]), target.reshape([-1])),
            "bce_logits": lambda x: F.binary_cross_entropy_with_logits(x, target),
            "mse": lambda x: F.mse_loss(x, target)}[k]


def build(op: dict, batch: int, input_grad: bool, weight_grad: bool, mode: str, builtin: bool = False):
    """run(): one forward of the layer at `batch`, and the backward the use needs. Paddle's CPU kernels run
    synchronously, in both modes: the gradients are computed when paddle.grad returns. `builtin` changes
    nothing: no layer is substituted (substitutes)."""
    paddle.seed(0)  # the default initialisers and dropout's masks
    k = op["kind"]
    x, target = _inputs(op, batch)
    weights = []
    if k in LOSSES:
        fwd = _loss(k, target)
    else:
        fwd = _layer(op)
        fwd.train()  # batch statistics, dropout on
        weights = [p for p in fwd.parameters() if not p.stop_gradient]  # not BatchNorm's statistics
        if mode == "graph":
            fwd = paddle.jit.to_static(fwd, full_graph=True, backend=None)
    ig = input_grad and x.dtype == paddle.float32
    wrt = ([x] if ig else []) + (weights if weight_grad else [])
    for w in weights:
        w.stop_gradient = not weight_grad
    x.stop_gradient = not ig
    if not wrt:
        def run():
            with paddle.no_grad():  # the first call too: a converted layer keeps the program it first built
                fwd(x)
        return run
    probe = fwd(x)  # gradients on at the first call (docs/frameworks/paddle.md, "to_static and no_grad")
    upstream = paddle.to_tensor(np.random.default_rng(1).standard_normal(probe.shape, dtype=np.float32))
    return lambda: paddle.grad(fwd(x), wrt, grad_outputs=upstream if probe.ndim else None)

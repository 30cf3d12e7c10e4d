"""MindSpore's side of the layer timing (frameval/envscripts/layers.py): one
layer of a workload's step, built as the MindSpore notebooks build it (NCHW,
their cells and ops), run forward and backward (`ms.grad` with the upstream
gradient as its sens) for what one use of it needs. Graph mode is the
notebooks' GRAPH_MODE: the layer's forward and backward are one `nn.Cell`,
compiled alone on its first call; eager is PYNATIVE_MODE, the same cell op by
op. Standard library + the framework, loaded only in its own environment."""
from __future__ import annotations

import math
import os

os.environ.setdefault("GLOG_v", "4")  # as the notebooks' setup cell, before the import: errors only
os.environ.setdefault("ONEDNN_MAX_CPU_ISA", "AVX2")  # the notebooks' workaround for oneDNN's reference conv

import numpy as np  # noqa: E402
import mindspore as ms  # noqa: E402
from mindspore import Tensor, nn, ops  # noqa: E402

from frameval.frameworks.mindspore import support as fw  # noqa: E402

HOW = {"graph": "GRAPH_MODE: an nn.Cell of the layer's forward and ms.grad (the upstream gradient as sens), "
                "compiled alone on its first call",
       "eager": "PYNATIVE_MODE"}


def setup(threads: int, mode: str) -> str:
    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    ms.set_device("CPU")
    ms.device_context.cpu.op_tuning.threads_num(threads)  # as fw.set_threads
    ms.set_seed(0)
    return ms.__version__


def substitutes(mode: str) -> dict:
    return {"dropout": "fw.Dropout (inverted dropout, its rate a Parameter: the check sets it to 0 in the same graph)",
            "tconv2d": "stride 2: pad_mode='valid' and a crop of 2 at the start, 1 at the end (pad_mode='pad', "
                       "output_padding=1 gives wrong numbers); stride 1 is the built-in itself",
            "attention": "written out (matmul, causal mask, softmax, matmul): the fused ops.flash_attention_score "
                         "runs on Ascend only"}


def _arg(op, name, default=None):
    return op["args"].get(name, default)


def substitute(op: dict, mode: str):
    """A stride-1 transposed convolution is the built-in itself; the other kinds are substituted wherever they are."""
    if op["kind"] == "tconv2d" and _arg(op, "stride", 1) != 2:
        return None
    return substitutes(mode).get(op["kind"])


class _Cropped(nn.Cell):
    """The DCGAN notebook's stride-2 transposed convolution: the full (valid) output, cropped."""

    def __init__(self, tconv, start, stop):
        super().__init__()
        self.tconv, self.start, self.stop = tconv, start, stop

    def construct(self, x):
        return self.tconv(x)[:, :, self.start:self.stop, self.start:self.stop]


class _Attention(nn.Cell):
    """The GPT notebook's Block attention core, on q, k, v concatenated: (b, t, 3C) -> (b, t, C)."""

    def __init__(self, heads, t, c):
        super().__init__()
        self.heads, self.c, self.d, self.scale = heads, c, c // heads, 1.0 / math.sqrt(c // heads)
        self.future = Tensor(np.triu(np.ones((t, t), np.bool_), 1))

    def split(self, z, b, t):
        return ops.transpose(z.reshape(b, t, self.heads, self.d), (0, 2, 1, 3))

    def construct(self, x):
        b, t, _ = x.shape
        q, k, v = ops.split(x, self.c, axis=2)
        q, k, v = self.split(q, b, t), self.split(k, b, t), self.split(v, b, t)
        s = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))) * self.scale
        p = ops.softmax(ops.masked_fill(s, self.future, -1e30), axis=-1)
        return ops.transpose(ops.matmul(p, v), (0, 2, 1, 3)).reshape(b, t, self.c)


class _FusedAttention(_Attention):
    """MindSpore's built-in attention, the one the notebook cannot use on a CPU."""

    def construct(self, x):
        q, k, v = ops.split(x, self.c, axis=2)
        return ops.flash_attention_score(q, k, v, self.heads, attn_mask=self.future, scalar_value=self.scale,
                                         input_layout="BSH")


def _normal(shape, name):
    """A Parameter as the GPT initialises its embeddings, normal(0, 0.02)."""
    return ms.Parameter(Tensor(np.random.RandomState(0).normal(0, 0.02, shape).astype(np.float32)), name=name)


class _Embedding(nn.Cell):
    """The GPT notebook's token and position embedding: two Parameters, a gather and a slice."""

    def __init__(self, vocab, context, width):
        super().__init__()
        self.wte, self.wpe = _normal((vocab, width), "wte"), _normal((context, width), "wpe")

    def construct(self, idx):
        return ops.gather(self.wte, idx, 0) + self.wpe[:idx.shape[1]]


class _Tied(nn.Cell):
    """The GPT notebook's output layer: a product with the token embedding's transpose, no bias."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.wte = _normal((n_out, n_in), "wte")

    def construct(self, x):
        return ops.matmul(x, ops.transpose(self.wte, (1, 0)))


class _Gelu(nn.Cell):
    def construct(self, x):
        return ops.gelu(x, approximate="none")  # the GPT notebook's exact GELU (nn.GELU's default is tanh's)


class _Loss(nn.Cell):
    """A loss on the input and a fixed target (a constant of the graph)."""

    def __init__(self, kind, target):
        super().__init__()
        self.kind, self.target = kind, target
        self.sparse_ce = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")  # LeNet's fused loss

    def construct(self, x):
        if self.kind == "softmax_ce" and x.ndim == 2:
            return self.sparse_ce(x, self.target)
        if self.kind == "softmax_ce":  # the GPT's, over every token
            return ops.cross_entropy(x.reshape(-1, x.shape[-1]), self.target.reshape(-1))
        if self.kind == "bce_logits":
            return ops.binary_cross_entropy_with_logits(x, self.target, reduction="mean")
        return ops.mse_loss(x, self.target)


class _Last(nn.Cell):
    """The LSTM notebook's Forecaster without its dense layer: nn.LSTM's last hidden state."""

    def __init__(self, n_in, hidden):
        super().__init__()
        self.lstm = nn.LSTM(n_in, hidden, num_layers=1, has_bias=True, batch_first=True)
        self.lstm.bias_hh_l0.requires_grad = False  # as the notebook: the spec's one bias is bias_ih_l0

    def construct(self, x):
        return self.lstm(x)[0][:, -1]


def _tconv(op, c, h, builtin):
    """The built-in where the DCGAN notebook uses it (stride 1), else its valid output cropped."""
    o, k, s, p = _arg(op, "out"), _arg(op, "k"), _arg(op, "stride", 1), _arg(op, "pad", 0)
    extra, bias = _arg(op, "output_pad", 0), _arg(op, "bias", False)
    if builtin or not extra:
        return nn.Conv2dTranspose(c, o, k, stride=s, pad_mode="pad", padding=p, output_padding=extra, has_bias=bias)
    full = nn.Conv2dTranspose(c, o, k, stride=s, pad_mode="valid", has_bias=bias)
    return _Cropped(full, p, (h - 1) * s + k - (p - extra))  # the valid output is (H - 1) s + k


def _layer(op, target, builtin):
    """The layer as an nn.Cell of its input."""
    k, shape = op["kind"], op["shape"]
    if k == "conv2d":
        pad = _arg(op, "pad", 0)
        return nn.Conv2d(shape[0], _arg(op, "out"), _arg(op, "k"), stride=_arg(op, "stride", 1),
                         pad_mode="pad" if pad else "valid", padding=pad, has_bias=_arg(op, "bias", True))
    if k == "tconv2d":
        return _tconv(op, shape[0], shape[1], builtin)
    if k == "dense" and len(shape) == 2 and not _arg(op, "bias", True):  # on tokens, no bias: the GPT's output
        return _Tied(shape[-1], _arg(op, "out"))
    if k == "dense":
        return nn.Dense(shape[-1], _arg(op, "out"), has_bias=_arg(op, "bias", True))
    if k == "batchnorm2d":  # MindSpore's momentum is the running value's weight, as the spec's
        return nn.BatchNorm2d(shape[0], eps=_arg(op, "eps"), momentum=_arg(op, "momentum"))
    if k == "layernorm":
        return nn.LayerNorm((shape[-1],), epsilon=_arg(op, "eps"))
    if k == "dropout":
        return nn.Dropout(p=_arg(op, "rate")) if builtin else fw.Dropout(_arg(op, "rate"))
    if k == "recurrent":
        return _Last(shape[-1], _arg(op, "hidden"))
    if k == "embedding":
        return _Embedding(_arg(op, "vocab"), _arg(op, "context"), _arg(op, "width"))
    if k == "attention":
        return (_FusedAttention if builtin else _Attention)(_arg(op, "heads", 1), shape[0], shape[1] // 3)
    simple = {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": _Gelu, "leaky_relu": lambda: nn.LeakyReLU(_arg(op, "slope")),
              "maxpool2d": lambda: nn.MaxPool2d(kernel_size=_arg(op, "k"), stride=_arg(op, "k"))}
    if k in simple:
        return simple[k]()
    if k in ("softmax_ce", "bce_logits", "mse"):
        return _Loss(k, target)
    raise NotImplementedError(f"no MindSpore layer for kind {k!r}")


def _inputs(op, batch):
    """The layer's input (and a loss's target), the same numbers every run."""
    rng = np.random.RandomState(0)
    shape = (batch, *op["shape"])
    k = op["kind"]
    if k == "embedding":  # int32 ids, as the GPT notebook hands them over
        return Tensor(rng.randint(0, _arg(op, "vocab"), shape).astype(np.int32)), None
    x = Tensor(rng.standard_normal(shape).astype(np.float32))
    if k == "softmax_ce":
        return x, Tensor(rng.randint(0, shape[-1], shape[:-1]).astype(np.int32))
    if k in ("bce_logits", "mse"):
        return x, Tensor(rng.uniform(size=shape).astype(np.float32))
    return x, None


class _Step(nn.Cell):
    """The layer's forward and the backward one use needs: what GRAPH_MODE compiles as one graph."""

    def __init__(self, layer, input_grad, weights):
        super().__init__(auto_prefix=False)
        self.layer = layer  # a sub-cell: its Parameters belong to the compiled graph
        self.grad = ms.grad(layer, 0 if input_grad else None, ms.ParameterTuple(weights) if weights else None,
                            sens_param=True)

    def construct(self, x, sens):
        return self.grad(x, sens)


def _done(out):
    """Wait for the results: PYNATIVE_MODE launches asynchronously, and asnumpy waits (without a copy
    on the CPU; ms.runtime.synchronize fails now and then on the CPU in 2.10, see gemm.py)."""
    for t in out if isinstance(out, (tuple, list)) else (out,):
        _done(t) if isinstance(t, (tuple, list)) else t.asnumpy()


def _plain(fn):
    """fn, its MindSpore errors raised with their message first: GRAPH_MODE opens them with rules of
    dashes and a heading, and the harness keeps the first line."""
    def call(*args):
        try:
            return fn(*args)
        except RuntimeError as e:
            lines = [ln.strip().lstrip("- ") for ln in str(e).splitlines()]
            raise RuntimeError(" ".join([ln for ln in lines if ln][:2])) from e
    return call


def build(op: dict, batch: int, input_grad: bool, weight_grad: bool, mode: str, builtin: bool = False):
    """run(): one forward of the layer at `batch`, and the backward the use needs."""
    ms.set_seed(0)
    x, target = _inputs(op, batch)
    layer = _layer(op, target, builtin)
    layer.set_train(True)  # BatchNorm on the batch's statistics, dropout on
    input_grad = input_grad and x.dtype == ms.float32
    weights = layer.trainable_params() if weight_grad else []
    fwd = _plain(layer)
    if not input_grad and not weights:
        return lambda: _done(fwd(x))
    probe = fwd(x)  # the output's shape, for a fixed upstream gradient
    up = np.random.RandomState(1).standard_normal(probe.shape) if probe.ndim else np.ones(())  # a loss: 1
    sens = Tensor(up.astype(np.float32))
    step = _plain(_Step(layer, input_grad, weights))
    return lambda: _done(step(x, sens))

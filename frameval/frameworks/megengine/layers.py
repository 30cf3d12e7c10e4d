"""MegEngine's side of the layer timing (frameval/envscripts/layers.py): one
layer of a workload's step, built as the megengine notebooks build it (their
layers, support.py's substitutes), run forward and backward
(`GradManager.backward`, the notebooks' form of the backward) for what one use
of it needs. Graph mode wraps that function alone in
`megengine.jit.trace(symbolic=True)`, as the notebooks wrap their steps.
MegEngine runs asynchronously on the CPU too: run() waits for its queue
(`megengine._full_sync`, the notebooks' sync). Loaded only in its own environment."""
from __future__ import annotations

import numpy as np
import megengine as mge
import megengine.autodiff as autodiff
import megengine.functional as F
import megengine.module as M
from megengine.jit import trace

from frameval.frameworks.megengine import support as fw

HOW = {"graph": "megengine.jit.trace(symbolic=True) of the layer's forward and GradManager.backward; attention "
                "eagerly (its fused op without projections takes an empty io_weight_bias, and the traced "
                "backward fails on it: 'empty output var after node execution')",
       "eager": "eager"}

LOSSES = ("softmax_ce", "bce_logits", "mse")


def setup(threads: int, mode: str) -> str:
    mge.set_default_device(f"multithread{threads}:0" if threads > 1 else "cpu0")  # as the notebooks
    return mge.__version__


def substitutes(mode: str) -> dict:
    return {"maxpool2d": "argmax + indexing_one_hot (F.max_pool2d's gradient goes to every tied maximum)",
            "batchnorm2d": "fw.BatchNorm2d in MegEngine ops (M.BatchNorm2d's fused backward is off at batch 64)",
            "dropout": "fw.Dropout (its rate a tensor: the trace would bake M.Dropout's float in)",
            "recurrent": "the recurrence in MegEngine ops (M.LSTM's weight gradients are wrong in 1.13)",
            "attention": "F.nn.multi_head_attention (projections off, one head per call) with fw.causal_mask as "
                         "attn_mask (is_causal=True fails on the CPU)"}


def _arg(op, name, default=None):
    return op["args"].get(name, default)


def _max_pool(k):
    """The LeNet notebook's max_pool2: the gradient to the first maximum of each window, as PyTorch."""
    def f(x):
        n, c, h, w = x.shape
        win = x.reshape(n, c, h // k, k, w // k, k).transpose(0, 1, 2, 4, 3, 5).reshape(n, c, h // k, w // k, k * k)
        return F.indexing_one_hot(win, F.argmax(win, axis=-1), axis=-1)
    return f


class _LSTM(M.Module):
    """The LSTM notebook's recurrence in MegEngine ops; returns the last hidden state."""

    def __init__(self, input_size, hidden, steps):
        super().__init__()
        self.steps = steps
        rng = np.random.RandomState(0)
        self.weight_ih = mge.Parameter(rng.uniform(-0.2, 0.2, (4 * hidden, input_size)).astype(np.float32))
        self.weight_hh = mge.Parameter(rng.uniform(-0.2, 0.2, (4 * hidden, hidden)).astype(np.float32))
        self.bias = mge.Parameter(np.zeros((4 * hidden,), np.float32))

    def forward(self, x):
        gx = F.matmul(x, self.weight_ih, transpose_b=True) + self.bias
        h = c = None  # h0 = c0 = 0
        for t in range(self.steps):
            g = gx[:, t] if h is None else gx[:, t] + F.matmul(h, self.weight_hh, transpose_b=True)
            i, f, cand, o = F.split(g, 4, axis=1)
            c = F.sigmoid(i) * F.tanh(cand) if c is None else F.sigmoid(f) * c + F.sigmoid(i) * F.tanh(cand)
            h = F.sigmoid(o) * F.tanh(c)
        return h


class _Embedding(M.Module):
    """The GPT notebook's token + position embedding (F.embedding and a slice of wpe)."""

    def __init__(self, vocab, width, context):
        super().__init__()
        rng = np.random.RandomState(0)
        self.wte = mge.Parameter((0.02 * rng.standard_normal((vocab, width))).astype(np.float32))
        self.wpe = mge.Parameter((0.02 * rng.standard_normal((context, width))).astype(np.float32))

    def forward(self, idx):
        return F.embedding(idx, self.wte) + self.wpe[:idx.shape[1]]


def _attention(heads, builtin):
    """The attention core in the GPT notebook's fused F.nn.multi_head_attention, its projections off (they
    are the dense layers here). Without projections the op does not split heads (each would see all C
    channels), so each head is a batch entry of a one-head call: its scale is then 1/sqrt(C / heads)."""
    def f(x):
        b, t, c3 = x.shape
        c = c3 // 3
        d = c // heads
        q, k, v = (z.reshape(b, t, heads, d).transpose(0, 2, 1, 3).reshape(b * heads, t, d)
                   for z in F.split(x, 3, axis=2))
        out = F.nn.multi_head_attention(q, k, v, d, 1, 0.0, 0.0, mge.tensor(np.zeros((0,), np.float32)),
                                        qproj_size=0, kproj_size=0, vproj_size=0, oproj_size=0,
                                        attn_mask=None if builtin else fw.causal_mask(t), is_causal=builtin)[0]
        return out.reshape(b, heads, t, d).transpose(0, 2, 1, 3).reshape(b, t, c)
    return f


class _Bound(M.Module):
    """A function as a Module, with the weights of `owner` (a built-in module it calls), if any."""

    def __init__(self, f, owner=None):
        super().__init__()
        self.f, self.owner = f, owner

    def forward(self, x):
        return self.f(x)


def _layer(op, builtin):
    """The layer as a callable of its input (a Module where it has weights)."""
    k, shape = op["kind"], op["shape"]
    if k == "conv2d":
        return M.Conv2d(shape[0], _arg(op, "out"), _arg(op, "k"), _arg(op, "stride", 1), _arg(op, "pad", 0),
                        bias=_arg(op, "bias", True))
    if k == "tconv2d":  # padding=2, output_padding=1: the DCGAN notebook's crop (its own options)
        return M.ConvTranspose2d(shape[0], _arg(op, "out"), _arg(op, "k"), _arg(op, "stride", 1), _arg(op, "pad", 0),
                                 output_padding=_arg(op, "output_pad", 0), bias=_arg(op, "bias", False))
    if k == "dense":
        return M.Linear(shape[-1], _arg(op, "out"), bias=_arg(op, "bias", True))
    if k == "batchnorm2d":
        bn = M.BatchNorm2d if builtin else fw.BatchNorm2d
        return bn(shape[0], momentum=_arg(op, "momentum"), eps=_arg(op, "eps"))
    if k == "layernorm":
        return M.LayerNorm(shape[-1], eps=_arg(op, "eps"))
    if k == "dropout":
        return M.Dropout(_arg(op, "rate")) if builtin else fw.Dropout(_arg(op, "rate"))
    if k == "recurrent":
        if builtin:
            lstm = M.LSTM(shape[-1], _arg(op, "hidden"), batch_first=True)
            return _Bound(lambda x: lstm(x)[0][:, -1], lstm)
        return _LSTM(shape[-1], _arg(op, "hidden"), shape[0])
    if k == "embedding":
        return _Embedding(_arg(op, "vocab"), _arg(op, "width"), _arg(op, "context"))
    if k == "maxpool2d":
        return _Bound(lambda x: F.max_pool2d(x, _arg(op, "k"))) if builtin else _Bound(_max_pool(_arg(op, "k")))
    simple = {"relu": F.relu, "tanh": F.tanh, "gelu": F.gelu,  # F.gelu: exact (erf), the notebook's
              "leaky_relu": lambda x: F.leaky_relu(x, _arg(op, "slope")),
              "attention": _attention(_arg(op, "heads", 1), builtin)}
    if k in simple:
        return _Bound(simple[k])
    raise NotImplementedError(f"no megengine layer for kind {k!r}")


def _inputs(op, batch):
    """The layer's input (and a loss's target), the same numbers every run."""
    rng = np.random.RandomState(0)
    shape = (batch, *op["shape"])
    k = op["kind"]
    if k == "embedding":
        return mge.tensor(rng.randint(0, _arg(op, "vocab"), shape).astype(np.int32)), None
    x = mge.tensor(rng.standard_normal(shape).astype(np.float32))
    if k == "softmax_ce":  # int32 labels, MegEngine's index type
        return x, mge.tensor(rng.randint(0, shape[-1], shape[:-1]).astype(np.int32))
    if k in ("bce_logits", "mse"):
        return x, mge.tensor(rng.uniform(size=shape).astype(np.float32))
    return x, None


def _loss(k, target):
    if k == "softmax_ce":  # the GPT notebook's form; LeNet's (N, 10) is the same call
        return lambda x: F.nn.cross_entropy(x.reshape(-1, x.shape[-1]), target.reshape(-1))
    if k == "bce_logits":
        return lambda x: F.nn.binary_cross_entropy(x, target, with_logits=True)
    return lambda x: F.nn.square_loss(x, target)


def _sync():
    """megengine._full_sync; an asynchronous failure raises its cause (AsyncError's message only points to it)."""
    try:
        mge._full_sync()
    except Exception as e:  # noqa: BLE001 - re-raised: the cause names the failing op
        raise (e.__cause__ or e) from None


def build(op: dict, batch: int, input_grad: bool, weight_grad: bool, mode: str, builtin: bool = False):
    """run(): one forward of the layer at `batch`, and the backward the use needs."""
    mge.random.seed(0)  # the default initialisers and dropout masks draw from it
    k = op["kind"]
    x, target = _inputs(op, batch)
    if k in LOSSES:
        fwd, weights = _loss(k, target), []
    else:
        fwd = _layer(op, builtin)
        weights = list(fwd.parameters())
        fwd.train()
    input_grad = input_grad and k != "embedding"  # int ids have no gradient
    probe = fwd(x)
    _sync()
    upstream = None  # a loss: its scalar's own gradient, 1
    if probe.ndim:
        upstream = mge.tensor(np.random.RandomState(1).standard_normal(probe.shape).astype(np.float32))
    gm = autodiff.GradManager().attach(weights if weight_grad else [])

    def step(x):
        if not (input_grad or weight_grad):
            return fwd(x)
        if input_grad:  # attached here: under trace x is the traced function's own input
            gm.attach([x])
        with gm:
            out = fwd(x)
            gm.backward(out, upstream)
        wrt = ([x] if input_grad else []) + (weights if weight_grad else [])
        grads = [t.grad for t in wrt]
        for t in wrt:  # as opt.clear_grad(): the next run's gradients are not accumulated onto these
            t.grad = None
        return [out] + grads  # the output too: the trace drops a forward whose result nothing reads

    fn = trace(step, symbolic=True) if mode == "graph" and k != "attention" else step  # attention: see HOW

    def run():
        fn(x)
        _sync()
    return run

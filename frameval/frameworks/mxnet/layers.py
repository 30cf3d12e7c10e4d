"""MXNet's side of the layer timing (frameval/envscripts/layers.py): one layer
of a workload's step, built as the MXNet notebooks build it (the same Gluon
blocks and operators, NCHW), run forward under `autograd.record()` and
backward (`out.backward(upstream)`, the notebooks' form) for what one use of
it needs. Graph mode hybridizes the layer alone with `hybridize(static_alloc=True)`
as the notebooks do: one CachedOp holds its forward and backward. MXNet runs
asynchronously: run() ends with `nd.waitall()`, as the notebooks' clocks do.
MXNet reads its thread settings once, at import: setup() sets them, then
imports it. Standard library + numpy + the framework, in its own environment."""
from __future__ import annotations

import math
import os

import numpy as np

from frameval import cpu

mx = nd = gluon = autograd = nn = rnn = None  # imported by setup(), after the thread variables

HOW = {"graph": "Gluon hybridize(static_alloc=True) of the layer: one CachedOp, forward and backward; as in the "
                "notebooks, the losses' batch mean and the LSTM notebook's MSE (written out) run imperatively",
       "eager": "Gluon imperative"}
LOSSES = ("softmax_ce", "bce_logits", "mse")


def setup(threads: int, mode: str) -> str:
    global mx, nd, gluon, autograd, nn, rnn
    for var in cpu.THREAD_VARS:  # as the notebooks' Recorder
        os.environ[var] = str(threads)
    # as the notebooks' setup cell: one engine worker runs the operators in turn, OpenMP inside each
    os.environ["MXNET_CPU_WORKER_NTHREADS"] = "1"
    os.environ["MXNET_OMP_MAX_THREADS"] = str(threads)
    import mxnet as mx
    from mxnet import autograd, gluon, nd
    from mxnet.gluon import nn, rnn
    return mx.__version__


def substitutes(mode: str) -> dict:
    return {"tconv2d": "the 1-output-channel transposed convolution (DCGAN's deconv3) as zero insertion + Convolution "
                       "with the flipped kernel: oneDNN's Deconvolution fails in its input gradient with one output "
                       "channel; the other transposed convolutions are the built-in Conv2DTranspose"}


def _arg(op, name, default=None):
    return op["args"].get(name, default)


def substitute(op: dict, mode: str):
    """Only the one-output-channel transposed convolution is substituted (as the DCGAN notebook does)."""
    return substitutes(mode).get(op["kind"]) if op["kind"] == "tconv2d" and _arg(op, "out") == 1 else None


def _weighted(fn, **shapes):
    """A HybridBlock computing fn(F, x, **weights) over weights of the given shapes, declared by name
    with params.get as the GPT notebook's model does."""
    class Weighted(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                for name, shape in shapes.items():
                    setattr(self, name, self.params.get(name, shape=shape))

        def hybrid_forward(self, F, x, **w):
            return fn(F, x, **w)
    return Weighted()


def _tconv_as_conv(channels):
    """The DCGAN notebook's Stride2TransposedConvAsConv (5x5, stride 2, crop 2 at the start and 1 at the end)."""
    def f(F, x, weight):
        a = F.expand_dims(F.expand_dims(x, axis=3), axis=5)  # (N, C, H, 1, W, 1)
        a = F.concat(a, F.zeros_like(a), dim=5)
        a = F.concat(a, F.zeros_like(a), dim=3)
        up = F.reshape(a, shape=(0, 0, -3, -3))  # (N, C, 2H, 2W), x at even positions
        kernel = F.flip(F.transpose(weight, axes=(1, 0, 2, 3)), axis=(2, 3))
        return F.Convolution(up, kernel, kernel=(5, 5), pad=(2, 2), num_filter=channels, no_bias=True)
    return f


def _attention(heads, d):
    """The GPT notebook's causal attention, written out, on q, k, v concatenated: (N, T, 3C) -> (N, T, C)."""
    def f(F, x):
        q, k, v = (F.reshape(F.transpose(F.reshape(z, shape=(0, 0, heads, d)), axes=(0, 2, 1, 3)), shape=(-3, 0, 0))
                   for z in F.split(x, num_outputs=3, axis=-1))  # (N*H, T, D)
        s = F.batch_dot(q, k, transpose_b=True) / math.sqrt(d)
        pos = F.contrib.arange_like(s, axis=1)
        allowed = F.broadcast_lesser_equal(F.reshape(pos, shape=(1, -1)), F.reshape(pos, shape=(-1, 1)))
        p = F.softmax(F.broadcast_add(s, F.expand_dims((allowed - 1) * 1e30, axis=0)), axis=-1)
        a = F.reshape(F.batch_dot(p, v), shape=(-4, -1, heads, 0, 0))  # (N, H, T, D)
        return F.reshape(F.transpose(a, axes=(0, 2, 1, 3)), shape=(0, 0, -3))
    return f


def _embedding(vocab, width, context):
    """The GPT notebook's token embedding plus position embedding (F.Embedding on both tables)."""
    def f(F, idx, wte, wpe):
        pos = F.Embedding(F.contrib.arange_like(idx, axis=1), wpe, input_dim=context, output_dim=width)
        return F.broadcast_add(F.Embedding(idx, wte, input_dim=vocab, output_dim=width), F.expand_dims(pos, axis=0))
    return _weighted(f, wte=(vocab, width), wpe=(context, width))


def _lstm(op):
    """The LSTM notebook's rnn.LSTM (NTC) and its last hidden state; h2h_bias frozen, as there."""
    lstm = rnn.LSTM(_arg(op, "hidden"), layout="NTC", input_size=op["shape"][-1])
    last = nn.HybridLambda(lambda F, out: F.squeeze(F.slice_axis(out, axis=1, begin=-1, end=None), axis=1))
    seq = nn.HybridSequential()
    seq.add(lstm, last)
    lstm.l0_h2h_bias.grad_req = "null"
    return seq


def _conv(op, builtin):
    """Gluon's Conv2D / Conv2DTranspose, or the DCGAN notebook's substitute where it uses one."""
    c_in, out, k = op["shape"][0], _arg(op, "out"), _arg(op, "k")
    stride, pad = _arg(op, "stride", 1), _arg(op, "pad", 0)
    if op["kind"] == "conv2d":
        return nn.Conv2D(out, k, strides=stride, padding=pad, in_channels=c_in, use_bias=_arg(op, "bias", True))
    if out == 1 and not builtin:  # the defect's case: one output channel
        if (k, stride, pad) != (5, 2, 2):
            raise NotImplementedError("the notebook's substitute is the 5x5, stride 2, pad 2 one only")
        return _weighted(_tconv_as_conv(1), weight=(c_in, 1, 5, 5))
    return nn.Conv2DTranspose(out, k, strides=stride, padding=pad, output_padding=_arg(op, "output_pad", 0),
                              in_channels=c_in, use_bias=_arg(op, "bias", False))


def _block(op, builtin):
    """The layer as a Gluon HybridBlock of its input (a loss's: of its input and target)."""
    k, shape = op["kind"], op["shape"]
    if k in ("conv2d", "tconv2d"):
        return _conv(op, builtin)
    if k == "dense":  # Gluon's Dense flattens (the CNNs', the LSTM's); the GPT's FullyConnected keeps (T, N) tokens
        return nn.Dense(_arg(op, "out"), use_bias=_arg(op, "bias", True), flatten=len(shape) == 1, in_units=shape[-1])
    if k == "batchnorm2d":  # batch statistics inside autograd.record()
        return nn.BatchNorm(momentum=_arg(op, "momentum"), epsilon=_arg(op, "eps"), in_channels=shape[0])
    if k == "layernorm":
        return nn.LayerNorm(axis=-1, epsilon=_arg(op, "eps"), in_channels=shape[-1])
    if k == "dropout":  # active inside autograd.record() only
        return nn.Dropout(_arg(op, "rate"))
    if k == "recurrent":
        return _lstm(op)
    if k == "embedding":
        return _embedding(_arg(op, "vocab"), _arg(op, "width"), _arg(op, "context"))
    if k == "softmax_ce":
        return gluon.loss.SoftmaxCrossEntropyLoss(axis=-1)
    if k == "bce_logits":
        return gluon.loss.SigmoidBinaryCrossEntropyLoss(from_sigmoid=False)
    fns = {"relu": lambda F, x: F.relu(x), "tanh": lambda F, x: F.tanh(x),
           "gelu": lambda F, x: F.LeakyReLU(x, act_type="gelu"),  # exact (erf), MXNet's only GELU
           "leaky_relu": lambda F, x: F.LeakyReLU(x, act_type="leaky", slope=_arg(op, "slope")),
           "maxpool2d": lambda F, x: F.Pooling(x, kernel=(_arg(op, "k"),) * 2, stride=(_arg(op, "k"),) * 2,
                                               pool_type="max")}
    if k == "attention":
        heads = _arg(op, "heads", 1)
        return nn.HybridLambda(_attention(heads, shape[-1] // 3 // heads))
    if k in fns:
        return nn.HybridLambda(fns[k])
    raise NotImplementedError(f"no MXNet layer for kind {k!r}")


def _inputs(op, batch):
    """The layer's input (and a loss's target), the same numbers every run."""
    rng = np.random.RandomState(0)
    shape = (batch, *op["shape"])
    k = op["kind"]
    if k == "embedding":  # int32 token ids, as the GPT notebook's data cell
        return nd.array(rng.randint(0, _arg(op, "vocab"), shape), dtype="int32"), None
    x = nd.array(rng.standard_normal(shape))
    if k == "softmax_ce":  # labels as the notebooks': LeNet's float32 classes, the GPT's int32 tokens
        return x, nd.array(rng.randint(0, shape[-1], shape[:-1]), dtype="int32" if len(shape) > 2 else "float32")
    if k in ("bce_logits", "mse"):
        return x, nd.array(rng.uniform(size=shape))
    return x, None


def _layer(op, mode, builtin, weight_grad, target):
    """The layer as a function of its input, and the weights whose gradients the use wants."""
    k = op["kind"]
    if k == "mse":  # the LSTM notebook's, written out, imperative in both modes (Gluon's L2Loss is half of it)
        return lambda x: ((x - target) ** 2).mean(), []
    block = _block(op, builtin)
    block.initialize()
    if mode == "graph":
        block.hybridize(static_alloc=True)
    params = list(block.collect_params().values())
    if not weight_grad:
        for p in params:
            p.grad_req = "null"
    weights = [p for p in params if p.grad_req != "null"]  # BatchNorm's running statistics have none
    if k in LOSSES:  # the notebooks' batch mean of the per-sample loss, imperative
        return lambda x: block(x, target).mean(), weights
    return block, weights


def build(op: dict, batch: int, input_grad: bool, weight_grad: bool, mode: str, builtin: bool = False):
    """run(): one forward of the layer at `batch`, and the backward the use needs."""
    mx.random.seed(0)  # dropout masks
    k = op["kind"]
    x, target = _inputs(op, batch)
    fwd, weights = _layer(op, mode, builtin, weight_grad, target)
    wants_x = input_grad and k != "embedding"  # token ids have no gradient
    if wants_x:
        x.attach_grad()
    if not (wants_x or weights):
        def forward():
            with autograd.train_mode():  # the step's forward: batch statistics, dropout on
                fwd(x)
            nd.waitall()
        return forward
    with autograd.train_mode():
        probe = fwd(x)  # builds the CachedOp in graph mode
    upstream = None if k in LOSSES else nd.array(np.random.RandomState(1).standard_normal(probe.shape))

    def run():
        with autograd.record():
            out = fwd(x)
        out.backward(upstream)
        nd.waitall()  # MXNet is asynchronous: the backward is done when its gradients are written
    return run

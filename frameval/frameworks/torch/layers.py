"""PyTorch's side of the layer timing (frameval/envscripts/layers.py): one
layer of a workload's step, built as the torch notebooks build it, run
forward and backward (`torch.autograd.grad`, the notebooks' form of the
backward) for what one use of it needs. Graph mode compiles that function
alone with `torch.compile`, with the notebooks' settings. Standard library +
the framework, loaded only in its own environment."""
from __future__ import annotations

import torch
import torch._dynamo
import torch._inductor.config
import torch.nn as nn
import torch.nn.functional as F

HOW = {"graph": "torch.compile(fullgraph=True) of the layer's forward and torch.autograd.grad", "eager": "eager"}


def setup(threads: int, mode: str) -> str:
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(threads)
    if mode == "graph":
        torch._dynamo.config.trace_autograd_ops = True  # as support.setup: the backward inside the graph
        torch._inductor.config.layout_optimization = False  # as support.setup for convolution workloads
        # every layer's function shares one code object: without room, dynamo falls back to eager silently
        for name in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                     "accumulated_recompile_limit"):
            if hasattr(torch._dynamo.config, name):
                setattr(torch._dynamo.config, name, 4096)
    return torch.__version__


def substitutes(mode: str) -> dict:
    subs = {"dropout": "fw.Dropout (inverted dropout, its rate a tensor: the check sets it to 0 without a recompile)"}
    if mode == "graph":
        subs["recurrent"] = "the recurrence written in torch ops (dynamo cannot trace nn.LSTM)"
    return subs


def _arg(op, name, default=None):
    return op["args"].get(name, default)


class _Dropout(nn.Module):
    """The notebooks' fw.Dropout, as support.Dropout computes it."""

    def __init__(self, p):
        super().__init__()
        self.rate = torch.tensor(float(p))

    def forward(self, x):
        keep = (torch.rand_like(x) >= self.rate).to(x.dtype)
        return x * keep / (1 - self.rate)


class _Unrolled(nn.Module):
    """The torch LSTM notebook's graph-mode recurrence over nn.LSTM's weights."""

    def __init__(self, lstm, hidden):
        super().__init__()
        self.lstm, self.hidden = lstm, hidden
        # the Parameters themselves, as the notebook holds them: dynamo breaks the graph at any use
        # of an RNN module, and the layer would run eager under a compiled name
        self.cell = (lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.bias_ih_l0, lstm.bias_hh_l0)

    def forward(self, x):
        w_ih, w_hh, b_ih, b_hh = self.cell
        b = b_ih + b_hh
        h = c = x.new_zeros(x.shape[0], self.hidden)
        for t in range(x.shape[1]):
            i, f, g, o = (x[:, t] @ w_ih.T + h @ w_hh.T + b).chunk(4, 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
        return h


def _attention(heads):
    def f(x):
        b, t, c3 = x.shape
        c = c3 // 3
        q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in x.split(c, dim=2))
        return F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, c)
    return f


def _module(op, mode, builtin):
    """The layer as a callable of its input, and its weights (a module's parameters)."""
    k, shape = op["kind"], op["shape"]
    if k == "conv2d":
        return nn.Conv2d(shape[0], _arg(op, "out"), _arg(op, "k"), _arg(op, "stride", 1), _arg(op, "pad", 0),
                         bias=_arg(op, "bias", True))
    if k == "tconv2d":
        return nn.ConvTranspose2d(shape[0], _arg(op, "out"), _arg(op, "k"), _arg(op, "stride", 1), _arg(op, "pad", 0),
                                  output_padding=_arg(op, "output_pad", 0), bias=_arg(op, "bias", False))
    if k == "dense":
        return nn.Linear(shape[-1], _arg(op, "out"), bias=_arg(op, "bias", True))
    if k == "batchnorm2d":
        return nn.BatchNorm2d(shape[0], momentum=1 - _arg(op, "momentum"), eps=_arg(op, "eps"))
    if k == "layernorm":
        return nn.LayerNorm(shape[-1], eps=_arg(op, "eps"))
    if k == "dropout":
        return nn.Dropout(_arg(op, "rate")) if builtin else _Dropout(_arg(op, "rate"))
    if k == "recurrent":
        lstm = nn.LSTM(shape[-1], _arg(op, "hidden"), batch_first=True)
        if mode == "graph" and not builtin:
            return _Unrolled(lstm, _arg(op, "hidden"))
        return lambda x: lstm(x)[0][:, -1]
    if k == "embedding":
        emb = nn.ModuleList([nn.Embedding(_arg(op, "vocab"), _arg(op, "width")),
                             nn.Embedding(_arg(op, "context"), _arg(op, "width"))])
        f = lambda idx: emb[0](idx) + emb[1].weight[: idx.shape[1]]  # noqa: E731
        f.parameters = emb.parameters
        return f
    simple = {"relu": F.relu, "tanh": torch.tanh, "gelu": F.gelu, "attention": _attention(_arg(op, "heads", 1)),
              "leaky_relu": lambda x: F.leaky_relu(x, _arg(op, "slope")),
              "maxpool2d": lambda x: F.max_pool2d(x, _arg(op, "k"))}
    if k in simple:
        return simple[k]
    raise NotImplementedError(f"no torch layer for kind {k!r}")


def _inputs(op, batch):
    """The layer's input (and a loss's target), the same numbers every run."""
    g = torch.Generator().manual_seed(0)
    shape = (batch, *op["shape"])
    k = op["kind"]
    if k == "embedding":
        return torch.randint(0, _arg(op, "vocab"), shape, generator=g), None
    x = torch.randn(shape, generator=g)
    if k == "softmax_ce":
        return x, torch.randint(0, shape[-1], shape[:-1], generator=g)
    if k in ("bce_logits", "mse"):
        return x, torch.rand(shape, generator=g)
    return x, None


def _loss(k):
    return {"softmax_ce": lambda x, y: F.cross_entropy(x.flatten(0, -2), y.flatten()),
            "bce_logits": F.binary_cross_entropy_with_logits, "mse": F.mse_loss}[k]


def build(op: dict, batch: int, input_grad: bool, weight_grad: bool, mode: str, builtin: bool = False):
    """run(): one forward of the layer at `batch`, and the backward the use needs."""
    torch.manual_seed(0)
    k = op["kind"]
    x, target = _inputs(op, batch)
    if k in ("softmax_ce", "bce_logits", "mse"):
        layer, weights = _loss(k), []
        fwd = lambda x: layer(x, target)  # noqa: E731
    else:
        layer = _module(op, mode, builtin)
        weights = list(layer.parameters()) if hasattr(layer, "parameters") else []
        fwd = layer
        if isinstance(layer, nn.Module):
            layer.train()
    wrt = ([x] if input_grad and x.is_floating_point() else []) + (weights if weight_grad else [])
    for w in weights:
        w.requires_grad_(weight_grad)
    x.requires_grad_(bool(input_grad and x.is_floating_point()))
    probe = fwd(x)
    upstream = torch.randn(probe.shape, generator=torch.Generator().manual_seed(1)) if probe.dim() else None

    def step(x):
        out = fwd(x)
        if not wrt:
            return out
        # the output too: a compiler drops a forward whose result nothing reads (a convolution's
        # gradients do not read its output), and the step would be timed without it. Detached: an
        # output whose grad_fn autograd.grad consumes breaks the graph in two (dynamo's
        # "autograd.grad consumed returned tensor's grad_fn"), and a forward compiled alone then
        # stores what its backward needs, such as a ReLU's mask, which inductor writes 25x slower
        # than the fused forward and backward the notebooks' one graph computes
        return out.detach(), torch.autograd.grad(out, wrt, grad_outputs=upstream)

    # fullgraph: a graph break is the cell's error, never a layer run eager under a compiled name
    fn = torch.compile(step, fullgraph=True) if mode == "graph" else step
    if not wrt:
        def run():
            with torch.no_grad():
                fn(x)
        return run
    return lambda: fn(x)

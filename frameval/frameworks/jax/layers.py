"""JAX's side of the layer timing (frameval/envscripts/layers.py): one layer
of a workload's step, built as the JAX notebooks build it (Flax linen modules
on NHWC images for LeNet, the DCGAN and the LSTM; the GPT's plain functions
over its canonical weights), run forward and, with `jax.vjp`, backward for
what one use of it needs. Graph mode is `jax.jit` of that function alone, as
the notebooks jit their whole step; eager calls it un-jitted. Standard library
+ the framework, loaded only in its own environment: jax is imported by
setup(), after the notebooks' thread setup (XLA sizes its pool when it starts)."""
from __future__ import annotations

import contextlib
import sys
import types

import numpy as np

from frameval.frameworks.jax import support as fw

jax = jnp = nn = optax = None  # imported by setup()

HOW = {"graph": "jax.jit of the layer's forward and jax.vjp", "eager": "eager (un-jitted: every operation dispatched)"}


def _ignore(*args, **kwargs):
    return None


def setup(threads: int, mode: str) -> str:
    """The notebooks' own setup cell (support.setup: CPU affinity, XLA_FLAGS, the CPU platform), then jax."""
    global jax, jnp, nn, optax
    rec = types.SimpleNamespace(threads=threads, set_threads_effective=_ignore, after_import=_ignore, note=_ignore)
    with contextlib.redirect_stdout(sys.stderr):  # its banner line would spoil the JSON the harness prints
        fw.setup(rec, mode, "cpu", 0)
    import flax.linen as _nn
    import jax as _jax
    import jax.numpy as _jnp
    import optax as _optax
    jax, jnp, nn, optax = _jax, _jnp, _nn, _optax
    return jax.__version__


def substitutes(mode: str) -> dict:
    return {"dropout": "fw.dropout (inverted dropout in jax.numpy, its rate a traced argument: the check sets it "
                       "to 0 without a recompile); built-in: flax.linen.Dropout",
            "batchnorm2d": "fw.SpecBatchNorm (Flax's BatchNorm feeds the biased batch variance into the running "
                           "one); built-in: flax.linen.BatchNorm",
            "recurrent": "the notebook's LSTM module (the recurrence in jax.numpy, the spec's one bias, a Python loop "
                    "unrolled under jit); built-in: flax.linen.RNN(OptimizedLSTMCell), a lax.scan"}


def _lstm_modules():
    class LSTM(nn.Module):
        """The LSTM notebook's module; random initializers where the notebook's (zeros) only give shapes."""
        hidden: int

        @nn.compact
        def __call__(self, x):  # (batch, time, features) -> last hidden state
            h4, init = 4 * self.hidden, nn.initializers.normal(self.hidden ** -0.5)
            w_ih = self.param("weight_ih", init, (h4, x.shape[-1]))
            w_hh = self.param("weight_hh", init, (h4, self.hidden))
            b = self.param("bias", nn.initializers.zeros, (h4,))
            h = c = jnp.zeros((x.shape[0], self.hidden), x.dtype)
            for t in range(x.shape[1]):
                i, f, g, o = jnp.split(x[:, t] @ w_ih.T + h @ w_hh.T + b, 4, axis=1)
                c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
                h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return h

    class FlaxLSTM(nn.Module):
        hidden: int

        @nn.compact
        def __call__(self, x):
            return nn.RNN(nn.OptimizedLSTMCell(self.hidden))(x)[:, -1]

    return LSTM, FlaxLSTM


def _module(op, builtin):
    """The kinds the notebooks build from a Flax module: (module, keyword arguments of its call)."""
    k, a = op["kind"], op["args"]
    if k == "conv2d":
        p = a.get("pad", 0)
        return nn.Conv(a["out"], (a["k"], a["k"]), strides=(a.get("stride", 1),) * 2,
                       padding=((p, p), (p, p)) if p else "VALID"), {}
    if k == "tconv2d":
        # lax pads the stride-dilated input: the full output (k - 1 a side) cropped `pad` at the start and
        # `pad - output_pad` at the end, PyTorch's padding/output_padding (the DCGAN notebook's S1_PAD, S2_PAD)
        lo = a["k"] - 1 - a["pad"]
        return nn.ConvTranspose(a["out"], (a["k"], a["k"]), strides=(a.get("stride", 1),) * 2,
                                padding=((lo, lo + a.get("output_pad", 0)),) * 2, use_bias=a.get("bias", False)), {}
    if k == "dense":
        return nn.Dense(a["out"], use_bias=a.get("bias", True)), {}
    if k == "batchnorm2d":  # training mode: batch statistics, the running ones updated
        bn = nn.BatchNorm if builtin else fw.SpecBatchNorm
        return bn(momentum=a["momentum"], epsilon=a["eps"]), {"use_running_average": False}
    if k == "recurrent":
        notebook, flax_lstm = _lstm_modules()
        return (flax_lstm if builtin else notebook)(a["hidden"]), {}
    return None, None


def _flax(module, call, x):
    """(params, fwd): fwd(params, x, extra) -> (output, the new running statistics or None)."""
    variables = dict(module.init(jax.random.key(0), x, **call))
    params = variables.pop("params", {})

    def fwd(p, x, extra):
        if variables:  # BatchNorm: its new statistics come back, as the DCGAN's step returns them
            return module.apply({"params": p, **variables}, x, mutable=list(variables), **call)
        return module.apply({"params": p}, x, **call), None
    return params, fwd


def _normal(*shape):
    return jnp.asarray(np.random.RandomState(2).standard_normal(shape).astype(np.float32) * 0.02)


def _gpt(op, x):
    """The GPT notebook's plain functions over canonical weights (dense: (out, in)); (params, fwd) or None."""
    k, a = op["kind"], op["args"]
    if k == "embedding":
        p = {"wte": _normal(a["vocab"], a["width"]), "wpe": _normal(a["context"], a["width"])}
        return p, lambda p, idx, extra: (p["wte"][idx] + p["wpe"][:idx.shape[1]], None)
    if k == "layernorm":
        c, eps = x.shape[-1], a["eps"]

        def layer_norm(p, x, extra):
            mu = x.mean(-1, keepdims=True)
            var = ((x - mu) ** 2).mean(-1, keepdims=True)
            return (x - mu) * jax.lax.rsqrt(var + eps) * p["weight"] + p["bias"], None
        return {"weight": jnp.ones(c), "bias": jnp.zeros(c)}, layer_norm
    if k == "dense" and x.ndim == 3:  # (batch, tokens, features): only the GPT's dense layers see tokens
        p = {"weight": _normal(a["out"], x.shape[-1])}
        if a.get("bias", True):
            p["bias"] = jnp.zeros(a["out"])
        return p, lambda p, x, extra: (x @ p["weight"].T + p.get("bias", 0.0), None)
    return None


def _attention(heads):
    def attention(p, x, extra):
        b, t, c = x.shape[0], x.shape[1], x.shape[2] // 3
        q, k, v = (z.reshape(b, t, heads, c // heads) for z in jnp.split(x, 3, axis=-1))
        return jax.nn.dot_product_attention(q, k, v, is_causal=True).reshape(b, t, c), None  # the GPT's fused call
    return attention


def _function(op, builtin):
    """The layers without weights, as fwd(params, x, extra) -> (output, None); extra: a loss's target, dropout's key."""
    a = op["args"]
    plain = {"relu": nn.relu, "tanh": jnp.tanh, "leaky_relu": lambda x: nn.leaky_relu(x, a.get("slope")),
             "gelu": lambda x: jax.nn.gelu(x, approximate=False),  # the GPT notebook's exact GELU
             "maxpool2d": lambda x: nn.max_pool(x, (a.get("k"),) * 2, strides=(a.get("k"),) * 2)}
    if op["kind"] in plain:
        return lambda p, x, extra: (plain[op["kind"]](x), None)
    losses = {"softmax_ce": lambda x, y: optax.softmax_cross_entropy_with_integer_labels(x, y).mean(),
              "bce_logits": lambda x, y: optax.sigmoid_binary_cross_entropy(x, y).mean(),
              "mse": lambda x, y: jnp.mean((x - y) ** 2)}
    if op["kind"] in losses:
        return lambda p, x, y: (losses[op["kind"]](x, y), None)
    if op["kind"] == "attention":
        return _attention(a["heads"])
    if op["kind"] == "dropout" and builtin:
        drop = nn.Dropout(a["rate"], deterministic=False)
        return lambda p, x, extra: (drop.apply({}, x, rngs={"dropout": extra[1]}), None)
    if op["kind"] == "dropout":
        return lambda p, x, extra: (fw.dropout(x, *extra), None)
    raise NotImplementedError(f"no JAX layer for kind {op['kind']!r}")


def _inputs(op, batch):
    """(input, extra), the same numbers every run: images NHWC, as the notebooks' data cells make them."""
    rng = np.random.RandomState(0)
    shape = (batch, *op["shape"])
    if len(shape) == 4:
        shape = (batch, *op["shape"][1:], op["shape"][0])
    k = op["kind"]
    if k == "embedding":
        return jnp.asarray(rng.randint(0, op["args"]["vocab"], shape).astype(np.int32)), None
    x = jnp.asarray(rng.standard_normal(shape).astype(np.float32))
    if k == "softmax_ce":
        return x, jnp.asarray(rng.randint(0, shape[-1], shape[:-1]).astype(np.int32))
    if k in ("bce_logits", "mse"):
        return x, jnp.asarray(rng.random_sample(shape).astype(np.float32))
    if k == "dropout":  # the rate an argument of the step, as the DCGAN notebook passes it; the mask's key
        return x, (jnp.float32(op["args"]["rate"]), jax.random.key(0))
    return x, None


def _layer(op, x, builtin):
    """(params, fwd) of the layer as its notebook builds it."""
    gpt = _gpt(op, x)
    if gpt:
        return gpt
    module, call = _module(op, builtin)
    return _flax(module, call, x) if module is not None else ({}, _function(op, builtin))


def _step(fwd, input_grad, weight_grad):
    """The forward alone, or with jax.vjp only the gradients the use needs (un-jitted, a gradient not asked for
    would be computed all the same): (params, x, extra, upstream) -> (output, running statistics, gradients).
    The output is returned as the step's next layer would use it: under jit a linear layer's backward does not
    read it, and XLA would drop an unused forward."""
    def step(params, x, extra, upstream):
        if weight_grad and input_grad:
            out, pull, aux = jax.vjp(lambda p, x: fwd(p, x, extra), params, x, has_aux=True)
        elif weight_grad:
            out, pull, aux = jax.vjp(lambda p: fwd(p, x, extra), params, has_aux=True)
        elif input_grad:
            out, pull, aux = jax.vjp(lambda x: fwd(params, x, extra), x, has_aux=True)
        else:
            return fwd(params, x, extra)
        return out, aux, pull(upstream)
    return step


def build(op: dict, batch: int, input_grad: bool, weight_grad: bool, mode: str, builtin: bool = False):
    """run(): one forward of the layer at `batch`, and the backward the use needs, computed when it returns."""
    x, extra = _inputs(op, batch)
    params, fwd = _layer(op, x, builtin)
    out = jax.eval_shape(fwd, params, x, extra)[0]
    upstream = jnp.asarray(np.random.RandomState(1).standard_normal(out.shape).astype(np.float32) if out.shape
                           else np.float32(1))  # a loss: d loss / d loss
    step = _step(fwd, input_grad and jnp.issubdtype(x.dtype, jnp.floating), weight_grad)
    fn = jax.jit(step) if mode == "graph" else step  # every array an argument: none folded in as a constant
    return lambda: jax.block_until_ready(fn(params, x, extra, upstream))

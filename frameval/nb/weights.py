"""Shared initial weights, drawn with numpy from the run's seed in one canonical
layout; each notebook maps them into its framework's layout.

Canonical layouts (see docs/workloads.md): dense (out, in); conv (out, in, kh, kw);
transposed conv (in, out, kh, kw); LSTM gates ordered input, forget, cell,
output with W_ih (4h, in), W_hh (4h, h) and one bias (4h).

Weights are drawn in the order the tables below list them, from
`RandomState(seed)`, so adding a workload never changes another's weights.
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

# name -> (shape, kind); kind: "glorot" (fan from shape), "zeros", "ones",
# "stat0"/"stat1" for BatchNorm running statistics (not trainable).
_LENET = [
    ("conv1.weight", (6, 1, 5, 5), "conv"), ("conv1.bias", (6,), "zeros"),
    ("conv2.weight", (16, 6, 5, 5), "conv"), ("conv2.bias", (16,), "zeros"),
    ("fc1.weight", (120, 400), "dense"), ("fc1.bias", (120,), "zeros"),
    ("fc2.weight", (84, 120), "dense"), ("fc2.bias", (84,), "zeros"),
    ("fc3.weight", (10, 84), "dense"), ("fc3.bias", (10,), "zeros"),
]


def _bn(prefix, c):
    return [(f"{prefix}.weight", (c,), "ones"), (f"{prefix}.bias", (c,), "zeros"),
            (f"{prefix}.running_mean", (c,), "stat0"), (f"{prefix}.running_var", (c,), "stat1")]


_GENERATOR = [
    ("fc.weight", (12544, 100), "dense"), *_bn("bn0", 256),
    ("deconv1.weight", (256, 128, 5, 5), "deconv"), *_bn("bn1", 128),
    ("deconv2.weight", (128, 64, 5, 5), "deconv"), *_bn("bn2", 64),
    ("deconv3.weight", (64, 1, 5, 5), "deconv"),
]
_DISCRIMINATOR = [
    ("conv1.weight", (64, 1, 5, 5), "conv"), ("conv1.bias", (64,), "zeros"),
    ("conv2.weight", (128, 64, 5, 5), "conv"), ("conv2.bias", (128,), "zeros"),
    ("fc.weight", (1, 6272), "dense"), ("fc.bias", (1,), "zeros"),
]
_HIDDEN = 32
_LSTM = [
    ("lstm.weight_ih", (4 * _HIDDEN, 1), "dense"), ("lstm.weight_hh", (4 * _HIDDEN, _HIDDEN), "dense"),
    ("lstm.bias", (4 * _HIDDEN,), "zeros"),
    ("fc.weight", (1, _HIDDEN), "dense"), ("fc.bias", (1,), "zeros"),
]

NETWORKS = {"lenet": {"lenet": _LENET},
            "dcgan": {"generator": _GENERATOR, "discriminator": _DISCRIMINATOR},
            "lstm": {"lstm": _LSTM}}
_STREAM = {"lenet": 0, "generator": 1, "discriminator": 2, "lstm": 3}


def _glorot(rng, shape, kind):
    if kind == "dense":
        fan_out, fan_in = shape[0], shape[1]
    else:  # conv (out, in, kh, kw) or deconv (in, out, kh, kw): the sum is symmetric
        rf = shape[2] * shape[3]
        fan_out, fan_in = shape[0] * rf, shape[1] * rf
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-limit, limit, size=shape)


def init_weights(network: str, seed: int = 0) -> "OrderedDict[str, np.ndarray]":
    """Canonical float32 initial weights of one network ("lenet", "generator",
    "discriminator" or "lstm"), including BatchNorm running statistics."""
    table = next((t[network] for t in NETWORKS.values() if network in t), None)
    if table is None:
        raise KeyError(f"unknown network {network!r}; known: {', '.join(_STREAM)}")
    rng = np.random.RandomState([seed, 100 + _STREAM[network]])
    out = OrderedDict()
    for name, shape, kind in table:
        if kind in ("zeros", "stat0"):
            a = np.zeros(shape)
        elif kind in ("ones", "stat1"):
            a = np.ones(shape)
        else:
            a = _glorot(rng, shape, kind)
        out[name] = a.astype(np.float32)
    return out


def trainable_names(network: str) -> list:
    table = next(t[network] for t in NETWORKS.values() if network in t)
    return [name for name, _, kind in table if kind not in ("stat0", "stat1")]


def count_trainable(network: str) -> int:
    table = next(t[network] for t in NETWORKS.values() if network in t)
    return int(sum(np.prod(shape) for _, shape, kind in table if kind not in ("stat0", "stat1")))

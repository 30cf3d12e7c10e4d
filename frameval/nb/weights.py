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

from .. import workloads

# The tables live with their workloads (frameval/workloads/): network name ->
# Network (its stream and [(name, shape, kind)]), kind "dense"/"conv"/"deconv"
# (Glorot, fan from shape), "zeros", "ones", "stat0"/"stat1" for BatchNorm
# running statistics (not trainable). Looked up at each call, so a workload
# registered later (a test's toy) draws its weights too.


def _network(name: str):
    net = next((n for w in workloads.REGISTRY.values() for n in w.networks if n.name == name), None)
    if net is None:
        known = [n.name for w in workloads.REGISTRY.values() for n in w.networks]
        raise KeyError(f"unknown network {name!r}; known: {', '.join(known)}")
    return net


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
    net = _network(network)
    if net.init is not None:  # its own initialisation (the record says how)
        return OrderedDict((k, np.asarray(v).astype(np.float32)) for k, v in net.init(seed).items())
    rng = np.random.RandomState([seed, 100 + net.stream])
    out = OrderedDict()
    for name, shape, kind in net.table:
        if kind in ("zeros", "stat0"):
            a = np.zeros(shape)
        elif kind in ("ones", "stat1"):
            a = np.ones(shape)
        else:
            a = _glorot(rng, shape, kind)
        out[name] = a.astype(np.float32)
    return out


def trainable_names(network: str) -> list:
    return [name for name, _, kind in _network(network).table if kind not in ("stat0", "stat1")]


def count_trainable(network: str) -> int:
    return int(sum(np.prod(shape) for _, shape, kind in _network(network).table if kind not in ("stat0", "stat1")))


def has_convolutions(workload: str) -> bool:
    """Whether any network of the workload has a convolution (kind "conv" or "deconv"):
    a framework's workaround for a convolution defect applies only there."""
    return any(kind in ("conv", "deconv") for net in workloads.get(workload).networks for _, _, kind in net.table)

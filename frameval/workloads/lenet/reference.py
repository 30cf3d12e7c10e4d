"""The LeNet-5's float64 reference (docs/workloads.md): its forward and its
hand-written backward, built from the shared layer maths of
`frameval.nb.reference` (read through the module, so a test that patches a
layer there patches it here too). Numpy and the standard library only; the
workload's record loads it lazily (frameval/workloads/lenet/__init__.py).
"""
from __future__ import annotations

import numpy as np

from ...nb import reference as L


def lenet_forward(p, x):
    """-> logits (N, 10), cache."""
    a1, c1 = L.conv2d(x, p["conv1.weight"], p["conv1.bias"], 1, 2)
    p1, m1 = L.maxpool2(L.relu(a1))
    a2, c2 = L.conv2d(p1, p["conv2.weight"], p["conv2.bias"], 1, 0)
    p2, m2 = L.maxpool2(L.relu(a2))
    f = p2.reshape(len(x), -1)
    h1 = L.dense(f, p["fc1.weight"], p["fc1.bias"])
    h2 = L.dense(L.relu(h1), p["fc2.weight"], p["fc2.bias"])
    logits = L.dense(L.relu(h2), p["fc3.weight"], p["fc3.bias"])
    return logits, (a1, c1, m1, a2, c2, m2, p2.shape, f, h1, h2)


def lenet_backward(p, cache, dlogits, kink=None):
    a1, c1, m1, a2, c2, m2, p2shape, f, h1, h2 = cache
    g = {}
    r2 = L.relu(h2)
    g["fc3.weight"], g["fc3.bias"] = dlogits.T @ r2, dlogits.sum(0)
    dh2 = L.relu_backward(dlogits @ p["fc3.weight"], h2, kink)
    r1 = L.relu(h1)
    g["fc2.weight"], g["fc2.bias"] = dh2.T @ r1, dh2.sum(0)
    dh1 = L.relu_backward(dh2 @ p["fc2.weight"], h1, kink)
    g["fc1.weight"], g["fc1.bias"] = dh1.T @ f, dh1.sum(0)
    dp2 = (dh1 @ p["fc1.weight"]).reshape(p2shape)
    da2 = L.relu_backward(L.maxpool2_backward(dp2, m2), a2, kink)
    dp1, g["conv2.weight"], g["conv2.bias"] = L.conv2d_backward(da2, c2)
    da1 = L.relu_backward(L.maxpool2_backward(dp1, m1), a1, kink)
    _, g["conv1.weight"], g["conv1.bias"] = L.conv2d_backward(da1, c1, need_dx=False)
    return g


def lenet_loss(p, x, y, kink=None):
    logits, cache = lenet_forward(p, x)
    loss, dl = L.softmax_cross_entropy(logits, y)
    return loss, lenet_backward(p, cache, dl, kink)


def lenet_step(p, x, y, lr=1e-3):
    """One Adam step from fresh Adam state. -> {"losses": {"loss"}, "weights": new params}."""
    r = lenet_train(p, [{"x": x, "y": y}], lr)
    return {"losses": r["losses"][0], "weights": r["weights"], "grads": r["grads"]}


def lenet_train(p, batches, lr=1e-3, kink=None):
    """k LeNet steps (see nb.reference._train); `kink`: the ReLU inputs near the kink on the other branch."""
    return L._train(p, batches, lr, lambda q, x, y: lenet_loss(q, x, y, kink))

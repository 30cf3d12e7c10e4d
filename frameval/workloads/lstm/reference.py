"""The LSTM's float64 reference (docs/workloads.md): its forward and its
hand-written backward, built from the shared layer maths of
`frameval.nb.reference` (read through the module, so a test that patches a
layer there patches it here too). Numpy and the standard library only; the
workload's record loads it lazily (frameval/workloads/lstm/__init__.py).
"""
from __future__ import annotations

import numpy as np

from ...nb import reference as L


def _lstm_bias(p):
    if "lstm.bias" in p:
        return p["lstm.bias"]
    return p["lstm.bias_ih"] + p["lstm.bias_hh"]


def lstm_forward(p, x):
    """Zero initial state, gates i, f, c, o; the last hidden state -> dense.
    x (N, T, in). -> pred (N, out), cache."""
    wih, whh, b = p["lstm.weight_ih"], p["lstm.weight_hh"], _lstm_bias(p)
    n, steps, _ = x.shape
    hd = whh.shape[1]
    h, c = np.zeros((n, hd)), np.zeros((n, hd))
    tape = []
    for t in range(steps):
        a = x[:, t] @ wih.T + h @ whh.T + b
        i, f, g, o = L.sigmoid(a[:, :hd]), L.sigmoid(a[:, hd:2 * hd]), np.tanh(a[:, 2 * hd:3 * hd]), L.sigmoid(a[:, 3 * hd:])
        c_prev, h_prev = c, h
        c = f * c + i * g
        tc = np.tanh(c)
        h = o * tc
        tape.append((h_prev, c_prev, i, f, g, o, tc))
    pred = L.dense(h, p["fc.weight"], p["fc.bias"])
    return pred, (x, h, tape)


def lstm_backward(p, cache, dpred):
    x, h_last, tape = cache
    wih, whh = p["lstm.weight_ih"], p["lstm.weight_hh"]
    g = {"fc.weight": dpred.T @ h_last, "fc.bias": dpred.sum(0)}
    dh = dpred @ p["fc.weight"]
    dc = np.zeros_like(dh)
    dwih, dwhh, db = np.zeros_like(wih), np.zeros_like(whh), np.zeros(wih.shape[0])
    for t in range(len(tape) - 1, -1, -1):
        h_prev, c_prev, i, f, gg, o, tc = tape[t]
        do = dh * tc
        dc = dc + dh * o * (1.0 - tc * tc)
        di, df, dg = dc * gg, dc * c_prev, dc * i
        da = np.concatenate([di * i * (1 - i), df * f * (1 - f), dg * (1 - gg * gg), do * o * (1 - o)], axis=1)
        dwih += da.T @ x[:, t]
        dwhh += da.T @ h_prev
        db += da.sum(0)
        dh = da @ whh
        dc = dc * f
    g["lstm.weight_ih"], g["lstm.weight_hh"] = dwih, dwhh
    if "lstm.bias" in p:
        g["lstm.bias"] = db
    else:
        g["lstm.bias_ih"], g["lstm.bias_hh"] = db, db.copy()
    return g


def lstm_loss(p, x, y):
    pred, cache = lstm_forward(p, x)
    loss, d = L.mse(pred, y)
    return loss, lstm_backward(p, cache, d)


def lstm_params(p, biases=1):
    """Canonical LSTM weights with one bias -> the two-bias form when biases=2
    (the bias goes to bias_ih, zeros to bias_hh, as docs/workloads.md says)."""
    p = dict(p)
    if biases == 2 and "lstm.bias" in p:
        b = p.pop("lstm.bias")
        p["lstm.bias_ih"], p["lstm.bias_hh"] = b, np.zeros_like(b)
    return p


def lstm_train(p, batches, lr=1e-3):
    """k LSTM steps (see nb.reference._train)."""
    return L._train(p, batches, lr, lambda q, x, y: lstm_loss(q, x, np.asarray(y, np.float64)))

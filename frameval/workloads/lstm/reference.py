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


# ------------------------------------------------------------------ the GRU (-p lstm.cell=gru)
def gru_forward(p, x):
    """Zero initial state, gates r, z, n (PyTorch's and cuDNN's order), the reset applied after the
    hidden product (Keras' reset_after=True): n = tanh(W_in x + b_in + r * (W_hn h + b_hn)),
    h' = (1 - z) * n + z * h; the last hidden state -> dense. x (N, T, in). -> pred (N, out), cache."""
    wih, whh, bih, bhh = p["gru.weight_ih"], p["gru.weight_hh"], p["gru.bias_ih"], p["gru.bias_hh"]
    n_, steps, _ = x.shape
    hd = whh.shape[1]
    h = np.zeros((n_, hd))
    tape = []
    for t in range(steps):
        ax, ah = x[:, t] @ wih.T + bih, h @ whh.T + bhh
        r = L.sigmoid(ax[:, :hd] + ah[:, :hd])
        z = L.sigmoid(ax[:, hd:2 * hd] + ah[:, hd:2 * hd])
        n = np.tanh(ax[:, 2 * hd:] + r * ah[:, 2 * hd:])
        h_prev = h
        h = (1.0 - z) * n + z * h_prev
        tape.append((h_prev, r, z, n, ah[:, 2 * hd:]))
    pred = L.dense(h, p["fc.weight"], p["fc.bias"])
    return pred, (x, h, tape)


def gru_backward(p, cache, dpred):
    x, h_last, tape = cache
    wih, whh = p["gru.weight_ih"], p["gru.weight_hh"]
    g = {"fc.weight": dpred.T @ h_last, "fc.bias": dpred.sum(0)}
    dh = dpred @ p["fc.weight"]
    dwih, dwhh = np.zeros_like(wih), np.zeros_like(whh)
    dbih, dbhh = np.zeros(wih.shape[0]), np.zeros(whh.shape[0])
    for t in range(len(tape) - 1, -1, -1):
        h_prev, r, z, n, ahn = tape[t]
        dn = dh * (1.0 - z)
        dz = dh * (h_prev - n)
        dan = dn * (1.0 - n * n)          # into W_in x + b_in, and through r into W_hn h + b_hn
        dar = dan * ahn * r * (1.0 - r)
        daz = dz * z * (1.0 - z)
        dax = np.concatenate([dar, daz, dan], axis=1)
        dah = np.concatenate([dar, daz, dan * r], axis=1)
        dwih += dax.T @ x[:, t]
        dwhh += dah.T @ h_prev
        dbih += dax.sum(0)
        dbhh += dah.sum(0)
        dh = dh * z + dah @ whh
    g["gru.weight_ih"], g["gru.weight_hh"], g["gru.bias_ih"], g["gru.bias_hh"] = dwih, dwhh, dbih, dbhh
    return g


def gru_loss(p, x, y):
    pred, cache = gru_forward(p, x)
    loss, d = L.mse(pred, y)
    return loss, gru_backward(p, cache, d)


def is_gru(p) -> bool:
    return "gru.weight_ih" in p


def forward(p, x):
    """The recurrent network the weights are: an LSTM's or a GRU's forward."""
    return (gru_forward if is_gru(p) else lstm_forward)(p, x)


def train(p, batches, lr=1e-3):
    """k steps of the network the weights are (see nb.reference._train)."""
    loss = gru_loss if is_gru(p) else lstm_loss
    return L._train(p, batches, lr, lambda q, x, y: loss(q, x, np.asarray(y, np.float64)))

"""The shared layer maths of the workloads' numpy (float64) references, as
`docs/workloads.md` defines them: layers with hand-written backward passes,
losses, plain Adam and the k-step loop. Each workload composes its network
from these in its own folder (frameval/workloads/<name>/reference.py).

It is what `frameval.nb.check` compares every framework against: the forward
outputs of a fresh model and the weights after one training step. Numpy and
the standard library only (it runs inside every framework's environment).

Conventions (canonical, see `weights.py`): NCHW; conv weight (out, in, kh, kw);
transposed-conv weight (in, out, kh, kw); dense (out, in); LSTM gates i, f, c, o
with W_ih (4h, in), W_hh (4h, h) and one bias (4h) - or two, `lstm.bias_ih`
and `lstm.bias_hh`, for frameworks that keep two vectors.

Padding, defined once: a stride-2 conv 5x5 pads 2 on every side; a stride-2
transposed conv 5x5 computes the full output (2H+3) and crops 2 at the start and
1 at the end (PyTorch `padding=2, output_padding=1`); stride-1 layers pad (or
crop) 2 on every side.
"""
from __future__ import annotations

import numpy as np

LEAK = 0.2                        # LeakyReLU slope (DCGAN)
BN_EPS = 1e-5
BN_MOMENTUM = 0.1                 # running = (1 - 0.1) * running + 0.1 * batch
ADAM = dict(betas=(0.9, 0.999), eps=1e-8)
# (top, bottom, left, right): padding of the stride-2 convs, crop of the stride-2
# transposed convs. Module constants so a test can build a deliberately wrong variant.
STRIDE2_CONV_PAD = (2, 2, 2, 2)
STRIDE2_DECONV_CROP = (2, 1, 2, 1)
SAME1 = (2, 2, 2, 2)


def as64(params: dict) -> dict:
    return {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}


# --------------------------------------------------------------------- im2col
def _pad4(pad):
    return (pad,) * 4 if np.isscalar(pad) else tuple(pad)


def _pad(x, pad):
    t, b, l, r = pad
    if t == b == l == r == 0:
        return x
    return np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)))


def _im2col(xp, kh, kw, stride, ho, wo):
    """(N, C, Hp, Wp) -> (C*kh*kw, N*ho*wo)."""
    n, c = xp.shape[:2]
    xt = xp.transpose(1, 0, 2, 3)
    cols = np.empty((c, kh, kw, n, ho, wo), dtype=xp.dtype)
    for i in range(kh):
        for j in range(kw):
            cols[:, i, j] = xt[:, :, i:i + stride * (ho - 1) + 1:stride, j:j + stride * (wo - 1) + 1:stride]
    return cols.reshape(c * kh * kw, n * ho * wo)


def _col2im(cols, c, kh, kw, n, ho, wo, stride, hp, wp):
    """Adjoint of _im2col: (C*kh*kw, N*ho*wo) -> (N, C, hp, wp), overlaps summed."""
    cols = cols.reshape(c, kh, kw, n, ho, wo)
    out = np.zeros((c, n, hp, wp), dtype=cols.dtype)
    for i in range(kh):
        for j in range(kw):
            out[:, :, i:i + stride * (ho - 1) + 1:stride, j:j + stride * (wo - 1) + 1:stride] += cols[:, i, j]
    return out.transpose(1, 0, 2, 3)


# ----------------------------------------------------------------------- layers
def conv2d(x, w, b=None, stride=1, pad=0):
    """Cross-correlation, weight (out, in, kh, kw). Returns y, cache."""
    pad = _pad4(pad)
    xp = _pad(x, pad)
    n, _, hp, wp = xp.shape
    o, c, kh, kw = w.shape
    ho, wo = (hp - kh) // stride + 1, (wp - kw) // stride + 1
    cols = _im2col(xp, kh, kw, stride, ho, wo)
    y = (w.reshape(o, -1) @ cols).reshape(o, n, ho, wo).transpose(1, 0, 2, 3)
    if b is not None:
        y = y + b[None, :, None, None]
    return y, (xp.shape, w, cols, stride, pad, ho, wo)


def conv2d_backward(dy, cache, need_dx=True):
    """-> dx (None unless need_dx), dw, db."""
    (n, c, hp, wp), w, cols, stride, (t, bo, l, r), ho, wo = cache
    o, _, kh, kw = w.shape
    dy2 = dy.transpose(1, 0, 2, 3).reshape(o, -1)
    dw = (dy2 @ cols.T).reshape(w.shape)
    if not need_dx:
        return None, dw, dy.sum(axis=(0, 2, 3))
    dxp = _col2im(w.reshape(o, -1).T @ dy2, c, kh, kw, n, ho, wo, stride, hp, wp)
    return dxp[:, :, t:hp - bo, l:wp - r], dw, dy.sum(axis=(0, 2, 3))


def conv_transpose2d(x, w, stride=1, crop=0):
    """Transposed conv, weight (in, out, kh, kw): the full output
    ((H-1)*stride + kh) cropped by `crop` = (top, bottom, left, right)."""
    crop = _pad4(crop)
    n, ci, h, wd = x.shape
    _, co, kh, kw = w.shape
    hf, wf = (h - 1) * stride + kh, (wd - 1) * stride + kw
    x2 = x.transpose(1, 0, 2, 3).reshape(ci, -1)
    full = _col2im(w.reshape(ci, -1).T @ x2, co, kh, kw, n, h, wd, stride, hf, wf)
    t, b, l, r = crop
    return full[:, :, t:hf - b, l:wf - r], (x2, x.shape, w, stride, crop)


def conv_transpose2d_backward(dy, cache):
    """-> dx, dw."""
    x2, (n, ci, h, wd), w, stride, crop = cache
    _, co, kh, kw = w.shape
    dcols = _im2col(_pad(dy, crop), kh, kw, stride, h, wd)  # (co*kh*kw, n*h*wd)
    dx = (w.reshape(ci, -1) @ dcols).reshape(ci, n, h, wd).transpose(1, 0, 2, 3)
    return dx, (x2 @ dcols.T).reshape(w.shape)


def batchnorm_train(x, gamma, beta, running_mean=None, running_var=None, eps=BN_EPS, momentum=BN_MOMENTUM):
    """BatchNorm2d with batch statistics. Returns y, cache, (new_mean, new_var):
    the running statistics updated once (unbiased batch variance, as PyTorch)."""
    m = x.shape[0] * x.shape[2] * x.shape[3]
    mu = x.mean(axis=(0, 2, 3))
    var = x.var(axis=(0, 2, 3))
    inv = 1.0 / np.sqrt(var + eps)
    xhat = (x - mu[None, :, None, None]) * inv[None, :, None, None]
    y = gamma[None, :, None, None] * xhat + beta[None, :, None, None]
    new = None
    if running_mean is not None:
        new = ((1 - momentum) * running_mean + momentum * mu,
               (1 - momentum) * running_var + momentum * var * m / (m - 1))
    return y, (xhat, inv, gamma, m), new


def batchnorm_eval(x, gamma, beta, running_mean, running_var, eps=BN_EPS):
    inv = 1.0 / np.sqrt(running_var + eps)
    return (gamma * inv)[None, :, None, None] * (x - running_mean[None, :, None, None]) + beta[None, :, None, None]


def batchnorm_backward(dy, cache):
    """-> dx, dgamma, dbeta."""
    xhat, inv, gamma, m = cache
    dbeta = dy.sum(axis=(0, 2, 3))
    dgamma = (dy * xhat).sum(axis=(0, 2, 3))
    dxhat = dy * gamma[None, :, None, None]
    dx = (inv[None, :, None, None] / m) * (m * dxhat - dxhat.sum(axis=(0, 2, 3))[None, :, None, None]
                                           - xhat * (dxhat * xhat).sum(axis=(0, 2, 3))[None, :, None, None])
    return dx, dgamma, dbeta


def leaky_relu(x, slope=LEAK):
    return np.where(x > 0, x, slope * x)


class Kink:
    """Kink ambiguity, asked for by the check (frameval/nb/check.py): a
    pre-activation within `fraction` * RMS of its layer from the (Leaky)ReLU's
    kink has a sign float32 rounding can decide. Handed to the backward, it
    takes the OTHER branch for those elements and counts them in `flips`,
    giving the gradients a float32 framework may legitimately compute. A
    parameter, not a module setting: the reference stays one function."""

    def __init__(self, fraction: float):
        self.fraction, self.flips = fraction, 0

    def backward(self, dy, x, d, below):
        """dy * the slope `d`, with the elements near the kink on the other branch
        (`below`: the slope under the kink; 1 above it). Counted only where a
        gradient arrives (a max-pool passes none to the inputs it did not pick)."""
        near = (np.abs(x) < self.fraction * np.sqrt(np.mean(x * x))) & (dy != 0)
        if not near.any():
            return dy * d
        self.flips += int(near.sum())
        return dy * np.where(near, np.where(x > 0, below, 1.0), d)


def leaky_relu_backward(dy, x, slope=LEAK, kink=None):
    d = np.where(x > 0, 1.0, slope)
    return dy * d if kink is None else kink.backward(dy, x, d, slope)


def relu(x):
    return np.maximum(x, 0.0)


def relu_backward(dy, x, kink=None):
    d = (x > 0).astype(np.float64)
    return dy * d if kink is None else kink.backward(dy, x, d, 0.0)


def maxpool2(x):
    """2x2 max-pool, stride 2; ties go to the first element (row-major), as PyTorch."""
    n, c, h, w = x.shape
    xr = x.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, c, h // 2, w // 2, 4)
    idx = xr.argmax(axis=-1)
    return np.take_along_axis(xr, idx[..., None], -1)[..., 0], (x.shape, idx)


def maxpool2_backward(dy, cache):
    (n, c, h, w), idx = cache
    d = np.zeros((n, c, h // 2, w // 2, 4), dtype=dy.dtype)
    np.put_along_axis(d, idx[..., None], dy[..., None], -1)
    return d.reshape(n, c, h // 2, w // 2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, c, h, w)


def dense(x, w, b=None):
    y = x @ w.T
    return y if b is None else y + b


def sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


# ------------------------------------------------------------------------ losses
def softmax_cross_entropy(logits, labels):
    """Mean over the batch. -> loss, dlogits."""
    n = logits.shape[0]
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    labels = np.asarray(labels).astype(np.int64).reshape(-1)
    loss = -logp[np.arange(n), labels].mean()
    d = np.exp(logp)
    d[np.arange(n), labels] -= 1.0
    return float(loss), d / n


def bce_with_logits(logits, target):
    """Binary cross-entropy on logits, mean over all elements. -> loss, dlogits."""
    loss = np.mean(np.logaddexp(0.0, logits) - target * logits)
    return float(loss), (sigmoid(logits) - target) / logits.size


def mse(pred, target):
    diff = pred - target
    return float(np.mean(diff ** 2)), 2.0 * diff / diff.size


# ---------------------------------------------------------------------- optimizer
def adam_step(params: dict, grads: dict, state: dict, lr: float, betas=ADAM["betas"], eps=ADAM["eps"]) -> dict:
    """Plain Adam with bias correction (PyTorch's formula: eps added to the
    bias-corrected sqrt(v)). Returns new params; `state` is updated in place."""
    b1, b2 = betas
    t = state["t"] = state.get("t", 0) + 1
    out = dict(params)
    for k, g in grads.items():
        m0, v0 = state.setdefault("m", {}).get(k), state.setdefault("v", {}).get(k)
        m = (1 - b1) * g if m0 is None else b1 * m0 + (1 - b1) * g
        v = (1 - b2) * (g * g) if v0 is None else b2 * v0 + (1 - b2) * (g * g)
        state["m"][k], state["v"][k] = m, v
        denom = np.sqrt(v * (1.0 / (1 - b2 ** t)))
        denom += eps
        out[k] = params[k] - (lr / (1 - b1 ** t)) * m / denom
    return out


# ----------------------------------------------------------------- k steps
def _train(p, batches, lr, loss_fn):
    """k Adam steps from a fresh state, one per batch ({"x", "y"}).
    -> {"losses": [{"loss"}] per step, "grads": the first step's, "grad_min": the
    smallest magnitude of each element's gradient over the steps, "weights": after
    the last step}."""
    p, state, losses, first, small = as64(p), {}, [], None, {}
    for b in batches:
        loss, g = loss_fn(p, np.asarray(b["x"], np.float64), b["y"])
        first = g if first is None else first
        _track_min(small, g)
        losses.append({"loss": loss})
        p = adam_step(p, g, state, lr)
    return {"losses": losses, "grads": first, "grad_min": small, "weights": p}


def _track_min(small, grads):
    for k, v in grads.items():
        small[k] = np.abs(v) if k not in small else np.minimum(small[k], np.abs(v))

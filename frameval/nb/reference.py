"""A numpy (float64) reference of the three workloads, exactly as
`docs/workloads.md` defines them, with hand-written backward passes and plain Adam.

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


# -------------------------------------------------------------------------- LeNet
def lenet_forward(p, x):
    """-> logits (N, 10), cache."""
    a1, c1 = conv2d(x, p["conv1.weight"], p["conv1.bias"], 1, 2)
    p1, m1 = maxpool2(relu(a1))
    a2, c2 = conv2d(p1, p["conv2.weight"], p["conv2.bias"], 1, 0)
    p2, m2 = maxpool2(relu(a2))
    f = p2.reshape(len(x), -1)
    h1 = dense(f, p["fc1.weight"], p["fc1.bias"])
    h2 = dense(relu(h1), p["fc2.weight"], p["fc2.bias"])
    logits = dense(relu(h2), p["fc3.weight"], p["fc3.bias"])
    return logits, (a1, c1, m1, a2, c2, m2, p2.shape, f, h1, h2)


def lenet_backward(p, cache, dlogits, kink=None):
    a1, c1, m1, a2, c2, m2, p2shape, f, h1, h2 = cache
    g = {}
    r2 = relu(h2)
    g["fc3.weight"], g["fc3.bias"] = dlogits.T @ r2, dlogits.sum(0)
    dh2 = relu_backward(dlogits @ p["fc3.weight"], h2, kink)
    r1 = relu(h1)
    g["fc2.weight"], g["fc2.bias"] = dh2.T @ r1, dh2.sum(0)
    dh1 = relu_backward(dh2 @ p["fc2.weight"], h1, kink)
    g["fc1.weight"], g["fc1.bias"] = dh1.T @ f, dh1.sum(0)
    dp2 = (dh1 @ p["fc1.weight"]).reshape(p2shape)
    da2 = relu_backward(maxpool2_backward(dp2, m2), a2, kink)
    dp1, g["conv2.weight"], g["conv2.bias"] = conv2d_backward(da2, c2)
    da1 = relu_backward(maxpool2_backward(dp1, m1), a1, kink)
    _, g["conv1.weight"], g["conv1.bias"] = conv2d_backward(da1, c1, need_dx=False)
    return g


def lenet_loss(p, x, y, kink=None):
    logits, cache = lenet_forward(p, x)
    loss, dl = softmax_cross_entropy(logits, y)
    return loss, lenet_backward(p, cache, dl, kink)


def lenet_step(p, x, y, lr=1e-3):
    """One Adam step from fresh Adam state. -> {"losses": {"loss"}, "weights": new params}."""
    r = lenet_train(p, [{"x": x, "y": y}], lr)
    return {"losses": r["losses"][0], "weights": r["weights"], "grads": r["grads"]}


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


def lenet_train(p, batches, lr=1e-3, kink=None):
    """k LeNet steps (see _train); `kink`: the ReLU inputs near the kink on the other branch."""
    return _train(p, batches, lr, lambda q, x, y: lenet_loss(q, x, y, kink))


# -------------------------------------------------------------------------- DCGAN
def generator_forward(p, z, train=True):
    """-> images (N, 1, 28, 28), cache, new running statistics {name: array}
    (train=True: BatchNorm on batch statistics; False: running statistics)."""
    n = len(z)
    h0 = dense(z, p["fc.weight"]).reshape(n, 256, 7, 7)  # channel-major
    caches, running = [], {}
    x = h0
    layers = [("bn0", "deconv1", 1, SAME1), ("bn1", "deconv2", 2, STRIDE2_DECONV_CROP),
              ("bn2", "deconv3", 2, STRIDE2_DECONV_CROP)]
    for bn, dc, stride, crop in layers:
        if train:
            y, bcache, new = batchnorm_train(x, p[f"{bn}.weight"], p[f"{bn}.bias"],
                                             p.get(f"{bn}.running_mean"), p.get(f"{bn}.running_var"))
            if new is not None:
                running[f"{bn}.running_mean"], running[f"{bn}.running_var"] = new
        else:
            y, bcache = batchnorm_eval(x, p[f"{bn}.weight"], p[f"{bn}.bias"], p[f"{bn}.running_mean"],
                                       p[f"{bn}.running_var"]), None
        x, dcache = conv_transpose2d(leaky_relu(y), p[f"{dc}.weight"], stride, crop)
        caches.append((bn, dc, y, bcache, dcache))
    img = np.tanh(x)
    return img, (z, caches, img), running


def generator_backward(p, cache, dimg, kink=None):
    z, caches, img = cache
    g = {}
    d = dimg * (1.0 - img * img)
    for bn, dc, y, bcache, dcache in reversed(caches):
        d, g[f"{dc}.weight"] = conv_transpose2d_backward(d, dcache)
        d, g[f"{bn}.weight"], g[f"{bn}.bias"] = batchnorm_backward(leaky_relu_backward(d, y, kink=kink), bcache)
    g["fc.weight"] = d.reshape(len(z), -1).T @ z
    return g


def discriminator_forward(p, x):
    """Dropout off. -> logits (N, 1), cache."""
    a1, c1 = conv2d(x, p["conv1.weight"], p["conv1.bias"], 2, STRIDE2_CONV_PAD)
    a2, c2 = conv2d(leaky_relu(a1), p["conv2.weight"], p["conv2.bias"], 2, STRIDE2_CONV_PAD)
    f = leaky_relu(a2).reshape(len(x), -1)  # channel-major flatten of (128, 7, 7)
    return dense(f, p["fc.weight"], p["fc.bias"]), (a1, c1, a2, c2, f)


def discriminator_backward(p, cache, dlogits, need_dx=True, kink=None):
    """-> grads, dx (None unless need_dx)."""
    a1, c1, a2, c2, f = cache
    g = {"fc.weight": dlogits.T @ f, "fc.bias": dlogits.sum(0)}
    da2 = leaky_relu_backward((dlogits @ p["fc.weight"]).reshape(a2.shape), a2, kink=kink)
    d1, g["conv2.weight"], g["conv2.bias"] = conv2d_backward(da2, c2)
    dx, g["conv1.weight"], g["conv1.bias"] = conv2d_backward(leaky_relu_backward(d1, a1, kink=kink), c1, need_dx)
    return g, dx


def _trainable(p):
    return {k: v for k, v in p.items() if not k.endswith(("running_mean", "running_var"))}


def dcgan_step(gp, dp, x, z, lr=1e-4, states=None, kink=None):
    """The DCGAN step of docs/notebooks.md (from fresh Adam states unless
    `states` = ({}, {}) carried between calls):
    fake = G(z) (train-mode BatchNorm); D step on BCE(D(x),1) + BCE(D(fake),0);
    G step on BCE(D_updated(fake),1) through the same fake. `kink`: a Kink, or None.
    -> {"losses": {"d_loss", "g_loss"}, "generator": new G (with running stats),
        "discriminator": new D, "grads": {"generator": of g_loss, "discriminator": of d_loss}}."""
    sg, sd = states if states is not None else ({}, {})
    gp, dp = as64(gp), as64(dp)
    x, z = np.asarray(x, np.float64), np.asarray(z, np.float64)
    fake, gcache, running = generator_forward(gp, z, train=True)
    real_logits, rc = discriminator_forward(dp, x)
    fake_logits, fc = discriminator_forward(dp, fake)
    l_real, d_real = bce_with_logits(real_logits, 1.0)
    l_fake, d_fake = bce_with_logits(fake_logits, 0.0)
    gr, _ = discriminator_backward(dp, rc, d_real, need_dx=False, kink=kink)
    gf, _ = discriminator_backward(dp, fc, d_fake, need_dx=False, kink=kink)
    dp1 = adam_step(dp, {k: gr[k] + gf[k] for k in gr}, sd, lr)
    g_logits, gc = discriminator_forward(dp1, fake)
    g_loss, dg = bce_with_logits(g_logits, 1.0)
    _, dfake = discriminator_backward(dp1, gc, dg, kink=kink)
    gg = generator_backward(gp, gcache, dfake, kink=kink)
    gp1 = adam_step(_trainable(gp), gg, sg, lr)
    gp1.update(running)
    return {"losses": {"d_loss": l_real + l_fake, "g_loss": g_loss}, "generator": gp1, "discriminator": dp1,
            "grads": {"generator": gg, "discriminator": {k: gr[k] + gf[k] for k in gr}}}


def dcgan_train(gp, dp, batches, lr=1e-4, kink=None):
    """k DCGAN steps ({"x", "z"} per batch) with Adam states carried over.
    -> {"losses": [{"d_loss", "g_loss"}] per step, "grads" / "grad_min":
    {"generator.<name>" / "discriminator.<name>": ...} (first step / smallest
    magnitude over the steps), "weights": {"generator.<name>" (with running
    statistics), "discriminator.<name>"}}."""
    states, losses, first, small = ({}, {}), [], None, {}
    for b in batches:
        r = dcgan_step(gp, dp, b["x"], b["z"], lr, states, kink=kink)
        gp, dp = r["generator"], r["discriminator"]
        g = {f"{net}.{k}": v for net in ("generator", "discriminator") for k, v in r["grads"][net].items()}
        first = g if first is None else first
        _track_min(small, g)
        losses.append(r["losses"])
    weights = {**{f"generator.{k}": v for k, v in gp.items()}, **{f"discriminator.{k}": v for k, v in dp.items()}}
    return {"losses": losses, "grads": first, "grad_min": small, "weights": weights}


# --------------------------------------------------------------------------- LSTM
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
        i, f, g, o = sigmoid(a[:, :hd]), sigmoid(a[:, hd:2 * hd]), np.tanh(a[:, 2 * hd:3 * hd]), sigmoid(a[:, 3 * hd:])
        c_prev, h_prev = c, h
        c = f * c + i * g
        tc = np.tanh(c)
        h = o * tc
        tape.append((h_prev, c_prev, i, f, g, o, tc))
    pred = dense(h, p["fc.weight"], p["fc.bias"])
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
    loss, d = mse(pred, y)
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
    """k LSTM steps (see _train)."""
    return _train(p, batches, lr, lambda q, x, y: lstm_loss(q, x, np.asarray(y, np.float64)))

"""The DCGAN's float64 reference (docs/workloads.md): its forward and its
hand-written backward, built from the shared layer maths of
`frameval.nb.reference` (read through the module, so a test that patches a
layer there patches it here too). Numpy and the standard library only; the
workload's record loads it lazily (frameval/workloads/dcgan/__init__.py).
"""
from __future__ import annotations

import numpy as np

from ...nb import reference as L


def generator_forward(p, z, train=True):
    """-> images (N, 1, 28, 28), cache, new running statistics {name: array}
    (train=True: BatchNorm on batch statistics; False: running statistics)."""
    n = len(z)
    h0 = L.dense(z, p["fc.weight"]).reshape(n, 256, 7, 7)  # channel-major
    caches, running = [], {}
    x = h0
    layers = [("bn0", "deconv1", 1, L.SAME1), ("bn1", "deconv2", 2, L.STRIDE2_DECONV_CROP),
              ("bn2", "deconv3", 2, L.STRIDE2_DECONV_CROP)]
    for bn, dc, stride, crop in layers:
        if train:
            y, bcache, new = L.batchnorm_train(x, p[f"{bn}.weight"], p[f"{bn}.bias"],
                                             p.get(f"{bn}.running_mean"), p.get(f"{bn}.running_var"))
            if new is not None:
                running[f"{bn}.running_mean"], running[f"{bn}.running_var"] = new
        else:
            y, bcache = L.batchnorm_eval(x, p[f"{bn}.weight"], p[f"{bn}.bias"], p[f"{bn}.running_mean"],
                                       p[f"{bn}.running_var"]), None
        x, dcache = L.conv_transpose2d(L.leaky_relu(y), p[f"{dc}.weight"], stride, crop)
        caches.append((bn, dc, y, bcache, dcache))
    img = np.tanh(x)
    return img, (z, caches, img), running


def generator_backward(p, cache, dimg, kink=None):
    z, caches, img = cache
    g = {}
    d = dimg * (1.0 - img * img)
    for bn, dc, y, bcache, dcache in reversed(caches):
        d, g[f"{dc}.weight"] = L.conv_transpose2d_backward(d, dcache)
        d, g[f"{bn}.weight"], g[f"{bn}.bias"] = L.batchnorm_backward(L.leaky_relu_backward(d, y, kink=kink), bcache)
    g["fc.weight"] = d.reshape(len(z), -1).T @ z
    return g


def discriminator_forward(p, x):
    """Dropout off. -> logits (N, 1), cache."""
    a1, c1 = L.conv2d(x, p["conv1.weight"], p["conv1.bias"], 2, L.STRIDE2_CONV_PAD)
    a2, c2 = L.conv2d(L.leaky_relu(a1), p["conv2.weight"], p["conv2.bias"], 2, L.STRIDE2_CONV_PAD)
    f = L.leaky_relu(a2).reshape(len(x), -1)  # channel-major flatten of (128, 7, 7)
    return L.dense(f, p["fc.weight"], p["fc.bias"]), (a1, c1, a2, c2, f)


def discriminator_backward(p, cache, dlogits, need_dx=True, kink=None):
    """-> grads, dx (None unless need_dx)."""
    a1, c1, a2, c2, f = cache
    g = {"fc.weight": dlogits.T @ f, "fc.bias": dlogits.sum(0)}
    da2 = L.leaky_relu_backward((dlogits @ p["fc.weight"]).reshape(a2.shape), a2, kink=kink)
    d1, g["conv2.weight"], g["conv2.bias"] = L.conv2d_backward(da2, c2)
    dx, g["conv1.weight"], g["conv1.bias"] = L.conv2d_backward(L.leaky_relu_backward(d1, a1, kink=kink), c1, need_dx)
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
    gp, dp = L.as64(gp), L.as64(dp)
    x, z = np.asarray(x, np.float64), np.asarray(z, np.float64)
    fake, gcache, running = generator_forward(gp, z, train=True)
    real_logits, rc = discriminator_forward(dp, x)
    fake_logits, fc = discriminator_forward(dp, fake)
    l_real, d_real = L.bce_with_logits(real_logits, 1.0)
    l_fake, d_fake = L.bce_with_logits(fake_logits, 0.0)
    gr, _ = discriminator_backward(dp, rc, d_real, need_dx=False, kink=kink)
    gf, _ = discriminator_backward(dp, fc, d_fake, need_dx=False, kink=kink)
    dp1 = L.adam_step(dp, {k: gr[k] + gf[k] for k in gr}, sd, lr)
    g_logits, gc = discriminator_forward(dp1, fake)
    g_loss, dg = L.bce_with_logits(g_logits, 1.0)
    _, dfake = discriminator_backward(dp1, gc, dg, kink=kink)
    gg = generator_backward(gp, gcache, dfake, kink=kink)
    gp1 = L.adam_step(_trainable(gp), gg, sg, lr)
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
        L._track_min(small, g)
        losses.append(r["losses"])
    weights = {**{f"generator.{k}": v for k, v in gp.items()}, **{f"discriminator.{k}": v for k, v in dp.items()}}
    return {"losses": losses, "grads": first, "grad_min": small, "weights": weights}

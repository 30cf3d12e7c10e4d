"""The small GPT in numpy float64, exactly as docs/workloads.md ("GPT: adding
integers") defines it, with hand-written backward passes and the spec's AdamW:
what the numerical check compares every framework's GPT against. Numpy and
the standard library only (it runs inside every framework's environment).

Weights: a dict of canonical names and layouts (`spec.weight_table`), dense
(out, in). Tokens: int arrays (batch, time).
"""
from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np

from .spec import ADAMW, SPEC, STREAM, Config, decayed, init_std, weight_table

# math.erf is the C library's, correct to about one unit in the last place;
# numpy has none (and the common polynomial approximations are good to 1e-7
# only), so the reference applies it element by element. frompyfunc returns
# objects; `erf` casts back.
_ERF = np.frompyfunc(math.erf, 1, 1)
_SQRT2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def erf(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return _ERF(x).astype(np.float64) if x.ndim else np.float64(math.erf(float(x)))


def init_weights(seed: int = 0, cfg: Config = SPEC) -> "OrderedDict[str, np.ndarray]":
    """Float64 initial weights from `RandomState([seed, 104])`, drawn in the
    table's order: normal(0, 0.02), the residual projections normal(0,
    0.02/sqrt(2 x blocks)), biases 0, LayerNorm scales 1. Each framework takes
    these (cast to float32) and maps them into its own layout."""
    rng = np.random.RandomState([seed, 100 + STREAM])
    out = OrderedDict()
    for name, shape, kind in weight_table(cfg):
        if kind == "zeros":
            out[name] = np.zeros(shape)
        elif kind == "ones":
            out[name] = np.ones(shape)
        else:
            out[name] = rng.standard_normal(shape) * init_std(kind, cfg)
    return out


# ------------------------------------------------------------------ layers
def layernorm(x, g, b, eps=SPEC.ln_eps):
    """Over the last axis, biased variance. -> y, cache."""
    xc = x - x.mean(axis=-1, keepdims=True)
    rstd = 1.0 / np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + eps)
    xh = xc * rstd
    return xh * g + b, (xh, rstd, g)


def layernorm_backward(dy, cache):
    """-> dx, dscale, dbias."""
    xh, rstd, g = cache
    lead = tuple(range(dy.ndim - 1))
    dxh = dy * g
    dx = rstd * (dxh - dxh.mean(axis=-1, keepdims=True) - xh * (dxh * xh).mean(axis=-1, keepdims=True))
    return dx, (dy * xh).sum(axis=lead), dy.sum(axis=lead)


def linear(x, w, b):
    return x @ w.T + b


def linear_backward(dy, x, w):
    """-> dx, dw, db for y = x w^T + b over any leading axes."""
    d2, x2 = dy.reshape(-1, dy.shape[-1]), x.reshape(-1, x.shape[-1])
    return dy @ w, d2.T @ x2, d2.sum(axis=0)


def gelu(x):
    """Exact GELU, x * Phi(x), Phi the standard normal's distribution function."""
    return x * (0.5 * (1.0 + erf(x / _SQRT2)))


def gelu_backward(dy, x):
    cdf = 0.5 * (1.0 + erf(x / _SQRT2))
    return dy * (cdf + x * _INV_SQRT_2PI * np.exp(-0.5 * x * x))


def _heads(z, heads):
    b, t, c = z.shape
    return z.reshape(b, t, heads, c // heads).transpose(0, 2, 1, 3)


def _merge(z):
    b, h, t, d = z.shape
    return z.transpose(0, 2, 1, 3).reshape(b, t, h * d)


def attention(qkv, heads):
    """Causal softmax attention of (B, T, 3C) projections (query, key, value,
    each `heads` consecutive blocks). -> (B, T, C), cache."""
    c = qkv.shape[-1] // 3
    q, k, v = (_heads(qkv[..., i * c:(i + 1) * c], heads) for i in range(3))
    scale = 1.0 / math.sqrt(q.shape[-1])
    s = (q @ k.transpose(0, 1, 3, 2)) * scale
    t = s.shape[-1]
    s = np.where(np.tril(np.ones((t, t), dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return _merge(p @ v), (q, k, v, p, scale, heads)


def attention_backward(dout, cache):
    """-> d(qkv) (B, T, 3C). Masked scores have p = 0, so no gradient."""
    q, k, v, p, scale, heads = cache
    do = _heads(dout, heads)
    dp = do @ v.transpose(0, 1, 3, 2)
    dv = p.transpose(0, 1, 3, 2) @ do
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))
    dq = (ds @ k) * scale
    dk = (ds.transpose(0, 1, 3, 2) @ q) * scale
    return np.concatenate([_merge(dq), _merge(dk), _merge(dv)], axis=-1)


def cross_entropy(logits, targets):
    """Mean over every position of (B, T, V) logits. -> loss, dlogits."""
    v = logits.shape[-1]
    z = logits.reshape(-1, v)
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    y = np.asarray(targets).astype(np.int64).reshape(-1)
    n = len(y)
    d = np.exp(logp)
    d[np.arange(n), y] -= 1.0
    return float(-logp[np.arange(n), y].mean()), (d / n).reshape(logits.shape)


# ------------------------------------------------------------------ the model
def _block_forward(w, b, x, cfg):
    h1, c1 = layernorm(x, w[b + "ln1.weight"], w[b + "ln1.bias"], cfg.ln_eps)
    qkv = linear(h1, w[b + "attn.qkv.weight"], w[b + "attn.qkv.bias"])
    att, ca = attention(qkv, cfg.heads)
    x = x + linear(att, w[b + "attn.proj.weight"], w[b + "attn.proj.bias"])
    h2, c2 = layernorm(x, w[b + "ln2.weight"], w[b + "ln2.bias"], cfg.ln_eps)
    f = linear(h2, w[b + "mlp.fc.weight"], w[b + "mlp.fc.bias"])
    g = gelu(f)
    x = x + linear(g, w[b + "mlp.proj.weight"], w[b + "mlp.proj.bias"])
    return x, (c1, h1, ca, att, c2, h2, f, g)


def _block_backward(w, b, dx, cache, grads):
    """dx: the gradient at the block's output; -> at its input. Fills `grads`."""
    c1, h1, ca, att, c2, h2, f, g = cache
    dg, grads[b + "mlp.proj.weight"], grads[b + "mlp.proj.bias"] = linear_backward(dx, g, w[b + "mlp.proj.weight"])
    dh2, grads[b + "mlp.fc.weight"], grads[b + "mlp.fc.bias"] = linear_backward(
        gelu_backward(dg, f), h2, w[b + "mlp.fc.weight"])
    d, grads[b + "ln2.weight"], grads[b + "ln2.bias"] = layernorm_backward(dh2, c2)
    dx = dx + d
    datt, grads[b + "attn.proj.weight"], grads[b + "attn.proj.bias"] = linear_backward(
        dx, att, w[b + "attn.proj.weight"])
    dh1, grads[b + "attn.qkv.weight"], grads[b + "attn.qkv.bias"] = linear_backward(
        attention_backward(datt, ca), h1, w[b + "attn.qkv.weight"])
    d, grads[b + "ln1.weight"], grads[b + "ln1.bias"] = layernorm_backward(dh1, c1)
    return dx + d


def forward(w, tokens, cfg: Config = SPEC):
    """Logits (B, T, vocab) for int tokens (B, T), T <= context. -> logits, cache."""
    tokens = np.asarray(tokens).astype(np.int64)
    x = w["wte"][tokens] + w["wpe"][:tokens.shape[1]]
    caches = []
    for i in range(cfg.blocks):
        x, c = _block_forward(w, f"h{i}.", x, cfg)
        caches.append(c)
    xf, cf = layernorm(x, w["lnf.weight"], w["lnf.bias"], cfg.ln_eps)
    return xf @ w["wte"].T, (tokens, caches, xf, cf)


def backward(w, cache, dlogits, cfg: Config = SPEC) -> dict:
    """Gradients of every weight; the token embedding's gather both the
    output layer's (tied) and the input lookup's."""
    tokens, caches, xf, cf = cache
    grads = {}
    v = dlogits.shape[-1]
    dwte_out = dlogits.reshape(-1, v).T @ xf.reshape(-1, xf.shape[-1])
    dx, grads["lnf.weight"], grads["lnf.bias"] = layernorm_backward(dlogits @ w["wte"], cf)
    for i in reversed(range(cfg.blocks)):
        dx = _block_backward(w, f"h{i}.", dx, caches[i], grads)
    dwte = dwte_out.copy()
    np.add.at(dwte, tokens.reshape(-1), dx.reshape(-1, dx.shape[-1]))
    dwpe = np.zeros_like(w["wpe"])
    dwpe[:tokens.shape[1]] = dx.sum(axis=0)
    grads["wte"], grads["wpe"] = dwte, dwpe
    return {k: grads[k] for k in w}


def loss_and_grads(w, x, y, cfg: Config = SPEC):
    """Mean cross-entropy over every next token of (B, T) inputs x and targets y. -> loss, grads."""
    logits, cache = forward(w, x, cfg)
    loss, dlogits = cross_entropy(logits, y)
    return loss, backward(w, cache, dlogits, cfg)


# ------------------------------------------------------------------ training
def clip_by_global_norm(grads: dict, max_norm: float = ADAMW["clip_norm"]):
    """All gradients scaled by min(1, max_norm / their global L2 norm).
    -> clipped grads, the norm before. (PyTorch's clip_grad_norm_ divides by
    norm + 1e-6: a relative 1e-6, below float32's check tolerance.)"""
    norm = math.sqrt(sum(float(np.sum(g * g)) for g in grads.values()))
    scale = min(1.0, max_norm / norm) if norm > 0 else 1.0
    return {k: g * scale for k, g in grads.items()}, norm


def adamw_step(w: dict, grads: dict, state: dict, lr: float = ADAMW["lr"], betas=ADAMW["betas"],
               eps: float = ADAMW["eps"], weight_decay: float = ADAMW["weight_decay"]) -> dict:
    """AdamW as PyTorch writes it: a decayed weight first shrinks by
    lr x weight_decay (decoupled, not through the gradient), then the Adam
    step with bias correction, eps added to the corrected sqrt(v). Only
    `spec.decayed` weights decay. Returns new weights; `state` is updated in place."""
    b1, b2 = betas
    t = state["t"] = state.get("t", 0) + 1
    m_all, v_all = state.setdefault("m", {}), state.setdefault("v", {})
    out = {}
    for k, g in grads.items():
        m = b1 * m_all.get(k, 0.0) + (1 - b1) * g
        v = b2 * v_all.get(k, 0.0) + (1 - b2) * (g * g)
        m_all[k], v_all[k] = m, v
        p = w[k] * (1.0 - lr * weight_decay) if decayed(k) else w[k]
        out[k] = p - (lr / (1 - b1 ** t)) * m / (np.sqrt(v / (1 - b2 ** t)) + eps)
    return out


def train(w, batches, lr: float = ADAMW["lr"], cfg: Config = SPEC) -> dict:
    """k steps from a fresh AdamW state, one per batch ({"x", "y"}): loss,
    clipping at global norm 1, AdamW. -> {"losses": [{"loss"}], "grads": the
    first step's (before clipping), "grad_norms": each step's global norm
    before clipping, "weights": after the last step}."""
    w = {k: np.asarray(v, dtype=np.float64) for k, v in w.items()}
    state, losses, norms, first = {}, [], [], None
    for b in batches:
        loss, g = loss_and_grads(w, b["x"], b["y"], cfg)
        first = g if first is None else first
        clipped, norm = clip_by_global_norm(g)
        losses.append({"loss": loss})
        norms.append(norm)
        w = adamw_step(w, clipped, state, lr)
    return {"losses": losses, "grads": first, "grad_norms": norms, "weights": w}

"""Train the DCGAN distance's fixed MNIST classifier (frameval/workloads/dcgan/fid.py) and
write its weights, `frameval/workloads/dcgan/fid_classifier.npz`. Run once, offline; the
weights are committed, so no run ever trains it again.

    python3 tools/train_fid_classifier.py [OUT.npz]   # needs the full-MNIST cache: run_all.py --setup-only --data full

numpy only: an MLP 784→128→64→10 with ReLU, softmax cross-entropy, Adam.
It trains on the 55,000 full-MNIST training digits that are not in the
embedded 5k subset (all 5,000 of which are full-MNIST training digits), so
that both test sets the DCGAN may score against, the full 10,000 and the
embedded 1,000, are digits it never saw. Inputs in [-1, 1], as the generator
draws them. Prints the test accuracies docs/workloads.md documents.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from frameval.workloads.dcgan import fid  # noqa: E402
from frameval.nb.data import load_mnist  # noqa: E402

SIZES = (784, 128, 64, 10)
EPOCHS, BATCH, LR, DECAY, SEED = 20, 128, 1e-3, 0.8, 0


def training_digits():
    """Full MNIST's training digits less the embedded subset's 5,000."""
    full, emb = load_mnist("full"), load_mnist("embedded")
    seen = {x.tobytes() for x in np.concatenate([emb.x_train, emb.x_test])}
    keep = np.array([x.tobytes() not in seen for x in full.x_train])
    return full.x_train[keep].reshape(-1, 784), full.y_train[keep]


def init(rng):
    """He-uniform weights (ReLU), zero biases; dense layout (out, in)."""
    w = {}
    for i, (n_in, n_out) in enumerate(zip(SIZES, SIZES[1:]), 1):
        lim = np.sqrt(6.0 / n_in)
        w[f"w{i}"], w[f"b{i}"] = rng.uniform(-lim, lim, (n_out, n_in)).astype(np.float32), np.zeros(n_out, np.float32)
    return w


def grads(w, x, y):
    """Softmax cross-entropy's gradients by hand (the forward is fid.py's)."""
    h1 = np.maximum(x @ w["w1"].T + w["b1"], 0)
    h2 = np.maximum(h1 @ w["w2"].T + w["b2"], 0)
    z = h2 @ w["w3"].T + w["b3"]
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    p[np.arange(len(y)), y] -= 1
    d3 = p / len(y)
    d2 = (d3 @ w["w3"]) * (h2 > 0)
    d1 = (d2 @ w["w2"]) * (h1 > 0)
    return {"w3": d3.T @ h2, "b3": d3.sum(0), "w2": d2.T @ h1, "b2": d2.sum(0), "w1": d1.T @ x, "b1": d1.sum(0)}


def train(x, y):
    rng = np.random.RandomState(SEED)
    w = init(rng)
    m = {k: np.zeros_like(v) for k, v in w.items()}
    v2 = {k: np.zeros_like(v) for k, v in w.items()}
    t = 0
    for epoch in range(EPOCHS):
        order = rng.permutation(len(y))
        lr = LR * DECAY ** epoch  # a constant lr left the accuracy swinging by a point between epochs
        for i in range(0, len(y) - BATCH + 1, BATCH):
            idx = order[i:i + BATCH]
            t += 1
            for k, g in grads(w, x[idx], y[idx]).items():
                m[k] = 0.9 * m[k] + 0.1 * g
                v2[k] = 0.999 * v2[k] + 0.001 * g * g
                w[k] -= lr * (m[k] / (1 - 0.9 ** t)) / (np.sqrt(v2[k] / (1 - 0.999 ** t)) + 1e-8)
        print(f"epoch {epoch + 1}/{EPOCHS}: train accuracy {accuracy(w, x, y):.4%}", flush=True)
    return w


def accuracy(w, x, y) -> float:
    saved = dict(fid._weights)
    fid._weights.clear()
    fid._weights.update(w)
    try:
        return float((fid.forward(x.reshape(-1, 28, 28))[1].argmax(1) == y).mean())
    finally:
        fid._weights.clear()
        fid._weights.update(saved)


def main(out=fid.WEIGHTS):
    x, y = training_digits()
    print(f"training on {len(y):,} full-MNIST training digits (the embedded subset left out)")
    w = train(x, y)
    full = load_mnist("full")
    print(f"float32 weights: full test accuracy {accuracy(w, full.x_test, full.y_test):.2%}")
    stored = {k: v.astype(np.float16) for k, v in w.items()}
    np.savez_compressed(out, **stored)
    fid._weights.clear()
    fid._weights.update({k: v.astype(np.float32) for k, v in stored.items()})  # as the runs read them
    for name in ("full", "embedded"):
        d = load_mnist(name)
        print(f"{name} test accuracy: {accuracy(fid.classifier(), d.x_test, d.y_test):.2%} on {len(d.y_test):,} digits")
    print(f"wrote {out} ({Path(out).stat().st_size:,} bytes)")


if __name__ == "__main__":
    main(*sys.argv[1:2])

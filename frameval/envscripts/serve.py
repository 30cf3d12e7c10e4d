"""The fresh process of the serving measurement (issue #70; frameval/nb/serving.py):
`python -m frameval.envscripts.serve FOLDER`, in the framework's own environment,
started by the notebook's serve cell after training.

It reads FOLDER/request.json, imports the framework (timed), loads the saved model
with the framework folder's `load` (timed apart), predicts every input of
inputs.npy at the evaluation batch and compares them with expected.npy (the
trained model's predictions in memory), then times calls at batch 1 and at the
evaluation batch after warm-up. It writes FOLDER/serve.json; a failure is its
exit status and its last line on stderr.
"""
from __future__ import annotations

import importlib
import json
import sys
import time
from pathlib import Path

import numpy as np

from frameval import frameworks
from frameval.nb import serving


def _compare(got: np.ndarray, expected: np.ndarray) -> dict:
    if got.shape != expected.shape:
        raise ValueError(f"the loaded model predicts shape {got.shape}, the model in memory {expected.shape}")
    diff = np.abs(got.astype(np.float64) - expected.astype(np.float64))
    scale = float(np.max(np.abs(expected))) or 1.0
    return {"max_abs_diff": float(diff.max()) if diff.size else 0.0, "max_rel_diff": float(diff.max() / scale),
            "exact": bool(np.array_equal(got, expected)), "finite": bool(np.isfinite(got).all())}


def main(folder: Path) -> dict:
    req = json.loads((folder / serving.REQUEST).read_text(encoding="utf-8"))
    inputs, expected = np.load(folder / serving.INPUTS), np.load(folder / serving.EXPECTED)
    fw_key, batch, calls = req["framework"], int(req["batch"]), int(req["calls"])
    t0 = time.perf_counter()
    importlib.import_module(frameworks.get(fw_key).import_name)
    import_s = time.perf_counter() - t0
    support = importlib.import_module(f"frameval.frameworks.{fw_key}.support")
    t0 = time.perf_counter()
    predict = support.load(folder / serving.MODEL, req["device"])
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    got = serving.predict_all(predict, inputs, batch)
    first_s = time.perf_counter() - t0  # the first pass over the inputs: it includes any compile at load
    out = {"import_s": round(import_s, 4), "load_s": round(load_s, 4), "first_pass_s": round(first_s, 4),
           **_compare(got.astype(np.float32), expected)}
    latency = {}
    for b in dict.fromkeys((1, batch)):
        latency[str(b)] = serving.percentiles(serving.time_calls(predict, inputs[:b], calls), calls)
    out["latency_ms"] = latency
    out["throughput"] = batch / (latency[str(batch)]["p50"] / 1e3)  # samples/s at the median call
    (folder / serving.OUTPUT).write_text(json.dumps(out), encoding="utf-8")
    return out


if __name__ == "__main__":
    main(Path(sys.argv[1]))

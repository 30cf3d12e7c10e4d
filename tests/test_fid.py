"""The DCGAN's quality figure (frameval/workloads/dcgan/fid.py): the Fréchet distance in a
fixed numpy MNIST classifier's feature space. Unit-level: no notebook runs
(the real DCGAN runs' distances are checked in tests/test_pipeline.py)."""
import re

import numpy as np
import pytest

from frameval import data
from frameval.workloads.dcgan import fid
from frameval.nb.data import NoiseStream, fixed_noise, load_mnist
from frameval.paths import REPO

pytestmark = pytest.mark.fast


@pytest.fixture(scope="module")
def embedded():
    data.prepare_mnist_embedded()  # the default cache; reused when there
    return load_mnist("embedded")


def _full_or_skip():
    if not (data.full_cache_meta() or {}).get("sha256"):
        pytest.skip("full MNIST is not prepared here (run_all.py --setup-only --data full)")
    return load_mnist("full")


def _halves(x):
    """Two disjoint halves, interleaved: full MNIST's test set is ordered by
    writer group (its first 5,000 digits are the cleaner ones), so the first
    half against the second would measure that, not the estimator."""
    return x[0::2], x[1::2]


def _documented() -> dict:
    """The accuracies docs/workloads.md documents, per test set."""
    text = (REPO / "docs" / "workloads.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\s*\| (full|embedded) MNIST test set \| ([\d,]+) \| ([\d.]+)% \|", text, re.M)
    assert {r[0] for r in rows} == {"full", "embedded"}, "docs/workloads.md lost the classifier's accuracy table"
    return {name: (int(n.replace(",", "")), acc) for name, n, acc in rows}


def test_the_weights_are_small_and_the_features_64():
    assert fid.WEIGHTS.stat().st_size < 1_000_000
    f, logits = fid.forward(np.zeros((3, 1, 28, 28), np.float32))
    assert f.shape == (3, 64) and logits.shape == (3, 10)


def test_real_against_real_is_near_zero_and_noise_against_real_large(embedded):
    a, b = _halves(embedded.x_test)
    real = fid.frechet_distance(*fid.statistics(fid.forward(a)[0]), *fid.statistics(fid.forward(b)[0]))
    noise = fid.score(np.random.RandomState(0).uniform(-1, 1, (len(embedded.x_test), 28, 28)), "embedded")
    # the same test digits against their own statistics: 0 up to rounding
    assert fid.score(embedded.x_test, "embedded") == pytest.approx(0, abs=1e-6)
    assert real < noise / 20 and noise > 100, (real, noise)


def test_full_mnist_halves_near_zero():
    full = _full_or_skip()
    a, b = _halves(full.x_test)
    real = fid.frechet_distance(*fid.statistics(fid.forward(a)[0]), *fid.statistics(fid.forward(b)[0]))
    noise = fid.score(np.random.RandomState(1).uniform(-1, 1, (5000, 1, 28, 28)), "full")
    assert real < noise / 50, (real, noise)


def test_every_layout_gives_the_same_distance(embedded):
    x = embedded.x_test[:200]  # (N, 1, 28, 28)
    d = fid.score(x, "embedded")
    assert fid.score(x[:, 0], "embedded") == d == fid.score(x.transpose(0, 2, 3, 1), "embedded")
    with pytest.raises(ValueError):
        fid.score(x.reshape(200, 784), "embedded")


@pytest.mark.parametrize("name", ["embedded", "full"])
def test_the_accuracy_is_as_documented(name, embedded):
    d = embedded if name == "embedded" else _full_or_skip()
    n, documented = _documented()[name]
    acc = (fid.forward(d.x_test)[1].argmax(1) == d.y_test).mean()
    assert len(d.y_test) == n and f"{acc * 100:.2f}" == documented


def test_frechet_distance_equals_the_direct_formula():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    rng = np.random.RandomState(7)
    for dim in (1, 3, 8):
        a, b = rng.randn(50, dim), rng.randn(40, dim) @ rng.randn(dim, dim) + 0.5
        mu1, s1 = a.mean(0), np.atleast_2d(np.cov(a, rowvar=False))
        mu2, s2 = b.mean(0), np.atleast_2d(np.cov(b, rowvar=False))
        direct = ((mu1 - mu2) ** 2).sum() + np.trace(s1 + s2 - 2 * scipy_linalg.sqrtm(s1 @ s2).real)
        assert fid.frechet_distance(mu1, s1, mu2, s2) == pytest.approx(direct, rel=1e-7, abs=1e-9)


def test_a_singular_covariance_gives_a_finite_distance():
    f = np.random.RandomState(3).randn(30, 5)
    f[:, 2] = 0  # a dead ReLU feature: the covariance is singular
    d = fid.frechet_distance(*fid.statistics(f), *fid.statistics(f[::-1] + 1))
    assert np.isfinite(d) and d == pytest.approx(5.0, rel=1e-6)  # equal covariances: the mean term alone


def test_the_noise_is_fixed_and_its_own_stream():
    z = fid.noise(0, fid.N)
    assert z.shape == (fid.N, 100) and z.dtype == np.float32
    assert np.array_equal(z, fid.noise(0, fid.N)) and not np.array_equal(z, fid.noise(1, fid.N))
    assert np.array_equal(fid.noise(0, 10), z[:10])  # a prefix: fewer samples see the same first vectors
    training = [NoiseStream(0, e).next(16) for e in range(3)] + [fixed_noise(0)]
    assert not any(np.allclose(t, z[:16]) for t in training)


def test_evaluate_calls_the_generator_in_batches_with_the_fixed_noise(embedded):
    seen = []

    def generate(z):
        seen.append(z.copy())
        return np.tanh(z[:, :1, None].repeat(28, 1).repeat(28, 2))  # (b, 28, 28) in [-1, 1]

    d = fid.evaluate(generate, 0, "embedded", n=1200, batch=500)
    assert [len(z) for z in seen] == [500, 500, 200]
    assert np.array_equal(np.concatenate(seen), fid.noise(0, 1200)) and d > 0 and np.isfinite(d)


# ------------------------------------------------------------------ the report
def _dcgan(fw, seed, value, root="/o"):
    d = f"{root}/runs/{fw}/dcgan-graph" + (f"/seed-{seed}" if seed else "")
    r = {"framework": fw, "workload": "dcgan", "mode": "graph", "device": "cpu", "status": "ok",
         "params": {"seed": seed, "lr": 1e-4, "out_dir": d}, "samples_per_s": 100.0,
         "epochs": [{"epoch": 1, "seconds": 1.0, "samples": 160, "gen_loss": 0.7, "disc_loss": 1.4}],
         "_dir": d, "_source": root}
    return r if value is None else dict(r, fid=value, fid_samples=fid.N)


def _finding(results):
    from frameval.report.analysis import analyse
    from frameval.report.findings import quality_finding
    from frameval.report.i18n import Strings
    from frameval.report.model import make_rows
    rows = make_rows(results, Strings("en"))
    return quality_finding("dcgan", rows, Strings("en"), analyse(rows)), rows


def test_the_report_ranks_the_lowest_distance_best():
    text, rows = _finding([_dcgan("torch", 0, 512.25), _dcgan("tensorflow", 0, 431.04)])
    tf, torch = (next(w.label for w in rows if w.fw == f) for f in ("tensorflow", "torch"))
    assert f"lowest Fréchet distance to real digits (lower is better) is {tf}, 431.0" in text
    assert f"the highest is {torch}, 512.2" in text  # 512.25: Python rounds half to even


def test_over_seeds_the_distance_is_ranked_against_the_lowest_mean():
    res = [_dcgan("torch", s, 100.0 + s) for s in range(5)] + [_dcgan("tensorflow", s, 300.0 + s) for s in range(5)]
    text, rows = _finding(res)
    tf, torch = (next(w.label for w in rows if w.fw == f) for f in ("tensorflow", "torch"))
    assert f"Against the lowest mean (lower is better), {torch}:" in text and f"{tf} higher by 200.0" in text


def test_an_old_result_without_a_distance_reads_not_available():
    from frameval.report.i18n import Strings
    from frameval.report.tables import quality_columns
    text, rows = _finding([_dcgan("torch", 0, None)])
    assert text is None
    (head, get, show, hib), *rest = quality_columns("dcgan", Strings("en"))
    assert head == Strings("en")("col_fid") and hib is False
    assert get(rows[0].result) is None and show(get(rows[0].result)) == Strings("en")("na")


# ------------------------------------------------------------------ the notebooks and the cache key
@pytest.mark.parametrize("fw", ["torch", "tensorflow", "jax", "paddle", "mindspore", "megengine", "mxnet"])
def test_every_dcgan_notebook_evaluates_the_distance_outside_the_clock_and_records_it(fw):
    import json
    cells = json.loads((REPO / "notebooks" / fw / "dcgan.ipynb").read_text(encoding="utf-8"))["cells"]
    tagged = {t: "".join(c["source"]) for c in cells for t in c.get("metadata", {}).get("tags", [])}
    assert "nb.fid.record(rec, " in tagged["evaluate"] and ", seed, dataset)" in tagged["evaluate"]
    # during training only through the evaluation points, which ep.timed keeps outside the training clock
    train = tagged["train"]
    assert "rec.evaluate_during_training(eval_point)" in train and "nb.fid.evaluate(" in train
    assert train.index("nb.fid.evaluate(") < train.index("rec.evaluate_during_training") < train.index("rec.epoch(")


def test_the_run_cache_key_covers_the_classifier_weights(tmp_path):
    import shutil
    from frameval import sources
    assert fid.WEIGHTS in sources.notebook_side("torch")
    clone = tmp_path / "clone"
    shutil.copytree(REPO / "frameval", clone / "frameval", ignore=shutil.ignore_patterns("__pycache__"))
    before = sources.digest("torch", clone)
    (clone / "frameval" / "nb" / fid.WEIGHTS.name).write_bytes(b"other weights")
    assert sources.digest("torch", clone) != before

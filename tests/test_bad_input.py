"""Inputs that must end in one line: a full disk (a real tmpfs) loses no run
result; the data sizes the parameter checks assume are the prepared data's."""
import json
import subprocess

import pytest

from conftest import run_all
from frameval import catalog, constraints, data
from frameval.config import RunConfig
from frameval.exits import BadInput


def test_a_full_disk_loses_nothing_and_says_one_line(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(disk)], check=True)
    try:
        out = disk / "o"
        p = run_all("--frameworks", "mxnet", "--workloads", "lenet", "-p", "epochs=1", "-p",
                    "max_train_samples=256", "--out", str(out), timeout=900)
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 1 and len(lines) == 1, p.stdout[-2000:] + p.stderr
        assert lines[0].startswith("frameval: error: the report was not written") and "No space left" in lines[0]
        assert "KB free in" in lines[0] and "results intact: mxnet/lenet-graph" in lines[0], lines[0]
        r = json.loads((out / "runs/mxnet/lenet-graph/result.json").read_text())
        assert r["status"] == "ok" and r["epochs"] and r["param_counts"]
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_the_sizes_the_checks_assume_are_the_prepared_data():
    data.prepare_all()
    from frameval.nb.data import load_co2, load_mnist
    m = load_mnist("embedded")
    assert (len(m.y_train), len(m.y_test)) == tuple(catalog.MNIST_SIZES["embedded"].values())
    w = load_co2(20)
    assert w.n_points == catalog.SERIES_POINTS["co2"]
    run = next(r for r in RunConfig(frameworks="torch", workloads="lstm", dry_run=True).runs)
    assert constraints.train_samples(run) == len(w.y_train)


@pytest.mark.fast
@pytest.mark.parametrize("params, expect", [
    (["max_train_samples=10"], "-p max_train_samples=10 with batch_size=64"),
    (["lstm.window=5000"], "-p window=5000: the co2 series has 2284 points"),
    (["dcgan.max_train_samples=100", "dcgan.batch_size=128"], "-p max_train_samples=100 with batch_size=128"),
    (["lstm.window=2250"], "-p window=2250 leaves 25 training windows with batch_size=32"),
])
def test_parameters_that_cannot_train_together(params, expect):
    with pytest.raises(BadInput, match=expect.replace(".", r"\.").replace("(", r"\(")):
        RunConfig(param=params, dry_run=True)


@pytest.mark.fast
def test_parameters_that_train_pass():
    RunConfig(param=["lenet.max_train_samples=64", "lstm.window=2200"], dry_run=True)

"""The machine's peak: a real measurement in the runner environment, positive,
with its method recorded, written where the report reads it."""
import json

import pytest

from frameval import probe

pytestmark = pytest.mark.fast


def test_probe_measures_positive_figures_and_records_its_method(tmp_path):
    lines = []
    m = probe.record(tmp_path, lines.append)
    assert m["peak_gflops_1"] > 0 and m["peak_gflops_all"] > 0 and m["bandwidth_gbs"] > 0
    assert m["threads_all"] >= 1 and m["seconds"] > 0  # its duration is this machine's, not bounded here
    assert "numpy.matmul" in m["method"]["matmul"] and "float32" in m["method"]["matmul"]
    assert "copy" in m["method"]["copy"]
    on_disk = json.loads((tmp_path / probe.MACHINE).read_text())
    assert on_disk["peak_gflops_1"] == m["peak_gflops_1"] and probe.read(tmp_path) == on_disk
    assert "GFLOP/s" in lines[0]


def test_a_small_product_counts_its_flops():
    # 2 n^3 FLOPs in a measured time: a tiny product is far from peak but positive and finite
    assert 0 < probe.matmul_gflops(n=64, repeats=1) < 1e5


def test_no_machine_file_reads_as_none(tmp_path):
    assert probe.read(tmp_path) is None
    (tmp_path / probe.MACHINE).write_text("[1]")
    assert probe.read(tmp_path) is None

"""The machine's peak: a real measurement in the runner environment, positive,
with its method recorded, written where the report reads it."""
import json
import os
import subprocess
import sys

import pytest

from conftest import REPO
from frameval import cpu, probe

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


def test_a_planted_cap_is_removed_for_the_probe_and_recorded(tmp_path, monkeypatch):
    """OPENBLAS_CORETYPE=Prescott pins OpenBLAS to its oldest SSE kernels
    (threadpoolctl names them Katmai): the probe's children must not inherit it,
    and machine.json must say it was there."""
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Prescott")
    code = "from frameval.probe import blas_name; print(blas_name())"
    kept = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(REPO))).stdout
    assert "Katmai" in kept or "Prescott" in kept, kept  # the cap bites where it is kept: the test can fail
    lines = []
    m = probe.record(tmp_path, lines.append)
    assert m["isa_caps"]["OPENBLAS_CORETYPE"] == "Prescott" and m["isa_caps"] == cpu.caps()
    assert "openblas" in m["method"]["blas"].lower()
    assert "Katmai" not in m["method"]["blas"] and "Prescott" not in m["method"]["blas"]
    assert "OPENBLAS_CORETYPE=Prescott" in lines[-1] and "which the runs keep" in lines[-1]


def test_caps_are_found_described_and_removed():
    env = {"OPENBLAS_CORETYPE": "Haswell", "ONEDNN_MAX_CPU_ISA": "AVX2", "SOME_LIB_MAX_CPU_ISA": "x",
           "XLA_FLAGS": "--xla_cpu_max_isa=AVX2 --xla_dump_to=/tmp/d", "PATH": "/bin"}
    assert cpu.caps(env) == {"ONEDNN_MAX_CPU_ISA": "AVX2", "OPENBLAS_CORETYPE": "Haswell",
                             "SOME_LIB_MAX_CPU_ISA": "x", "XLA_FLAGS": "--xla_cpu_max_isa=AVX2"}
    assert cpu.uncapped(env) == {"XLA_FLAGS": "--xla_dump_to=/tmp/d", "PATH": "/bin"}
    assert cpu.describe("OPENBLAS_CORETYPE").startswith("OpenBLAS")

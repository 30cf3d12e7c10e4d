"""Shares of the limit in a report built from result files and a machine.json
with known figures: a run above the measured peak raises an alert (never a
silent "151%"), each framework's own GEMM has its table, and the gap of a
slower framework is placed in its kernels or around them (ceilings.gap_kind)."""
from __future__ import annotations

import json
import re

import pytest

from frameval import ceilings, flops, speed
from test_report_labels import VERSIONS, build, record, scope, threads

pytestmark = pytest.mark.fast


def _run(fw, sps):
    r = record(fw, graph_scope=scope(True, True, True, 1, 0, "whole step"), effective=threads(2, 2))
    r["timing"]["windows"] = [{"epoch": 1, "steps": 10, "samples": 640, "seconds": 640 / sps * 3}] + [
        {"epoch": e, "steps": 3, "samples": 192, "seconds": 192 / (sps * (1 + 0.003 * k))}
        for e in (2, 3) for k in (-1, 0, 1)]
    r["samples_per_s"] = speed.run_rate(r["timing"]["windows"])  # as the recorder writes it
    return r


def _machine(tmp_path):
    fws = {fw: {"framework": fw, "version": VERSIONS[fw], "gflops_1": g / 2, "gflops_all": g, "op": f"{fw} matmul",
                "isa_caps": {}, "cached": False} for fw, g in (("tensorflow", 400.0), ("paddle", 400.0), ("megengine", 40.0))}
    # the machine's peak is the best of numpy's and the frameworks' products, as probe.measure makes it
    m = {"peak_gflops_1": 200.0, "peak_gflops_all": 400.0, "peak_library_1": "TensorFlow tensorflow matmul",
         "peak_library_all": "TensorFlow tensorflow matmul", "numpy_gflops_1": 120.0, "numpy_gflops_all": 240.0,
         "threads_all": 2, "bandwidth_gbs": 10.0, "isa_caps": {"OPENBLAS_CORETYPE": "Haswell"}, "frameworks": fws,
         "method": {"matmul": "numpy.matmul float32", "copy": "numpy.copyto", "numpy": "2.4", "blas": "openblas"},
         "load_before": [0.1, 0.1, 0.1], "measured": "2026-11-25T00:00:00"}
    (tmp_path / "src").mkdir(parents=True, exist_ok=True)
    (tmp_path / "src" / "machine.json").write_text(json.dumps(m))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("peak")
    _machine(tmp)
    return build(tmp, [_run("tensorflow", 200_000), _run("paddle", 2_000), _run("megengine", 12_000)])


def test_a_run_above_the_peak_is_an_alert_never_a_silent_share(built):
    md = built["md"]
    gflops = 200_000 * flops.training_flops("lenet") / 1e9  # 453: 113% of the planted 400
    alerts = md.split("## ")[1]
    assert f"TensorFlow graph reached {gflops:.0f} GFLOP/s, above this machine's measured peak of 400 GFLOP/s " \
           f"(113%), TensorFlow's own measured GEMM of 400 GFLOP/s (113%)" in md.split("## ")[0]
    assert "the probe under-measured" in md.split("## ")[0]  # the alerts stand above the first section
    for share in re.findall(r"(\d+)% of the measured peak", md):  # any share over 100 in a sentence ...
        assert int(share) <= 100 or "above this machine's measured peak" in md.split("## ")[0]  # ... has its alert
    assert "⚠️ **453 (113% · 113%)**" in md  # the table's cell is flagged too
    assert "PaddlePaddle graph reached" not in md


def test_each_framework_gemm_is_shown_with_the_caps(built):
    md = built["md"]
    assert "Each framework's own matrix product" in md
    assert "| TensorFlow | 2.16.2 | tensorflow matmul | 200 (100%) | 400 (100%) | none |" in md
    assert "| MegEngine | 1.13.4 | megengine matmul | 20.0 (10%) | 40.0 (10%) | none |" in md
    assert "reached by TensorFlow tensorflow matmul" in md
    plain = md.replace("\\_", "_")  # Markdown escapes the underscores
    assert "OPENBLAS_CORETYPE=Haswell (OpenBLAS: forces the kernel set" in plain and "the runs kept them" in plain


def test_the_gap_is_placed_in_the_kernels_or_around_them(built):
    md = built["md"]
    assert "MegEngine graph: in the kernels (its framework's GEMM reaches 40.0 GFLOP/s, under half of TensorFlow graph's 400)" in md
    assert "PaddlePaddle graph: around the kernels" in md


@pytest.mark.parametrize("args, kind", [
    ((0.02, 0.11, 40.0, 400.0), "both"), ((0.10, 0.11, 40.0, 400.0), "kernels"),
    ((0.02, 0.11, 400.0, 400.0), "around"), ((0.10, 0.11, 300.0, 400.0), None), ((None, 0.11, None, 400.0), None)])
def test_gap_kind_rule(args, kind):
    assert ceilings.gap_kind(*args) == kind

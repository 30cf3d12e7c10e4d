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
    assert "MegEngine graph loses to TensorFlow graph in the kernels: its framework's GEMM reaches 40.0 GFLOP/s, under half of TensorFlow graph's 400." in md
    assert "PaddlePaddle graph loses to TensorFlow graph around the kernels" in md


@pytest.mark.parametrize("args, kind", [
    ((0.02, 0.11, 40.0, 400.0), "both"), ((0.10, 0.11, 40.0, 400.0), "kernels"),
    ((0.02, 0.11, 400.0, 400.0), "around"), ((0.10, 0.11, 300.0, 400.0), None), ((None, 0.11, None, 400.0), None)])
def test_gap_kind_rule(args, kind):
    assert ceilings.gap_kind(*args) == kind


# ------------------------------------------------------------------ a probe on a busy machine (#49)
BUSY_WHY = "2 threads: load 3.98 on 2 cores, other processes 61% of the CPU time"


def _busy_machine(tmp_path):
    """As the report of #49 had it: the probe at load 3.98 on 2 cores; MindSpore's
    GEMM (measured idle, cached) faster on 1 thread than on 2; PaddlePaddle's
    measured busy; NVPL's cap set on an x86 machine, where nothing loads NVPL."""
    def fw(name, g1, gall, busy=None):
        return {"framework": name, "version": VERSIONS[name], "gflops_1": g1, "gflops_all": gall, "op": f"{name} matmul",
                "gflops_best": None if busy else max(g1, gall), "threads_best": None if busy else (1 if g1 >= gall else 2),
                "busy": busy, "isa_caps": {"NVPL_BLAS_DEBUG_CPU_TYPE": "1"}, "cached": False}
    fws = {"mindspore": fw("mindspore", 110.0, 100.0), "paddle": fw("paddle", 46.4, 40.0, BUSY_WHY),
           "tensorflow": fw("tensorflow", 200.0, 400.0)}
    m = {"peak_gflops_1": 200.0, "peak_gflops_all": 400.0, "peak_library_1": "TensorFlow tensorflow matmul",
         "peak_library_all": "TensorFlow tensorflow matmul", "numpy_gflops_1": 120.0, "numpy_gflops_all": 240.0,
         "threads_all": 2, "bandwidth_gbs": 10.0, "isa_caps": {"NVPL_BLAS_DEBUG_CPU_TYPE": "1"}, "frameworks": fws,
         "cpu": {"model": "x", "machine": "x86_64", "cores": 2},
         "method": {"matmul": "numpy.matmul float32", "copy": "numpy.copyto", "numpy": "2.4", "blas": "openblas"},
         "load_before": [3.98, 3.1, 2.5], "busy": f"PaddlePaddle ({BUSY_WHY})", "measured": "2026-11-26T00:00:00"}
    (tmp_path / "src").mkdir(parents=True, exist_ok=True)
    (tmp_path / "src" / "machine.json").write_text(json.dumps(m))


@pytest.fixture(scope="module")
def busy(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("busy")
    _busy_machine(tmp)
    per = flops.training_flops("lenet") / 1e9  # GFLOP per sample
    # MindSpore at 105 GFLOP/s: above its 2-thread GEMM (100), under its 1-thread one (110);
    # PaddlePaddle at 60: above its busy figure (46.4), which is no ceiling
    return build(tmp, [_run("mindspore", 105 / per), _run("paddle", 60 / per), _run("tensorflow", 300 / per)])


def test_a_busy_probe_builds_no_alarm_and_says_it_was_not_idle(busy):
    md, top = busy["md"], busy["md"].split("## ")[0]
    assert "reached" not in top and "above" not in top  # no "above its own GEMM" from a flagged or 2-thread figure
    assert "The probe could not get an idle figure (load average 3.98, 3.1, 2.5 on 2 cores" in md
    assert BUSY_WHY in md and "no share of peak" in md
    assert "PaddlePaddle graph loses to TensorFlow graph in the kernels" not in md  # its busy 46.4 would be "under half of TensorFlow's"
    assert "not idle (" + BUSY_WHY + "): not a ceiling" in md  # the GEMM table says which figure is not one


def test_the_ceiling_is_the_best_over_thread_counts_and_a_busy_one_is_not_available(busy):
    md, html = busy["md"], busy["html"]
    per = flops.training_flops("lenet") / 1e9
    achieved = lambda g: _run("mindspore", g / per)["samples_per_s"] * per  # noqa: E731 - as the table computes it
    ms = achieved(105)
    assert f"| {ms:.0f} (n/a · {ms / 110 * 100:.0f}%) |" in md  # of MindSpore's 1-thread 110, not its 2-thread 100
    assert f"| {achieved(60):.1f} (n/a · n/a) |" in md  # PaddlePaddle: its ceiling was busy, so the peak is too
    assert f"its framework&#39;s own GEMM: not available (the probe was not idle: {BUSY_WHY})" in html
    assert "its framework&#39;s own GEMM: 110 GFLOP/s" in html


def test_a_cap_that_acts_on_nothing_here_is_not_listed(busy):
    assert "NVPL" not in busy["md"] and "NVPL" not in busy["html"]

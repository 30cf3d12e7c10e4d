"""Shares of the limit in a report built from result files and a machine.json
with known figures: a run above the measured peak raises an alert (never a
silent "151%"), each framework's own GEMM has its table as a machine figure
and no run is set against it (#66), and the gap of a slower framework is
placed in its kernels or around them from its layer times (a planted
layers.json, frameval/layers.py), naming the layer."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from frameval import flops, layers, speed, workloads
from test_report_labels import VERSIONS, build, record, scope, threads

pytestmark = pytest.mark.fast


def _run(fw, sps):
    r = record(fw, graph_scope=scope(True, True, True, 1, 0, "whole step"), effective=threads(2, 2))
    steps = max(3, -(-int(0.06 * sps) // 64))  # windows of about 60 ms: over speed.MIN_WINDOW_S, none merged
    r["timing"]["windows"] = [{"epoch": 1, "steps": 10, "samples": 640, "seconds": 640 / sps * 3}] + [
        {"epoch": e, "steps": steps, "samples": 64 * steps, "seconds": 64 * steps / (sps * (1 + 0.003 * k))}
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


# Each framework's layer times for LeNet's step at batch 64 on 2 threads (ms a use):
# TensorFlow's add up to 0.25 ms; PaddlePaddle's to 0.3 ms (its 32 ms step is mostly
# outside them); MegEngine's conv 5x5 6→16 alone takes 3.5 ms, more than TensorFlow's whole step.
LAYER_MS = {"tensorflow": {}, "paddle": {}, "megengine": {"conv 5x5 6→16 (10x10)": 3.5}}
BASE_MS = {"tensorflow": 0.25, "paddle": 0.3, "megengine": 0.3}


def _layer_entry(fw):
    ops = [o.to_dict() for o in workloads.get("lenet").ops({})]
    n = sum(len(o["uses"]) for o in ops)
    for o in ops:
        ms = LAYER_MS[fw].get(o["name"], BASE_MS[fw] / n)
        o["uses"] = [{"times": t, "input_grad": ig, "weight_grad": wg, "median_s": ms / 1e3 / t, "spread": 0.01,
                      "repeats": 5} for t, ig, wg in o["uses"]]
    return {"framework": fw, "fw_key": fw, "version": VERSIONS[fw], "workload": "lenet", "batch": 64, "threads": 2,
            "mode": "graph", "how": f"{fw}'s graph", "ops": ops}


def _layers(tmp_path):
    (tmp_path / "src" / layers.LAYERS).write_text(json.dumps(
        {"entries": [_layer_entry(fw) for fw in LAYER_MS], "seconds": 1.0}))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("peak")
    _machine(tmp)
    _layers(tmp)
    return build(tmp, [_run("tensorflow", 200_000), _run("paddle", 2_000), _run("megengine", 12_000)])


@pytest.fixture(scope="module")
def untimed(tmp_path_factory):
    """The same runs without layer times: the default report."""
    tmp = tmp_path_factory.mktemp("untimed")
    _machine(tmp)
    return build(tmp, [_run("tensorflow", 200_000), _run("paddle", 2_000), _run("megengine", 12_000)])


def test_a_run_above_the_peak_is_an_alert_never_a_silent_share(built):
    md = built["md"]
    gflops = 200_000 * flops.training_flops("lenet") / 1e9  # 453: 113% of the planted 400
    top = md.split("## ")[0]
    assert f"TensorFlow graph reached {gflops:.0f} GFLOP/s, above this machine's measured peak of 400 GFLOP/s " \
           f"(113%)." in top
    assert "own measured GEMM" not in md  # no run is set against a framework's GEMM
    assert "the probe under-measured" in top  # the alerts stand above the first section
    for share in re.findall(r"(\d+)% of the measured peak", md):  # any share over 100 in a sentence ...
        assert int(share) <= 100 or "above this machine's measured peak" in top  # ... has its alert
    step = 64 / _run("tensorflow", 200_000)["samples_per_s"]  # the run's step, against its layers' 0.25 ms
    assert f"⚠️ **453 (113% · {0.25e-3 / step * 100:.0f}%)**" in md  # the table's cell is flagged too
    assert "PaddlePaddle graph reached" not in md


def test_each_framework_gemm_is_shown_with_the_caps(built):
    md = built["md"]
    assert "Each framework's own matrix product" in md
    assert "| TensorFlow | 2.16.2 | tensorflow matmul | 200 (100%) | 400 (100%) | none |" in md
    assert "| MegEngine | 1.13.4 | megengine matmul | 20.0 (10%) | 40.0 (10%) | none |" in md
    assert "reached by TensorFlow tensorflow matmul" in md
    plain = md.replace("\\_", "_")  # Markdown escapes the underscores
    assert "OPENBLAS_CORETYPE=Haswell (OpenBLAS: forces the kernel set" in plain and "the runs kept them" in plain


def test_the_gap_is_placed_from_the_layer_times_and_names_the_layer(built):
    md = built["md"]
    tf_step = 64 / _run("tensorflow", 200_000)["samples_per_s"] * 1e3
    assert ("MegEngine graph loses to TensorFlow graph in the kernels: its layers alone take 3.77 ms a step, more "
            f"than TensorFlow graph's whole step ({tf_step:.3f} ms); the largest excess is its conv 5x5 6→16 (10x10), "
            "3.50 ms a step against 0.0208 ms in TensorFlow.") in md
    assert ("PaddlePaddle graph loses to TensorFlow graph around the kernels: its layers take 0.300 ms of its 32.0 ms "
            "step (31.7 ms outside them") in md
    assert "GEMM reaches" not in md


def test_the_layer_table_adds_up_and_marks_the_slowest(built):
    md = built["md"]
    assert "### Layer by layer" in md
    row = next(line for line in md.splitlines() if line.startswith("| conv 5x5 6→16 (10x10) |"))
    cells = [c.strip().strip("*") for c in row.strip("|").split("|")]  # the slowest is marked (Markdown italics)
    assert cells[1].startswith("0.0208 ms") and cells[3].startswith("3.50 ms") and "×168" in cells[3]
    total = next(line for line in md.splitlines() if line.startswith("| sum of the layers |"))
    assert "| 0.250 ms | 0.300 ms | 3.77 ms |" in total  # 12 layers: 11 at 0.3/12 ms and the conv's 3.5 ms
    assert "![LeNet-5 (MNIST classification): each run's layers stacked, beside its measured step" in md
    png = re.search(r"\]\(([^)]*lenet-layers\.png)\)", md).group(1)
    assert (Path(built["info"]["md"]).parent / png).stat().st_size > 1000


def test_without_layer_times_no_kernel_diagnosis_and_no_gemm_alert(untimed):
    """The default report times no layer: it builds no alert and no diagnosis on a GEMM
    figure, and says where the diagnosis comes from instead."""
    md = untimed["md"]
    assert "in the kernels" not in md and "around the kernels" not in md and "own measured GEMM" not in md
    assert "no layer was timed. --layers times every layer" in md
    assert "% of its step in its own framework's layers" not in md
    assert "### Layer by layer" not in md
    assert "⚠️ **453 (113% · n/a)**" in md  # above the machine's peak: still flagged


def test_a_convolution_above_its_framework_gemm_raises_no_alert(tmp_path):
    """MXNet's GEMM is its own BLAS (89 GFLOP/s on the Xeon of #66) while its
    convolutions run on oneDNN: a LeNet run at 114 GFLOP/s is above that GEMM and
    under the machine's peak of 400, which is no alert."""
    _machine(tmp_path)
    m = json.loads((tmp_path / "src" / "machine.json").read_text())
    m["frameworks"]["mxnet"] = {"framework": "mxnet", "version": VERSIONS["mxnet"], "gflops_1": 45.0,
                                "gflops_all": 88.8, "gflops_best": 88.8, "op": "mxnet.nd.dot", "isa_caps": {}}
    (tmp_path / "src" / "machine.json").write_text(json.dumps(m))
    per = flops.training_flops("lenet") / 1e9
    md = build(tmp_path, [_run("mxnet", 114 / per), _run("paddle", 60 / per)])["md"]
    assert "⚠️" not in md.split("## ")[0] and "reached" not in md.split("## ")[0]
    assert "| MXNet | 1.9.1 | mxnet.nd.dot |" in md  # the GEMM table still shows it, as the machine's figure


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
    assert "in the kernels" not in md  # no diagnosis on a GEMM figure, busy or not
    assert "not idle (" + BUSY_WHY + "): not a ceiling" in md  # the GEMM table says which figure is not one


def test_a_busy_probe_gives_no_share_of_peak(busy):
    md = busy["md"]
    per = flops.training_flops("lenet") / 1e9
    achieved = lambda g: _run("mindspore", g / per)["samples_per_s"] * per  # noqa: E731 - as the table computes it
    assert f"| {achieved(105):.0f} (n/a · n/a) |" in md  # the probe was busy: no peak; no layers timed
    assert "own GEMM:" not in busy["html"]  # the cell's tooltip: no GEMM is what a run is set against


def test_a_cap_that_acts_on_nothing_here_is_not_listed(busy):
    assert "NVPL" not in busy["md"] and "NVPL" not in busy["html"]


def test_the_scope_box_names_what_is_left_out_with_its_command(untimed, built):
    """#67: at the top, what the report covers, and what it leaves out with the command that adds it."""
    top = untimed["md"].split("**Contents:**")[0]
    assert "What this report covers.** 3 runs: LeNet-5; mode graph; device CPU" in top
    for cmd in ("--mode both", "--device gpu", "--layers", "--behaviour", "--seeds 5", "--workloads all",
                "-p precision=default,bf16"):
        assert f"(`{cmd}`)" in top, cmd
    assert "float16 mixed precision: no framework declares it yet" in top
    assert "(`--layers`)" not in built["md"].split("**Contents:**")[0]  # timed there: not left out

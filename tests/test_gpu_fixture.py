"""Real results from a lent H100 (tests/fixtures/gpu-h100/, 2026-11-27):
torch and JAX x LeNet, DCGAN, LSTM and the GPT, graph mode, and torch eager,
made by tools/gpu_proof.sh (WORKLOADS=lenet,dcgan,lstm,gpt EAGER=1) from the
trimmed runner bundle with no network. JAX eager is not in it: op-by-op
dispatch did not fit the proof's time (docs/gpu.md).

These tests hold what a GPU reader checks first against the files themselves:
every run is the H100's and passed its float64 check at the framework's
defaults, the math mode of each run is recorded and printed, and the report
built from them draws every part (the GPT's one-seed quality sentence was a
stub that broke the GPU report) with every speed figure equal to the files."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from frameval.catalog import WORKLOAD_BY_KEY  # noqa: E402
from test_report_figures import _build, _check_figures  # noqa: E402

FIX = REPO / "tests" / "fixtures" / "gpu-h100"
RESULTS = sorted(FIX.glob("runs/*/*/result.json"))


def _load(f: Path) -> dict:
    return json.loads(f.read_text())


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return _build([FIX], tmp_path_factory.mktemp("h100"))


def test_the_fixture_holds_the_runs_made_there():
    got = {(r["framework"], r["workload"], r["mode"]) for r in map(_load, RESULTS)}
    graph = {(fw, wl, "graph") for fw in ("torch", "jax") for wl in ("lenet", "dcgan", "lstm", "gpt")}
    eager = {("torch", wl, "eager") for wl in ("lenet", "dcgan", "lstm", "gpt")}
    assert got == graph | eager


@pytest.mark.parametrize("f", RESULTS, ids=lambda f: f"{f.parent.parent.name}/{f.parent.name}")
def test_each_run_is_the_h100s_and_passed_its_check(f):
    r = _load(f)
    assert r["status"] == "ok" and r["device"] == "gpu"
    assert r["environment"]["gpu"] == "NVIDIA H100 80GB HBM3"
    assert r["check"]["ok"] is True and r["check"]["max_forward_err"] < 1e-5
    assert r["param_counts"] == WORKLOAD_BY_KEY[r["workload"]].param_counts
    losses = [v for e in r["epochs"] for k, v in e.items() if k.endswith(("_loss", "_mse"))]
    assert losses and all(math.isfinite(v) for v in losses)
    assert r["samples_per_s"] > 0 and r["peak_device_mb"] > 0
    # At the defaults each framework allows TF32 somewhere; the run says which switch, read back
    mm = r["math_mode"]
    assert mm["precision"] == "default" and mm["env"]["NVIDIA_TF32_OVERRIDE"] == "unset"
    switch = {"torch": "torch.backends.cudnn.allow_tf32", "jax": "jax_default_matmul_precision"}[r["framework"]]
    assert mm["effective"] == f"below float32 allowed: {switch}"


def test_the_report_draws_every_part(built):
    md = built["md"]
    assert "could not draw" not in md and "could not draw" not in built["html"]
    gpt = [_load(f) for f in RESULTS if f.parent.name.startswith("gpt-")]
    best = max(gpt, key=lambda r: r["evaluation"]["points"][-1]["value"])
    line = next(x for x in md.splitlines() if x.startswith("- GPT (integer addition): the best final exact match"))
    assert f"{100 * best['evaluation']['points'][-1]['value']:.2f}%" in line


def test_every_speed_figure_agrees_with_the_files(built):
    assert _check_figures(built, wls=("lenet", "dcgan", "lstm", "gpt")) >= 4 * len(RESULTS)


def test_each_runs_arithmetic_is_in_the_report(built):
    for r in map(_load, RESULTS):
        assert r["math_mode"]["effective"].split(": ")[1] in built["md"].replace("\\_", "_")

"""Precision, stated and checked (issue #47): each framework's TF32 and default-
precision switches are read back from the real framework, set to full float32
for the numerical check by the framework's own API and restored for training;
on the CPU the check changes none of them.

The switches are set here in the framework environments frameval builds (CPU
builds: the flags exist and are settable there, they act only on a CUDA
device). No GPU is simulated: what a switch does to the arithmetic is the GPU
issue's measurement (docs/gpu.md)."""
import json
import subprocess

import pytest

from frameval import envs, frameworks
from frameval.nb import precision
from frameval.paths import REPO

READABLE = {"torch": 3, "tensorflow": 1, "jax": 1, "paddle": 2, "mindspore": 2, "megengine": 0, "mxnet": 0}

PROBE = r"""
import json, sys
sys.path.insert(0, {repo!r})
import {module}
from frameval.nb import precision as P
out = {{"before": P.switches({fw!r})}}
try:
    changed = P.make_strict({fw!r}, "gpu", {{}})      # as on a CUDA device with no override
except Exception as e:
    changed, out["set_error"] = [], f"{{type(e).__name__}}: {{e}}"
out["strict"] = P.switches({fw!r})
out["lowered_while_strict"] = P.lowered({fw!r}, "gpu", {{}})
out["changed"] = [n for n, _ in changed]
P.restore({fw!r}, changed)
out["after"] = P.switches({fw!r})
out["cpu_changes"] = [n for n, _ in P.make_strict({fw!r}, "cpu", {{}})]
out["mode_cpu"] = P.mode({fw!r}, "cpu", "default", {{}})
out["mode_gpu"] = P.mode({fw!r}, "gpu", "default", {{}})
out["mode_gpu_override"] = P.mode({fw!r}, "gpu", "default", {{"NVIDIA_TF32_OVERRIDE": "0"}})
print("RESULT " + json.dumps(out))
"""


@pytest.mark.parametrize("fw", list(READABLE))
def test_switches_are_read_set_and_restored_in_the_real_framework(fw):
    env = envs.ensure_framework(fw)
    module = frameworks.get(fw).import_name
    p = subprocess.run([str(env.python), "-c", PROBE.format(repo=str(REPO), module=module, fw=fw)],
                       capture_output=True, text=True, timeout=600)
    line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
    assert line, p.stdout[-2000:] + p.stderr[-3000:]
    out = json.loads(line[0][7:])
    assert len(out["before"]) == READABLE[fw]
    assert None not in out["before"].values(), out["before"]  # every switch reads back in this version
    assert out["after"] == out["before"]                       # the training gets its own settings back
    if fw == "mindspore":  # its CPU build has no GPUOpPrecisionConf: the GPU setters exist only in the GPU build
        assert "GPUOpPrecisionConf" in out["set_error"]
    else:
        assert "set_error" not in out, out.get("set_error")
        assert out["lowered_while_strict"] == []               # full float32 inside the check
    assert out["cpu_changes"] == []                            # on the CPU the check touches nothing
    assert out["mode_cpu"]["effective"] == "float32"
    if fw != "jax":
        assert out["mode_gpu_override"]["effective"].startswith("float32")
    if fw == "torch":  # cuDNN's TF32 is on by default: the very switch that failed the H100's DCGAN check
        assert out["before"]["torch.backends.cudnn.allow_tf32"] is True
        assert out["changed"] == ["torch.backends.cudnn.allow_tf32"]
        assert out["mode_gpu"]["effective"] == "below float32 allowed: torch.backends.cudnn.allow_tf32"
    if fw == "jax":  # unset: TF32 for float32 matmuls on an NVIDIA GPU, read as "default"
        assert out["before"] == {"jax_default_matmul_precision": "default"}
        assert out["mode_gpu"]["effective"] == "below float32 allowed: jax_default_matmul_precision"
        assert out["strict"] == {"jax_default_matmul_precision": "highest"}
        # NVIDIA_TF32_OVERRIDE=0 does not reach XLA's own kernels (the H100, 2026-11-27)
        assert out["mode_gpu_override"]["effective"] == "below float32 allowed: jax_default_matmul_precision"
    if fw == "tensorflow":
        assert out["changed"] == ["tf.config.experimental.tensor_float_32_execution_enabled()"]
    if fw in ("megengine", "mxnet"):
        assert "not exposed" in out["mode_gpu"]["effective"]


def test_effective_precision_reads_each_override():
    env = {"ONEDNN_DEFAULT_FPMATH_MODE": "BF16"}
    assert precision.effective("tensorflow", "cpu", env) == "below float32 allowed: ONEDNN_DEFAULT_FPMATH_MODE=BF16"
    assert precision.effective("tensorflow", "cpu", {}) == "float32"
    assert precision.mode("mxnet", "cpu", "default", {"MXNET_ENFORCE_DETERMINISM": "1"})["other_env"] == \
        {"MXNET_ENFORCE_DETERMINISM": "1"}


def test_an_unknown_precision_is_one_line_and_exit_2(tmp_path):
    from tests.conftest import run_all
    p = run_all("-p", "precision=fast", "--frameworks", "torch", "--workloads", "lenet", "--out", str(tmp_path / "o"))
    assert p.returncode == 2 and "precision=fast: choose from default, highest" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


def test_highest_trains_at_full_float32_and_says_so(tmp_path):
    """A real run with -p precision=highest: the recorded mode names it, the check set nothing on
    the CPU, and the report's environment table and audit show it per run. Eager: the
    precision switches are process-wide, the same in both modes, and a torch graph run
    pays a 20-40 s cold compile in its check."""
    from tests.conftest import TINY, run_all
    out = tmp_path / "o"
    run_all("--frameworks", "torch,jax", "--workloads", "lenet", "--mode", "eager", "-p", "precision=highest", *TINY,
            "--out", str(out), check=True)
    r = json.loads((out / "runs" / "torch" / "lenet-eager" / "result.json").read_text())
    assert r["math_mode"]["precision"] == "highest" and r["math_mode"]["effective"] == "float32"
    assert r["math_mode"]["switches"]["torch.get_float32_matmul_precision()"] == "highest"
    md = (out / "report.md").read_text()
    assert "| float32 (precision=highest) |" in md

    # The H100's mix, recreated from these real results: JAX's run as its defaults record it on a
    # GPU (TF32 matmuls). The audit flags the pair, and the environment table names each mode.
    f = out / "runs" / "jax" / "lenet-eager" / "result.json"
    j = json.loads(f.read_text())
    j["math_mode"].update(precision="default", effective="below float32 allowed: jax_default_matmul_precision")
    f.write_text(json.dumps(j))
    run_all("--report-only", "--from", str(out), "--out", str(tmp_path / "mixed"), check=True)
    md = (tmp_path / "mixed" / "report.md").read_text().replace("\\_", "_")  # markdown escapes
    assert "runs trained at different float32 arithmetic: " in md
    assert "JAX eager: below float32 allowed: jax_default_matmul_precision" in md
    assert "| below float32 allowed: jax_default_matmul_precision (precision=default) |" in md

"""Mixed precision (#69): bad input before anything runs, the AMP check's bound
(frameval/nb/amp.py) on real notebooks in their real kernels, and a wrong step
that fails at bfloat16 as it fails at float32. The mixed runs of every framework
and the report's section are in tests/test_mixed_report.py."""
import json
import subprocess
import sys

import pytest

from conftest import REPO
from frameval import catalog
from frameval.nb import amp as AMP

from test_check_mutations import execute, kernels, mutate  # noqa: F401 - the fixture is used by name


def run_all(*args, timeout=120):
    return subprocess.run([sys.executable, str(REPO / "run_all.py"), *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.parametrize("args, said", [
    (["-p", "precision=fp16", "--frameworks", "torch", "--workloads", "lenet"], "precision=fp16: the CPU does not take it"),
    (["-p", "precision=bf17", "--frameworks", "torch", "--workloads", "lenet"], "precision"),
    (["-p", "precision=fp16", "--device", "gpu", "--frameworks", "torch", "--workloads", "lenet"],
     "precision=fp16: PyTorch does not offer it on the GPU"),
])
def test_bad_precision_is_one_line_and_exit_2(args, said):
    """An unknown precision, fp16 on the CPU, a precision the framework does not declare:
    one line, exit 2, before any environment is built or anything runs."""
    p = run_all("--dry-run", *args)
    assert p.returncode == 2, (p.returncode, p.stdout[-500:], p.stderr[-500:])
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and said in lines[0], p.stderr


def test_notebook_by_hand_stops_at_its_parameters():
    """A notebook opened by hand with fp16 on the CPU stops at its parameters with the same line."""
    from frameval.nb.params import check_api
    with pytest.raises(ValueError, match="precision=fp16: the CPU does not take it"):
        check_api("torch", {"precision": "fp16", "device": "cpu"})
    assert catalog.not_offered("torch", {"precision": "bf16", "device": "cpu"}) is None


def test_bound_grows_with_depth_and_format():
    b16, f16 = AMP.bound("bfloat16", 5, 400, 64), AMP.bound("float16", 5, 400, 64)
    assert b16["forward"] < b16["losses"] < b16["grads"]
    assert f16["grads"] < b16["grads"] / 7  # float16's unit roundoff is 8x smaller
    # a framework that summed 50,000 terms in bfloat16 would err by about LAMBDA * sqrt(K) * u: far outside
    assert AMP.LAMBDA * 50_000 ** 0.5 * AMP.UNIT_ROUNDOFF["bfloat16"] > 5 * AMP.bound("bfloat16", 1, 50_000, 1)["grads"]


def test_torch_lenet_bf16_graph_checks_twice(tmp_path, kernels):  # noqa: F811
    """torch.autocast in torch's compiled LeNet: the float32 pass passes the float32 check, the
    AMP pass sits inside its bound and above float32 rounding (so the compiled step really ran in
    bfloat16), and training ran with the AMP on. (Eager, and the float32 pass against a float32
    twin's figures: tests/test_mixed_report.py, on its runs.)"""
    nb = REPO / "notebooks" / "torch" / "lenet.ipynb"
    r = execute("torch", nb, tmp_path, epochs=1, max_train_samples=64, batch_size=16, mode="graph", precision="bf16")
    assert r["status"] == "ok" and r["check"]["ok"] is True and r["check_amp"]["ok"] is True, r.get("error")
    assert r["amp"]["mechanism"] == "torch.autocast" and r["amp"]["format"] == "bfloat16"
    c = r["check_amp"]
    for sec in AMP.JUDGED:
        worst = max(c[sec].values())
        assert 1e-4 < worst <= c["bound"][sec], (sec, worst, c["bound"][sec])
    assert max(r["check"]["forward"].values()) < 1e-5  # the float32 pass ran at float32
    assert c["bound"]["depth"] == 5 and c["bound"]["reduction"] == 400 and c["bound"]["batch"] == 16
    assert r["graph_scope"]["forward"] and r["graph_scope"]["backward"]
    assert all(e["train_loss"] == e["train_loss"] for e in r["epochs"])  # finite


def test_wrong_step_fails_at_bf16(tmp_path, kernels):  # noqa: F811
    """The loss doubled (a gradient twice too large) fails the AMP pass too, naming the tensors."""
    nb = mutate("torch", "lenet", [("loss = F.cross_entropy(logits, y)", "loss = 2 * F.cross_entropy(logits, y)")],
                tmp_path / "mutated.ipynb")
    r = execute("torch", nb, tmp_path, epochs=1, max_train_samples=64, batch_size=16, mode="eager", precision="bf16")
    c = r["check_amp"]
    assert c["ok"] is False and c["grads_ok"] is False, {k: c.get(k) for k in c if k.endswith("_ok")}
    assert any(x.startswith("grads fc1.weight") for x in c["outside"]), c["outside"]
    assert r["status"] == "check_failed" and r["check"]["ok"] is False


def test_mixed_run_that_never_applied_its_amp_fails(tmp_path, kernels):  # noqa: F811
    """A notebook that drops its autocast call trains float32: under precision=bf16 that is a
    failed run (PrecisionNotApplied), never a float32 result with a bfloat16 name."""
    src = json.loads((REPO / "notebooks" / "torch" / "lenet.ipynb").read_text())
    setup = next(c for c in src["cells"] if "setup" in c.get("metadata", {}).get("tags", []))
    text = "".join(setup["source"])
    line = next(ln for ln in text.splitlines() if ln.startswith("amp = fw.autocast("))
    setup["source"] = text.replace(line, "import contextlib\nfrom frameval.nb.amp import Amp\n"
                                         "amp = Amp('default')\namp.scope = contextlib.nullcontext")
    nb = tmp_path / "no-amp.ipynb"
    nb.write_text(json.dumps(src))
    r = execute("torch", nb, tmp_path, epochs=1, max_train_samples=64, batch_size=16, mode="eager", precision="bf16")
    assert r["status"] == "failed" and r["error"]["type"] == "PrecisionNotApplied", r.get("error")

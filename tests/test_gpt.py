"""The GPT workload registered (issue #52).

Fast: it is out of the default matrix and in "all"; `-p gpt.lr=` reaches its
notebooks and a bad value is refused; its FLOPs per window are the spec's.
Real (one module-scoped folder, tiny: one epoch of 64 windows in batches of 8):
the torch notebook in graph and eager, JAX's, TensorFlow's and MindSpore's in graph mode,
through the real command, every number
the run records checked.
"""
import json
import math

import pytest

from conftest import run_all
from frameval import flops
from frameval.catalog import DEFAULT_WORKLOADS, WORKLOADS
from frameval.plan import PlanError, build_plan
from frameval.workloads.gpt import spec


@pytest.mark.fast
def test_the_gpt_runs_when_named_or_with_all_and_not_by_default():
    assert "gpt" in WORKLOADS and "gpt" not in DEFAULT_WORKLOADS
    assert {r.workload for r in build_plan("torch")} == set(DEFAULT_WORKLOADS)
    assert {r.workload for r in build_plan("torch", "all")} == set(DEFAULT_WORKLOADS) | {"gpt"}
    assert [r.name for r in build_plan("torch", "gpt", "both")] == ["torch/gpt-graph", "torch/gpt-eager"]


@pytest.mark.fast
def test_its_learning_rate_is_a_parameter_and_a_bad_one_is_refused():
    runs = build_plan("torch", "gpt", "graph", "cpu", "quick", ["gpt.lr=0.002"])
    assert [r.params["lr"] for r in runs] == [0.002] and runs[0].params["epochs"] == 4  # the quick profile
    with pytest.raises(PlanError):
        build_plan("torch", "gpt", "graph", "cpu", "quick", ["gpt.digits=3"])
    p = run_all("--frameworks", "torch", "--workloads", "gpt", "-p", "gpt.lr=fast", "--dry-run")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "lr" in p.stderr


@pytest.mark.fast
def test_its_flops_per_window_are_the_specs_per_token_times_the_context():
    assert flops.training_flops("gpt") == spec.training_flops_per_token() * spec.SPEC.context == 164_216_832
    rows = {r.layer: r for r in flops.breakdown("gpt")}
    qk = rows["block 1: attention scores Q K^T"]
    assert qk.weight_grad == 0 and qk.input_grad == 2 * qk.forward  # no weights, both operands want gradients


@pytest.mark.fast
def test_its_check_refuses_the_tanh_gelu(monkeypatch):
    """JAX's default GELU is the tanh approximation; the spec's is exact. The GPT's own
    tolerance must see the difference in the logits of a check-sized batch, with
    float32's own error (about 3e-7, measured in three frameworks) far below it."""
    import numpy as np
    from frameval.nb import check, weights
    from frameval.workloads import gpt
    from frameval.workloads.gpt import problems as P, reference as R
    w0 = {k: v.astype(np.float64) for k, v in weights.init_weights("gpt", 0).items()}
    probs = P.make_problems()
    stream = probs.stream()
    x, _ = P.windows(stream, P.window_starts(len(stream), probs.length)[:32])
    exact = R.forward(w0, x)[0]
    monkeypatch.setattr(R, "gelu", lambda v: 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3))))
    approx = R.forward(w0, x)[0]
    assert check.rel_err(approx, exact) > gpt.TOLERANCES["forward"] > 10 * 3.2e-7


# ------------------------------------------------------------------ real
@pytest.fixture(scope="module")
def gpt_runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpt")
    p = run_all("--frameworks", "torch", "--workloads", "gpt", "--mode", "both", "-p", "gpt.epochs=1",
                "-p", "gpt.max_train_samples=64", "-p", "gpt.batch_size=8", "--out", str(out), timeout=900)
    # JAX, TensorFlow and MindSpore in graph mode only, into the same folder (their eager runs, checked
    # by hand when written, cost the suite a minute more): the report then holds all five runs.
    p2 = run_all("--frameworks", "jax,tensorflow,mindspore", "--workloads", "gpt", "--mode", "graph",
                 "-p", "gpt.epochs=1", "-p", "gpt.max_train_samples=64", "-p", "gpt.batch_size=8",
                 "--out", str(out), timeout=900)
    results = {}
    for f in sorted((out / "runs").glob("*/gpt-*/result.json")):
        r = json.loads(f.read_text())
        results[(r["framework"], r["params"]["mode"])] = r
    return {"out": out, "proc": p, "proc2": p2, "results": results}


def test_the_gpt_passes_its_check_and_records_its_figures(gpt_runs):
    for proc in (gpt_runs["proc"], gpt_runs["proc2"]):
        assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted(gpt_runs["results"]) == [("jax", "graph"), ("mindspore", "graph"), ("tensorflow", "graph"),
                                           ("torch", "eager"), ("torch", "graph")]
    for mode, r in gpt_runs["results"].items():
        assert r["status"] == "ok", (mode, r["status"])
        assert r["param_counts"]["gpt"] == 406_656
        assert r["check"]["ok"] is True, (mode, r["check"])
        assert r["check"]["tolerances"]["forward"] == 1e-5  # the GPT's own (its record)
        assert all(v <= r["check"]["tolerances"]["grads"] for v in r["check"]["grads"].values())
        assert len(r["check"]["grads"]) == len(spec.weight_table())
        ep = r["epochs"][0]
        assert ep["samples"] == 64 and math.isfinite(ep["train_loss"]) and math.isfinite(ep["val_loss"])
        assert 0.0 <= r["exact_match"] <= 1.0 and r["gen_tokens_per_s"] > 0
        assert r["gen_tokens"] == 1000 * 3
        points = r["evaluation"]["points"]
        assert len(points) == 4 and all(0.0 <= p["value"] <= 1.0 and math.isfinite(p["val_loss"]) for p in points)
        # the ten fixed held-out problems, at each evaluation: the first is 74+81=155 (docs/workloads.md)
        assert len(r["shown_answers"]) == len(points)
        for shown in r["shown_answers"]:
            assert len(shown) == 10 and shown[0][0].startswith("74+81=") and shown[0][2] == "155"
            assert all(ok == (text.split("=")[1] == right) for text, ok, right in shown)
    report = (gpt_runs["out"] / "report.md").read_text()
    assert "## GPT (integer addition)" in report and "| `74+81=155` |" in report  # the ten answers, in its section
    assert "Generation (tokens/s)" in report and "Exact match (held-out)" in report

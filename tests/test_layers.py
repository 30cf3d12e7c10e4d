"""Every layer timed in every framework at the runs' shapes (#66).

Fast: each workload's layer list asks of the kernels exactly the FLOPs that
frameval/flops.py counts for its step (so the layer times of a step add up
to what that step asks); --layers with what has no layer timing is one line
and exit 2.
Real: the layer script in every framework's environment, each of its
workloads' layers a time or its own error; then `--layers` end to end on
LeNet in all seven frameworks: the report's per-layer table equals
layers.json, and each run is set against its own framework's layers.
"""
import json
import re

import pytest

from conftest import TINY, run_all
from frameval import envs, flops, layers, workloads
from frameval.catalog import FRAMEWORKS
from frameval.config import RunConfig
from frameval.exits import BadInput
from frameval.workloads.base import OP_KINDS


# ------------------------------------------------------------------ fast
@pytest.mark.fast
@pytest.mark.parametrize("wl", ["lenet", "dcgan", "lstm", "gpt"])
def test_the_layers_ask_what_the_flop_count_counts(wl):
    ops = [_timed(o) for o in workloads.get(wl).ops({})]
    assert all(o["kind"] in OP_KINDS for o in ops)
    assert sum(layers.op_flops(o) for o in ops) == flops.training_flops(wl)
    assert len({o["name"] for o in ops}) == len(ops)  # a layer's row is its name


def _timed(op, median_s=1e-3):
    """An op as the layer script records it, each use timed at `median_s`."""
    return dict(op.to_dict(), uses=[{"times": t, "input_grad": ig, "weight_grad": wg, "median_s": median_s}
                                    for t, ig, wg in op.uses])


@pytest.mark.fast
def test_the_uncounted_layers_are_timed_too():
    kinds = {o.kind for o in workloads.get("dcgan").ops({})}
    assert {"batchnorm2d", "leaky_relu", "dropout", "tanh", "bce_logits"} <= kinds
    d_conv = next(o for o in workloads.get("dcgan").ops({}) if o.name.startswith("D conv 5x5 1→64"))
    assert d_conv.uses == ((2, False, True), (1, True, False))  # the D step twice, then through D in the G step


@pytest.mark.fast
def test_layers_without_timing_is_bad_input():
    with pytest.raises(BadInput, match="--layers: no layer timing for workload nope"):
        layers.check(["torch"], ["nope"])
    with pytest.raises(BadInput, match="layers are timed on the CPU only"):
        RunConfig(frameworks="torch", workloads="lenet", layers=True, device="gpu")
    p = run_all("--layers", "--device", "gpu", "--frameworks", "torch", "--workloads", "lenet", "--dry-run")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr


@pytest.mark.fast
def test_a_step_kernel_time_is_none_where_a_layer_failed():
    ops = [_timed(o) for o in workloads.get("lstm").ops({})]
    assert layers.step_kernel_s({"ops": ops}) == pytest.approx(3e-3)
    ops[0]["uses"][0] = {"error": "RuntimeError: no kernel", "times": 1}
    assert layers.step_kernel_s({"ops": ops}) is None


def test_a_layer_is_its_fastest_repeat_over_the_processes():
    """Two processes' lines merge use by use: the faster process's figures, both fastest repeats kept; a use
    that failed in one process only is the other's; an entry that failed in one is the other's."""
    def line(best, err=False):
        u = {"error": "RuntimeError: x", "times": 1} if err else {"median_s": best * 2, "best_s": best, "repeats": 3,
                                                                  "times": 1, "input_grad": True, "weight_grad": True}
        return {"ops": [{"name": "conv", "kind": "conv2d", "uses": [u]}], "call_floor": {"best_s": best / 100},
                "cache": True, "cached": False}
    m = layers.merge_processes([line(0.077), line(0.044)])
    use = m["ops"][0]["uses"][0]
    assert use["best_s"] == 0.044 and use["median_s"] == 0.088 and use["by_process"] == [0.077, 0.044]
    assert use["repeats"] == 6 and m["processes"] == 2 and m["call_floor"]["best_s"] == pytest.approx(0.00044)
    assert layers.merge_processes([line(0.05, err=True), line(0.06)])["ops"][0]["uses"][0]["best_s"] == 0.06
    assert "error" in layers.merge_processes([line(0, err=True), line(0, err=True)])["ops"][0]["uses"][0]
    assert layers.merge_processes([{"error": "no env"}, line(0.06)])["ops"][0]["uses"][0]["best_s"] == 0.06


# ------------------------------------------------------------------ real
@pytest.mark.parametrize("fw", sorted(FRAMEWORKS))
def test_every_layer_has_a_time_in_every_framework(fw):
    """Eager, at batch 4: LeNet, the LSTM and the GPT (the DCGAN's layers in the end-to-end test's cousins:
    its MegEngine transposed convolutions take seconds each)."""
    env = envs.ensure_framework(fw)
    for wl in ("lenet", "lstm", "gpt"):
        got = layers.envscripts.run(**dict(layers._call(env, fw, wl, 4, 2, "eager"), use_cache=False))
        assert "error" not in got, (fw, wl, got)
        assert [o["name"] for o in got["ops"]] == [o.name for o in workloads.get(wl).ops({})]
        for o in got["ops"]:
            for u in o["uses"]:
                assert "error" not in u and u["median_s"] > 0 and u["repeats"] >= 3, (fw, wl, o["name"], u)
        assert got["version"] and got["threads"] == 2 and got["batch"] == 4


def test_layers_end_to_end_on_lenet(tmp_path):
    out = tmp_path / "out"
    p = run_all("--workloads", "lenet", "--layers", "--out", str(out), *TINY, timeout=1500)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert f"every layer timed at the runs' shapes, each in {layers.PROCESSES} processes: 7 framework x workload x mode" \
        in p.stdout
    m = layers.read(out)
    assert sorted(e["framework"] for e in m["entries"]) == sorted(FRAMEWORKS)
    md = (out / "report.md").read_text()
    assert "### Layer by layer" in md
    header = next(ln for ln in md.splitlines() if ln.startswith("| layer |"))
    sums = next(ln for ln in md.splitlines() if ln.startswith("| sum of the layers |"))
    cols = [c.strip() for c in header.strip("|").split("|")][1:]
    cells = [c.strip() for c in sums.strip("|").split("|")][1:]
    for col, c in zip(cols, cells):
        fw = next(e for e in m["entries"] if col.startswith(_name(e["framework"])))
        total = layers.step_kernel_s(fw)
        assert total and c == f"{_sig3(total * 1e3)} ms", (col, c, total)
    # every diagnosis comes from the layers: in the kernels naming a layer, or around them
    for line in md.splitlines():
        if "loses to" in line and "kernels" in line:
            assert re.search(r"the largest excess is its .+, [\d.]+ ms a step against", line) or "around the kernels" in line
    assert "own measured GEMM" not in md
    # --dry-run says what --layers would time: cached by the run above, or timed again where that
    # run measured beside other work (the suite's other worker), which is never cached
    p = run_all("--workloads", "lenet", "--layers", "--out", str(out), *TINY, "--dry-run")
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith("frameval: --layers:"))
    assert line.count(" lenet graph") == 7 and "not built" not in line, line


def _name(fw):
    from frameval.catalog import framework_name
    return framework_name(fw)


def _sig3(v):
    from frameval.report import fmt
    return fmt.sig(v)


@pytest.mark.fast
def test_the_layer_record_is_json_with_one_entry_per_run_shape():
    """layers.keys: one entry per framework, workload, batch, threads and mode of the plan's CPU runs."""
    cfg = RunConfig(frameworks="torch,jax", workloads="lenet,lstm", mode="both", layers=True)
    ks = layers.keys(cfg.runs)
    assert len(ks) == 8 and len(set(ks)) == 8
    json.dumps(ks)

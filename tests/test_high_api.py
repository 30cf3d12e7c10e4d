"""The high-level API, measured (#40 part 3).

Fast: the plan runs api=high only where a notebook trains through a high-level
API and says why for the others; a notebook run by hand with api="high" where
there is none stops with one line; the callback-marked windows are the loop's
windows; a check with the gradients out of reach says so and still fails on a
wrong loss.
Real (one module-scoped run, tiny LeNet, about a minute): TensorFlow and
PaddlePaddle through Keras' Model.fit and paddle.Model.fit beside their basic
loops: every run ok with its check passed, the API's first-epoch loss equal to
the loop's (the same weights, batches and optimizer), and the report's rows
equal the result files.
"""
import json

import numpy as np
import pytest

from conftest import TINY, run_all
from frameval.catalog import FRAMEWORKS, HIGH_API_NOTEBOOKS
from frameval.nb import Recorder, check
from frameval.nb.params import check_api
from frameval.plan import PlanError, build_plan
from frameval.report import fmt


# ------------------------------------------------------------------ fast
@pytest.mark.fast
def test_the_plan_runs_the_api_only_where_a_notebook_has_it_and_says_why_for_the_rest():
    runs = build_plan("all", "lenet", "graph", "cpu", "quick", ["lenet.api=basic,high"])
    high = [r.name for r in runs if r.params["api"] == "high"]
    assert high == [f"{fw}/lenet-graph@api=high" for fw in FRAMEWORKS if fw in HIGH_API_NOTEBOOKS]
    assert {r.framework for r in runs if r.params["api"] == "basic"} == set(FRAMEWORKS)
    notes = runs[0].profile_notes
    assert "torch lenet: api=high not run: torch has no high-level training API" in notes
    assert sorted(n.split()[0] for n in notes) == ["jax", "megengine", "torch"]
    assert set(HIGH_API_NOTEBOOKS) == {"tensorflow", "paddle", "mxnet", "mindspore"}
    # a single value still gets its own folder, beside the basic loop's
    assert [r.name for r in build_plan("tf", "lenet", "eager", "cpu", "quick", ["lenet.api=high"])] == \
        ["tensorflow/lenet-eager@api=high"]


@pytest.mark.fast
def test_api_high_for_frameworks_without_one_or_a_bad_value_is_refused_before_anything_runs():
    with pytest.raises(PlanError, match="torch has no high-level training API"):
        build_plan("torch", "lenet", "graph", "cpu", "quick", ["lenet.api=high"])
    p = run_all("--workloads", "lenet", "-p", "lenet.api=fast", "--dry-run")
    assert p.returncode == 2 and "choose from basic, high" in p.stderr and len(p.stderr.strip().splitlines()) == 1


@pytest.mark.fast
def test_a_notebook_run_by_hand_with_api_high_where_there_is_none_stops_with_one_line(tmp_path):
    with pytest.raises(ValueError, match="jax has no high-level training API"):
        Recorder("jax", "lenet", {"api": "high", "mode": "graph"}, out_dir=str(tmp_path), chdir=False)
    with pytest.raises(ValueError, match="megengine has no high-level training API"):
        check_api("megengine", {"api": "high"})
    check_api("mindspore", {"api": "high"})  # has one: no error


def _windows(rec, epochs_items, marked: bool):
    for items in epochs_items:
        with rec.epoch(samples=sum(map(len, items))) as ep:
            if marked:
                win = ep.step_windows(items)
                for j in range(len(win.items)):
                    win.begin(j)
                    win.end(j)
                win.check_complete()
            else:
                for _ in ep.timed(items):
                    pass
    return [(w["epoch"], w["steps"], w["samples"]) for w in rec.windows]


@pytest.mark.fast
@pytest.mark.parametrize("epochs, steps", [(1, 12), (1, 13), (2, 12), (6, 13)])
def test_windows_marked_from_callbacks_are_the_loops_windows(tmp_path, epochs, steps):
    items = [[list(range(64))] * steps for _ in range(epochs)]
    got = [_windows(Recorder("paddle", "lenet", {"epochs": epochs, "api": k}, out_dir=str(tmp_path / k), chdir=False),
                    items, k == "high") for k in ("basic", "high")]
    assert got[0] == got[1] and sum(w[1] for w in got[0]) == steps * epochs
    if (epochs, steps) == (1, 12):  # windows of 2 steps (speed.window_steps), the last one closing at the end
        assert [w[1] for w in got[1]] == [2] * 6


@pytest.mark.fast
def test_an_api_that_skipped_steps_fails_the_run(tmp_path):
    rec = Recorder("paddle", "lenet", {"epochs": 1}, out_dir=str(tmp_path), chdir=False)
    with pytest.raises(RuntimeError, match="marked 2 of 3 steps"):
        with rec.epoch(samples=3) as ep:
            win = ep.step_windows([[0], [1], [2]])
            for j in range(2):
                win.begin(j)
                win.end(j)
            win.check_complete()


def _lenet_check(tmp_path, scale):
    """The check fed the reference's own losses (times scale) and weights, the gradients out of reach."""
    from frameval.workloads.lenet import reference as LR
    rec = Recorder("paddle", "lenet", {"epochs": 1, "api": "high"}, out_dir=str(tmp_path / str(scale)), chdir=False)
    chk = check.Checker(rec, "lenet", 0, lr=0.001, batch_size=16)
    ref = chk.reference()
    chk.forward(logits=LR.lenet_forward(chk.w0, np.asarray(chk.batches[0]["x"], np.float64))[0])
    for loss in ref["losses"]:
        chk.losses(loss=np.float64(loss["loss"]) * scale)
    chk.not_reached("grads", "the API clears them")
    chk.weights(ref["weights"])
    return chk.finish()


@pytest.mark.fast
def test_a_check_without_gradients_says_so_and_still_fails_a_wrong_loss(tmp_path):
    good = _lenet_check(tmp_path, 1.0)
    assert good["ok"] is True and good["grads"] == {} and good["not_reached"] == {"grads": "the API clears them"}
    assert _lenet_check(tmp_path, 2.0)["ok"] is False
    with pytest.raises(ValueError):
        check.Checker(Recorder("paddle", "lenet", {}, out_dir=str(tmp_path / "x"), chdir=False),
                      "lenet", 0, lr=0.001, batch_size=16).not_reached("losses", "no")


# ------------------------------------------------------------------ real
@pytest.fixture(scope="module")
def api_runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("high_api")
    p = run_all("--frameworks", "tensorflow,paddle", "--workloads", "lenet", "--mode", "graph",
                "-p", "lenet.api=basic,high", "--out", str(out), *TINY, timeout=900)
    results = {}
    for f in sorted((out / "runs").glob("*/*/result.json")):
        r = json.loads(f.read_text())
        results[r["framework"], r["params"]["api"]] = r
    return {"out": out, "proc": p, "results": results}


def test_real_both_apis_run_ok_with_the_check_passed(api_runs):
    p = api_runs["proc"]
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    res = api_runs["results"]
    assert sorted(res) == [("paddle", "basic"), ("paddle", "high"), ("tensorflow", "basic"), ("tensorflow", "high")]
    for key, r in res.items():
        assert r["status"] == "ok" and r["check"]["ok"] is True, (key, r["check"])
        assert r["timing"]["window"] == "steps" and r["samples_per_s"] > 0
    for fw in ("tensorflow", "paddle"):
        high, basic = res[fw, "high"], res[fw, "basic"]
        assert high["check"]["not_reached"] and not basic["check"]["not_reached"]
        # equal work: the same windows, and the same losses from the same weights, batches and optimizer
        assert [(w["epoch"], w["steps"], w["samples"]) for w in high["timing"]["windows"]] == \
               [(w["epoch"], w["steps"], w["samples"]) for w in basic["timing"]["windows"]]
        for eh, eb in zip(high["epochs"], basic["epochs"]):
            assert eh["train_loss"] == pytest.approx(eb["train_loss"], rel=1e-5), fw
            assert eh["train_acc"] == pytest.approx(eb["train_acc"], abs=1e-9), fw
            assert eh["test_acc"] == pytest.approx(eb["test_acc"], abs=2e-3), fw


def test_real_the_reports_speed_rows_equal_the_result_files(api_runs):
    md = (api_runs["out"] / "report.md").read_text()
    section = md.split("## High-level API against the basic loop", 1)[1].split("\n## ", 1)[0]
    res = api_runs["results"]
    for fw, name, api in (("tensorflow", "TensorFlow", "keras.Model.fit"), ("paddle", "PaddlePaddle", "paddle.Model.fit")):
        high, basic = res[fw, "high"], res[fw, "basic"]
        row = next(ln for ln in section.splitlines() if ln.startswith(f"| {name} "))
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1:3] == [api, "graph"], row
        assert cells[3].startswith(fmt.ratio(high["samples_per_s"] / basic["samples_per_s"]) + " ("), row
        assert cells[5:7] == [fmt.rate(high["samples_per_s"]), fmt.rate(basic["samples_per_s"])], row
        assert int(cells[7]) > 0 and int(cells[8]) > int(cells[7]), row
    assert "- PyTorch: no high-level training API." in section
    assert "- JAX: no high-level training API." in section and "MindSpore" not in section  # not run here, not a blank

"""Evaluation during training (frameval/nb/evaluation.py): the points fall
where the schedule says, and evaluation stays out of the training clock and
out of every timing window (AlgoPerf's rule)."""
import json
import time

import pytest

from conftest import Clock
from frameval import files, nb, speed
from frameval.nb import evaluation

pytestmark = pytest.mark.fast

STEP_S, EVAL_S, STEPS = 0.004, 0.5, 12




def _run(tmp_path, monkeypatch, epochs=3, evaluate=True, workload="lenet"):
    from frameval.nb import measure, record
    clock = Clock()
    for mod in (record, measure, evaluation):
        monkeypatch.setattr(mod, "time", clock)
    rec = nb.Recorder("torch", workload, {"epochs": epochs, "mode": "graph", "device": "cpu"},
                      out_dir=str(tmp_path), chdir=False)
    seen = []

    def fn():
        clock.now += EVAL_S  # an evaluation that sleeps
        seen.append(clock.now)
        return {"test_acc": 0.1 * len(seen), "test_loss": 1.0 / len(seen)}
    if evaluate:
        rec.evaluate_during_training(fn)
    for e in range(epochs):
        with rec.epoch(samples=4 * STEPS) as ep:
            for _ in ep.timed([list(range(4))] * STEPS):
                clock.now += STEP_S
    rec.write()
    return json.loads((tmp_path / files.RESULT).read_text())


def test_evaluation_is_out_of_the_training_clock_and_the_windows(tmp_path, monkeypatch):
    r = _run(tmp_path, monkeypatch)
    ev = r["evaluation"]
    assert ev["metric"] == "test_acc" and ev["higher_is_better"] is True
    assert len(ev["points"]) == 3 * evaluation.PER_EPOCH
    # each epoch's seconds are its 12 steps alone, though it held 4 evaluations of 0.5 s
    for e in r["epochs"]:
        assert e["seconds"] == pytest.approx(STEPS * STEP_S, abs=1e-9) and e["eval_s"] == pytest.approx(4 * EVAL_S)
    # every window holds steps only: its seconds are its steps' time, never an evaluation's
    for w in r["timing"]["windows"]:
        assert w["seconds"] == pytest.approx(w["steps"] * STEP_S, abs=1e-9), w
    assert sum(w["steps"] for w in r["timing"]["windows"]) == 3 * STEPS
    assert r["samples_per_s"] == pytest.approx(4 / STEP_S)
    assert ev["eval_s"] == pytest.approx(12 * EVAL_S)


def test_points_are_cumulative_training_and_fall_on_quarter_epochs(tmp_path, monkeypatch):
    pts = _run(tmp_path, monkeypatch)["evaluation"]["points"]
    assert [p["epochs"] for p in pts] == [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0]
    assert [p["step"] for p in pts[:4]] == [3, 6, 9, 12]
    assert [p["samples"] for p in pts] == [12 * (i + 1) for i in range(12)]
    for i, p in enumerate(pts):  # training so far, evaluation excluded
        assert p["train_s"] == pytest.approx(3 * STEP_S * (i + 1), abs=1e-9)
        assert p["eval_s"] == pytest.approx(EVAL_S)
    assert pts[2]["value"] == pytest.approx(0.3) and pts[2]["test_loss"] == pytest.approx(1 / 3)


def test_no_evaluation_function_no_points(tmp_path, monkeypatch):
    r = _run(tmp_path, monkeypatch, evaluate=False)
    assert r["evaluation"] is None and r["time_to_target"] is None
    assert len(r["timing"]["windows"]) >= speed.MIN_WINDOWS


@pytest.mark.parametrize("steps,want", [(12, {3, 6, 9, 12}), (5, {2, 3, 4, 5}), (2, {1, 2}), (1, {1}), (0, set())])
def test_due_steps(steps, want):
    assert evaluation.due_steps(steps) == want


def test_a_real_sleeping_evaluation_stays_out_of_the_epoch(tmp_path):
    """The same with the real clock: 4 evaluations of 0.2 s in an epoch of 8 short steps."""
    rec = nb.Recorder("torch", "lenet", {"epochs": 1, "mode": "eager", "device": "cpu"}, out_dir=str(tmp_path),
                      chdir=False)
    rec.evaluate_during_training(lambda: time.sleep(0.2) or 0.5)
    with rec.epoch(samples=32) as ep:
        for _ in ep.timed([list(range(4))] * 8):
            time.sleep(0.005)
    rec.write()
    r = json.loads((tmp_path / files.RESULT).read_text())
    assert r["epochs"][0]["eval_s"] >= 0.8
    assert r["epochs"][0]["seconds"] < 0.8  # 8 x 5 ms of steps, not the 0.8 s of evaluation
    assert sum(w["seconds"] for w in r["timing"]["windows"]) < 0.8


def test_the_metric_must_be_returned(tmp_path):
    rec = nb.Recorder("torch", "lenet", {"epochs": 1, "mode": "eager", "device": "cpu"}, out_dir=str(tmp_path),
                      chdir=False)
    rec.evaluate_during_training(lambda: {"accuracy": 0.5})
    with pytest.raises(ValueError, match="test_acc"):
        with rec.epoch(samples=4) as ep:
            for _ in ep.timed([list(range(4))]):
                pass


def test_a_notebook_of_no_registered_workload_still_writes_its_result(tmp_path):
    """tests/notebooks/measure.ipynb records under a workload name of its own: no target, no crash."""
    rec = nb.Recorder("torch", "measure", {"epochs": 1, "mode": "eager", "device": "cpu"}, out_dir=str(tmp_path),
                      chdir=False)
    with rec.epoch(samples=4) as ep:
        for _ in ep.timed([list(range(4))]):
            pass
    rec.write()
    r = json.loads((tmp_path / files.RESULT).read_text())
    assert r["evaluation"] is None and r["time_to_target"] is None and r["status"] == "ok"


def _dcgan_run(tmp_path, monkeypatch, dataset):
    from frameval.nb import measure, record
    clock = Clock()
    for mod in (record, measure, evaluation):
        monkeypatch.setattr(mod, "time", clock)
    rec = nb.Recorder("torch", "dcgan", {"epochs": 3, "mode": "graph", "device": "cpu", "dataset": dataset},
                      out_dir=str(tmp_path), chdir=False)
    rec.evaluate_during_training(lambda: {"fid": 700.0})
    for e in range(3):
        with rec.epoch(samples=4 * STEPS) as ep:
            for _ in ep.timed([list(range(4))] * STEPS):
                clock.now += STEP_S
    rec.write()
    return json.loads((tmp_path / files.RESULT).read_text())


def test_a_costly_metric_with_no_target_is_drawn_once_in_the_last_epoch(tmp_path, monkeypatch, ):
    """Issue #50: the DCGAN's distance draws 1,000 images; with no target for its data set the
    curve serves nothing, so it is drawn in the last epoch only (the final figure reuses it)."""
    from frameval import workloads
    wl = workloads.get("dcgan")
    assert wl.target({"dataset": "embedded"}) is None and wl.eval_without_target == "last"
    ev = _dcgan_run(tmp_path, monkeypatch, "embedded")["evaluation"]
    assert [p["epochs"] for p in ev["points"]] == [3.0] and ev["only_epoch"] == 3


def test_a_metric_with_a_target_is_evaluated_every_epoch(tmp_path, monkeypatch):
    pts = _run(tmp_path, monkeypatch)["evaluation"]["points"]  # LeNet: a target on every data set
    assert {int(p["epochs"] + 0.75) for p in pts} == {1, 2, 3}

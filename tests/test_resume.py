"""Checkpoint and resume (#70, -p resume_check): the comparison's verdicts and the
plan's bad input, then on the real path every LeNet and LSTM run of the 42-run
matrix (all seven frameworks, both modes, tiny) checkpointed after epoch 1,
resumed in a second kernel and compared with its uninterrupted training; the
report's table carries the result files' figures; a missing checkpoint and an
incomplete restore (Adam's state lost) are caught and shown, the runs' other
results kept."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import TINY, run_all
from frameval import frameworks
from frameval.nb.resume import NOT_COMPARED, WITHIN, Resume, ResumeError, after_epoch, compare
from frameval.report import fmt

CHECKED = ("lenet", "lstm")
CURVES = {"lenet": ["train_loss", "train_acc", "test_loss", "test_acc"], "lstm": ["train_mse", "val_mse"]}


def _epochs(*losses):
    return [{"epoch": i + 2, "train_loss": v} for i, v in enumerate(losses)]


@pytest.mark.fast
def test_compare_tells_exact_within_and_diverged():
    w = {"a": np.array([1.0, -2.0], np.float32)}
    exact = compare(_epochs(0.5), _epochs(0.5), ["train_loss"], w, {"a": w["a"].copy()})
    assert exact["status"] == "exact" and exact["weights_max_abs"] == 0 == exact["loss_max_abs"]
    near = compare(_epochs(0.5), _epochs(0.5 * (1 + WITHIN / 2)), ["train_loss"], w, {"a": w["a"] * (1 + WITHIN / 4)})
    assert near["status"] == "within" and 0 < near["weights_max_rel"] <= WITHIN and near["worst_tensor"] == "a"
    far = compare(_epochs(0.5), _epochs(0.5), ["train_loss"], w, {"a": w["a"] + 1e-2})
    assert far["status"] == "diverged" and far["weights_max_abs"] == pytest.approx(1e-2)
    assert compare(_epochs(0.5, 0.4), _epochs(0.5), ["train_loss"], w, w)["status"] == "diverged"  # an epoch lost
    assert compare(_epochs(0.5), _epochs(float("nan")), ["train_loss"], w, w)["status"] == "diverged"
    assert compare(_epochs(0.5), _epochs(0.5), ["train_loss"], w, {"b": w["a"]})["status"] == "diverged"


class _Rec:
    framework, workload = "torch", "lenet"

    def __init__(self, out, **params):
        self.out, self.params, self.epochs = Path(out), dict(params), []

    def work_file(self, name):
        return self.out / "work" / name


@pytest.mark.fast
def test_a_checkpoint_that_is_missing_or_another_runs_is_refused(tmp_path):
    rec = _Rec(tmp_path, resume_from=str(tmp_path / "nowhere"), epochs=4, batch_size=64)
    run = Resume(rec, None, 4, state=lambda: (), weights=dict)
    with pytest.raises(ResumeError, match="no checkpoint at .*nowhere"):
        run.restore(object())
    ck = tmp_path / "ck"
    ck.mkdir()
    (ck / "meta.json").write_text(json.dumps({"framework": "torch", "workload": "lenet", "epoch": 2,
                                              "params": {"epochs": 4, "batch_size": 32}}))
    rec = _Rec(tmp_path, resume_from=str(ck), epochs=4, batch_size=64, serve=False)
    with pytest.raises(ResumeError, match="from another run: batch_size=32 there, 64 here"):
        Resume(rec, None, 4, state=lambda: (), weights=dict).restore(object())
    assert {"serve", "serve_calls", "out_dir", "resume_from", "resume_check"} == set(NOT_COMPARED)
    assert [after_epoch(n) for n in (2, 3, 5, 20)] == [1, 1, 2, 10]


@pytest.mark.fast
def test_bad_resume_input_is_one_line_and_exit_2_before_anything_runs(tmp_path):
    out = tmp_path / "out"
    p = run_all("--workloads", "lenet", "-p", "epochs=1", "-p", "resume_check=true", "--out", str(out), "--dry-run")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "resume_check=true" in p.stderr and "epochs=1" not in p.stderr.split(":")[0] and "2 or more" in p.stderr
    p = run_all("--workloads", "lenet", "-p", "resume_from=/tmp/x", "--out", str(out), "--dry-run")
    assert p.returncode == 2 and "resume_from is set with -p resume_check=true" in p.stderr, p.stderr
    p = run_all("--workloads", "lenet", "-p", "resume_check=maybe", "--out", str(out), "--dry-run")
    assert p.returncode == 2 and "resume_check must be a bool" in p.stderr, p.stderr
    assert not out.exists()


def _checked(matrix):
    return {k: r for k, r in matrix["results"].items() if k[1] in CHECKED}


def test_every_lenet_and_lstm_run_resumes_to_its_uninterrupted_training(matrix):
    got = _checked(matrix)
    assert len(got) == 28 and {fw for fw, _, _ in got} == set(frameworks.names())
    for (fw, wl, mode), r in got.items():
        x = r["resume"]
        where = f"{fw}/{wl}-{mode}: {x}"
        assert r["status"] == "ok" and x["status"] in ("exact", "within"), where
        assert x["after_epoch"] == 1 and x["epochs"] == 2 and x["epochs_compared"] == 1, where
        assert x["save_s"] > 0 and x["restore_s"] > 0 and x["kernel_s"] > 0 and x["format"], where
        run_dir = matrix["out"] / "runs" / fw / f"{wl}-{mode}"
        state = run_dir / "work" / "checkpoint" / "state"
        assert x["bytes"] == sum(f.stat().st_size for f in state.rglob("*") if f.is_file()) > 0, where
        # the resumed kernel's own record: epoch 2 only, numbered as in the first kernel
        second = json.loads((run_dir / "work" / "resumed" / "result.json").read_text())
        assert [e["epoch"] for e in second["epochs"]] == [2] and second["params"]["resume_from"] == str(state.parent)
        for key in CURVES[wl]:  # the comparison's figure is the two result files' own difference
            a, b = r["epochs"][1][key], second["epochs"][0][key]
            assert abs(a - b) <= x["loss_max_abs"] + 1e-15, (where, key, a, b)
            if x["status"] == "exact":
                assert a == b, (where, key)
        assert x["status"] != "within" or (0 < x["weights_max_rel"] <= WITHIN and x["worst_tensor"]), where
    for (fw, wl, mode), r in matrix["results"].items():
        if wl not in CHECKED:
            assert r.get("resume") is None, f"{fw}/{wl}-{mode}"  # the DCGAN does not checkpoint yet


def _resume_rows(md: str) -> dict:
    section = md.split('<a name="resume"></a>')[1].split("\n<a name=")[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 11 and cells[2] in ("graph", "eager"):
            rows[(cells[0], cells[1].split(" (")[0], cells[2])] = cells
    return rows


def test_report_resume_table_carries_the_result_files_figures(matrix):
    md = (matrix["out"] / "report.md").read_text()
    rows = _resume_rows(md)
    assert len(rows) == 28, sorted(rows)
    names = {"lenet": "LeNet-5", "lstm": "LSTM"}
    for (fw, wl, mode), r in _checked(matrix).items():
        x = r["resume"]
        cells = rows[(frameworks.get(fw).display, names[wl], mode)]
        assert cells[3] == "1 / 2" and cells[5] == fmt.kib(x["bytes"]), cells
        assert cells[8] == ("✓" if x["status"] == "exact" else f"≈ {fmt.sig(x['weights_max_rel'])}"
                            if x["weights_max_rel"] >= 1e-3 else f"≈ {x['weights_max_rel']:.2g}"), cells
    exact = sum(r["resume"]["status"] == "exact" for r in _checked(matrix).values())
    assert f"Resumed from a checkpoint: {exact} of 28 runs bit-exact" in md


def test_a_missing_checkpoint_and_a_lost_optimizer_state_are_caught(tmp_path, monkeypatch):
    """Real torch runs, eager: LeNet's checkpoint is deleted before the second kernel; the LSTM's
    second kernel restores the weights but resets Adam's state (the mutation the comparison must
    call diverged). Both runs stay ok with their other results; the report flags both."""
    monkeypatch.setenv("FRAMEVAL_INJECT_FAULT", "torch/lenet:resume-missing;torch/lstm:resume-fresh-optimizer")
    out = tmp_path / "out"
    p = run_all("--frameworks", "torch", "--workloads", "lenet,lstm", "--mode", "eager", "--out", str(out), *TINY,
                "-p", "resume_check=true", "--timeout", "600")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    lenet = json.loads((out / "runs/torch/lenet-eager/result.json").read_text())
    lstm = json.loads((out / "runs/torch/lstm-eager/result.json").read_text())
    assert lenet["status"] == "ok" == lstm["status"] and lenet["test_acc"] > 0.1 and len(lstm["epochs"]) == 2
    x = lenet["resume"]
    assert x["status"] == "failed" and x["stage"] == "resume" and "no checkpoint at" in x["error"], x
    assert x["after_epoch"] == 1 and x["bytes"] > 0  # the first kernel's checkpoint figures stay
    y = lstm["resume"]
    assert y["status"] == "diverged" and y["weights_max_rel"] > WITHIN and y["loss_max_abs"] > 0, y
    md = (out / "report.md").read_text()
    assert "Resumed from a checkpoint: 0 of 2 runs bit-exact" in md
    assert "checkpoint or resume failed at resume: ResumeError: no checkpoint at" in md.replace("\\", "")
    assert "the training resumed from its checkpoint diverged from the uninterrupted one" in md
    rows = _resume_rows(md)
    assert rows[("PyTorch", "LeNet-5", "eager")][8].startswith("failed at resume")
    assert rows[("PyTorch", "LSTM", "eager")][8].startswith("✗")

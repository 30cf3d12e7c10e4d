"""Time to a target quality (MLPerf's and AlgoPerf's rules) and the
convergence-parity check, on synthetic result folders with evaluation points
(the notebooks' contract: result["evaluation"], result["time_to_target"])."""
import json
import math
import random

import pytest

from frameval import stats
from frameval import target as tt
from frameval.files import RESULT
from frameval.report.analysis import analyse
from frameval.report.i18n import Strings
from frameval.report.model import make_rows
from frameval.report.timetotarget import target_findings, target_section
from frameval.workloads import get

FRAMEWORKS = ("torch", "tensorflow", "jax", "paddle", "mindspore", "megengine", "mxnet")
PER_EPOCH = 4
SAMPLES = 15000        # full MNIST: 60,000 training samples, 4 evaluations an epoch
SECONDS = 2.5          # training seconds between two evaluations
EVAL_S = 0.05          # seconds one evaluation takes
POINTS = 24
TARGET = get("lenet").target({"dataset": "full"})
pytestmark = pytest.mark.fast


# ------------------------------------------------------------------ time_to_target on points
def _pt(j, value):
    return {"epoch": j // PER_EPOCH + 1, "epochs": (j + 1) / PER_EPOCH, "step": (j + 1) * 234,
            "samples": (j + 1) * SAMPLES, "train_s": (j + 1) * SECONDS, "eval_s": EVAL_S, "value": value}


def test_the_first_point_reaching_the_target_counts_and_exact_equality_reaches_it():
    pts = [_pt(0, 0.9), _pt(1, 0.985), _pt(2, 0.99), _pt(3, 0.97)]
    got = tt.time_to_target(pts, "test_acc", 0.985, True)
    assert got["reached"] and got["samples"] == 2 * SAMPLES and got["train_s"] == 2 * SECONDS and got["epochs"] == 0.5
    assert tt.time_to_target(pts, "test_acc", 0.9851, True) == {
        "metric": "test_acc", "target": 0.9851, "higher_is_better": True, "reached": True,
        "train_s": 3 * SECONDS, "samples": 3 * SAMPLES, "epochs": 0.75}
    missed = tt.time_to_target(pts, "test_acc", 0.995, True)
    assert not missed["reached"] and missed["train_s"] is None and missed["samples"] is None and missed["epochs"] is None


def test_a_lower_is_better_metric_reaches_its_target_from_above_and_nan_reaches_nothing():
    pts = [_pt(0, "nan"), _pt(1, 0.5), _pt(2, 0.2), _pt(3, 0.1)]
    assert tt.time_to_target(pts, "val_mse", 0.2, False)["samples"] == 3 * SAMPLES
    assert tt.time_to_target(pts, "val_mse", 0.2, True)["samples"] == 2 * SAMPLES  # the direction matters
    assert tt.time_to_target([_pt(0, "nan")], "val_mse", 1e9, False)["reached"] is False


def test_a_target_is_the_workload_record_s_per_data_set_and_old_results_have_none():
    assert TARGET == ("test_acc", 0.985, True)
    assert get("lenet").target({}) == get("lenet").target({"dataset": "embedded"}) == ("test_acc", 0.94, True)
    assert get("lstm").target({}) == ("val_r2", 0.90, True)
    assert get("dcgan").target({"dataset": "full"}) is None and get("dcgan").target({}) is None
    assert tt.from_evaluation(None, TARGET) is None and tt.from_evaluation({"points": []}, TARGET) is None
    assert tt.from_evaluation({"points": [_pt(0, 0.99)]}, None) is None
    assert tt.from_evaluation({"metric": "test_loss", "points": [_pt(0, 0.99)]}, TARGET) is None


# ------------------------------------------------------------------ the rules
def test_a_missed_target_counts_as_infinite_in_the_median_and_reads_not_reached():
    assert stats.algoperf_median([10, 20, None])["value"] == 20
    got = stats.algoperf_median([10, None, None])
    assert math.isinf(got["value"]) and got["reached"] == 1 and got["n"] == 3 and math.isinf(got["hi"])
    assert stats.algoperf_median([10, 30, None, None])["value"] == math.inf  # (30 + inf) / 2
    from frameval.report.timetotarget import scored
    S = Strings("en")
    assert scored(got, S).startswith("not reached (") and scored(stats.algoperf_median([]), S) == "n/a"


def test_mlperf_drops_exactly_the_fastest_and_the_slowest_and_needs_five_runs():
    assert stats.mlperf_mean([1, 100, 7, 8, 9])["value"] == pytest.approx(8)
    assert stats.mlperf_mean([5, 5, 6, 7, 1000, 2])["value"] == pytest.approx((5 + 5 + 6 + 7) / 4)
    assert stats.mlperf_mean([1, 2, 3, 4, None])["value"] == pytest.approx(3)  # the one miss is the slowest: dropped
    assert math.isinf(stats.mlperf_mean([1, 2, 3, None, None])["value"])
    few = stats.mlperf_mean([1, 2, 3, 4])
    assert few["value"] is None and few["reason"] == "too_few"
    iv = stats.mlperf_mean([10, 11, 12, 13, 14, 15])
    assert iv["lo"] <= iv["value"] <= iv["hi"] and stats.mlperf_mean([10, 11, 12, 13, 14, 15]) == iv  # fixed draws


def test_holm_multiplies_the_kth_smallest_p_by_m_minus_k_plus_1_and_stays_monotone():
    assert stats.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert stats.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])


# ------------------------------------------------------------------ synthetic folders
def _result(fw, seed, reach, root, record=True):
    """A LeNet run on full MNIST whose test accuracy first reaches the target at
    evaluation point `reach` (None: never), with the recorder's own figure."""
    d = f"{root}/runs/{fw}/lenet-graph" + (f"/seed-{seed}" if seed else "")
    pts = [_pt(j, 0.99 if reach is not None and j >= reach else 0.97) for j in range(POINTS)]
    out = {"framework": fw, "workload": "lenet", "mode": "graph", "device": "cpu", "status": "ok",
           "params": {"seed": seed, "dataset": "full", "out_dir": d}, "test_acc": pts[-1]["value"],
           "samples_per_s": 6000.0, "epochs": [{"epoch": 1, "seconds": 10.0, "samples": 60000}],
           "evaluation": {"per_epoch": PER_EPOCH, "metric": "test_acc", "higher_is_better": True, "points": pts,
                          "eval_s": EVAL_S * POINTS + seed * 0.01},
           "_dir": d, "_source": str(root)}
    if record:  # written by hand, not by tt.time_to_target: what a recorder would write
        hit = reach is not None
        out["time_to_target"] = {"metric": "test_acc", "target": 0.985, "higher_is_better": True, "reached": hit,
                                 "train_s": (reach + 1) * SECONDS if hit else None,
                                 "samples": (reach + 1) * SAMPLES if hit else None,
                                 "epochs": (reach + 1) / PER_EPOCH if hit else None}
    return out


def _matrix(root, reach_of, seeds=range(5)):
    """{fw: reach point of each seed} -> results; equal frameworks draw from one distribution (ties)."""
    return [_result(fw, s, reach_of(fw, s), root) for fw in FRAMEWORKS for s in seeds]


def _equal(rng):
    return lambda fw, s: rng.choice((4, 5, 6))


def _planted(rng, slow="mindspore"):
    base = _equal(rng)
    return lambda fw, s: 2 * (base(fw, s) + 1) - 1 if fw == slow else base(fw, s)  # twice the samples


def _analysed(results):
    rows = make_rows(results, Strings("en"))
    return rows, analyse(rows)


def test_a_framework_needing_twice_the_samples_is_flagged_and_seven_equal_ones_are_not():
    S = Strings("en")
    rows, an = _analysed(_matrix("/o", _planted(random.Random(1))))
    found = target_findings("lenet", rows, S, an)
    alerts = [f for f in found if f.alert]
    assert len(alerts) == 1 and "MindSpore graph" in alerts[0].text and "Holm-adjusted p = " in alerts[0].text
    for seed in range(3):
        rows, an = _analysed(_matrix("/o", _equal(random.Random(seed))))
        assert not [f for f in target_findings("lenet", rows, S, an) if f.alert], seed
        section = target_section("lenet", rows, S, an)
        assert any("Mann-Whitney U" in n and "Holm-corrected" in n and "35 runs" in n and ": none." in n
                   for n in section["notes"])


def test_too_few_runs_for_parity_or_mlperf_say_so():
    S = Strings("en")
    rows, an = _analysed(_matrix("/o", _equal(random.Random(0)), seeds=range(2)))
    section = target_section("lenet", rows, S, an)
    assert any("not tested, too few seeds" in n for n in section["notes"])
    assert "too few for MLPerf's rule (2 runs; it needs 5)" in [c["t"] for c in section["table"]["rows"][0]]
    assert not [f for f in target_findings("lenet", rows, S, an) if f.alert]


def _write(root, results):
    for r in results:
        d = root / "runs" / r["framework"] / r["_dir"].split(f"/runs/{r['framework']}/", 1)[1]
        d.mkdir(parents=True, exist_ok=True)
        (d / RESULT).write_text(json.dumps({k: v for k, v in r.items() if not k.startswith("_")}))


def _recomputed(folder):
    """{fw: [(seed, time to target recomputed from its file, its file's own record)]}."""
    out = {}
    for f in sorted(folder.glob("runs/*/lenet-graph/**/" + RESULT)):
        rec = json.loads(f.read_text())
        got = tt.time_to_target(rec["evaluation"]["points"], *TARGET)
        out.setdefault(rec["framework"], []).append((rec["params"]["seed"], got, rec["time_to_target"]))
    return out


def test_the_report_s_cells_equal_a_recomputation_from_the_result_files_and_its_alert_names_the_planted(tmp_path):
    from frameval import report
    results = _matrix(tmp_path, _planted(random.Random(1)))
    results[3]["evaluation"]["points"] = results[3]["evaluation"]["points"][:4]  # torch seed 3: never reaches it
    results[3]["time_to_target"] = {**results[3]["time_to_target"], "reached": False, "train_s": None,
                                    "samples": None, "epochs": None}
    _write(tmp_path / "src", results)
    info = report.build([str(tmp_path / "src")], tmp_path / "out", lang="en")
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "> ⚠️ **Convergence parity, LeNet-5 (MNIST classification): MindSpore graph needs a median of 180,000 samples" in md and not info["problems"]
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    alerts = html[html.index('id="alerts"'):html.index("</div>", html.index('id="alerts"'))]
    assert "Convergence parity, LeNet-5 (MNIST classification): MindSpore graph" in alerts
    assert 'id="ttt-lenet"' in html and 'id="table-ttt-lenet"' in html
    S = Strings("en")
    from frameval.report.timetotarget import _samples, scored
    for fw, runs in _recomputed(tmp_path / "src").items():
        assert all(got == rec for _, got, rec in runs), fw  # the recorder's figure is the recomputation
        times = [got["train_s"] for _, got, _ in runs]
        samples = [got["samples"] for _, got, _ in runs]
        k = sum(got["reached"] for _, got, _ in runs)
        algo, ml = stats.algoperf_median(times), stats.mlperf_mean(times)
        smp = stats.algoperf_median(samples)
        line = next(ln for ln in md.splitlines() if ln.startswith(f"| {_label(fw)} graph | Test accuracy ≥ 98.50% |"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[2].strip("*") == f"{k}/5" and cells[3] == scored(algo, S) and cells[4] == scored(ml, S)
        assert cells[5] == scored(smp, S, _samples)
    zh = report.build([str(tmp_path / "src")], tmp_path / "zh", lang="zh")
    assert "收敛一致性，LeNet-5（MNIST 图像分类）：MindSpore graph" in (tmp_path / "zh" / "report.md").read_text(encoding="utf-8")
    assert not zh["problems"]


def _label(fw):
    from frameval.catalog import framework_name
    return framework_name(fw)


def test_evaluation_seconds_are_shown_apart_and_old_results_read_not_available():
    S = Strings("en")
    results = _matrix("/o", _equal(random.Random(0)), seeds=range(3))
    old = [{k: v for k, v in r.items() if k not in ("evaluation", "time_to_target")} for r in results]
    rows, an = _analysed(old)
    section = target_section("lenet", rows, S, an)
    assert all(c["t"] == "n/a" for row in section["table"]["rows"] for c in row[2:])  # a target, no points
    assert target_section("lenet", make_rows([{**r, "params": {**r["params"], "dataset": "embedded"}} for r in old],
                                             S), S, analyse([])) is None
    rows, an = _analysed(results)
    row = target_section("lenet", rows, S, an)["table"]["rows"][0]
    assert row[-1]["t"] == f"{EVAL_S * POINTS + 0.01:.2f} ({EVAL_S * POINTS:.2f}–{EVAL_S * POINTS + 0.02:.2f})"


def test_a_recorded_figure_that_differs_from_its_points_is_flagged():
    S = Strings("en")
    results = _matrix("/o", _equal(random.Random(0)), seeds=range(3))
    results[0]["time_to_target"]["samples"] += 1
    rows, an = _analysed(results)
    torch = next(i for i, w in enumerate(rows) if w.fw == "torch")
    cell = target_section("lenet", rows, S, an)["table"]["rows"][torch][2]
    assert cell["cls"] == "flag" and "differs from the recomputation" in cell["title"]


def test_a_workload_without_a_target_says_no_target_at_this_size(monkeypatch):
    monkeypatch.delitem(get("lenet").targets, "mnist-embedded")  # a data set with no target
    S = Strings("en")
    results = [{**r, "params": {**r["params"], "dataset": "embedded"}} for r in _matrix("/o", _equal(random.Random(0)),
                                                                                        seeds=range(1))]
    rows, an = _analysed(results)
    section = target_section("lenet", rows, S, an)
    assert all(row[1]["t"] == "no target at this size" for row in section["table"]["rows"])
    assert not target_findings("lenet", rows, S, an)


def test_malformed_evaluation_records_read_not_available_and_never_crash():
    S = Strings("en")
    results = _matrix("/o", _equal(random.Random(0)), seeds=range(3))
    torch = [r for r in results if r["framework"] == "torch"]
    torch[0]["evaluation"] = {"points": "x", "eval_s": "nan"}
    torch[1]["evaluation"]["points"] = [None, 3, {"value": True}, {"value": 0.99, "train_s": "1.0", "samples": None}]
    torch[2]["evaluation"] = ["not", "a", "dict"]
    rows, an = _analysed(results)
    t = an.target(next(w for w in rows if w.fw == "torch"))
    assert len(t.runs) == 1 and t.runs[0].got["reached"] and t.runs[0].got["train_s"] is None
    assert t.algoperf["value"] is None and t.algoperf["n"] == 0  # reached, at a time not recorded: not a miss
    section = target_section("lenet", rows, S, an)
    assert section["table"]["rows"][0][3]["t"] == "n/a" and section["table"]["rows"][0][2]["t"] == "1/1"
    text = " ".join(f.text for f in target_findings("lenet", rows, S, an))
    assert "the quickest is" in text and "PyTorch" not in text  # neither ranked nor called a miss

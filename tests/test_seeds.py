"""Seeds as replicates (--seeds): the planner gives every seed its own folder
and cache key; the report folds a run's seeds into one row, gives its quality
a 95% interval over seeds, and compares frameworks seed by seed (docs/seeds.md)."""
import json
import math

import pytest

from conftest import run_all
from frameval import execute, stats
from frameval.files import RESULT
from frameval.plan import PlanError, build_plan, parse_seeds
from frameval.report.analysis import analyse
from frameval.report.findings import quality_finding
from frameval.report.i18n import Strings
from frameval.report.model import make_rows


# ------------------------------------------------------------------ the plan
@pytest.mark.fast
def test_seeds_parse_as_a_count_or_a_list_and_bad_ones_are_refused():
    assert parse_seeds("5") == [0, 1, 2, 3, 4] and parse_seeds("0,1,4") == [0, 1, 4] and parse_seeds("") == []
    assert parse_seeds("3,3,1") == [3, 1]
    for bad in ("0x", "-1", "0", "1,,a", "101"):
        with pytest.raises(PlanError, match="--seeds"):
            parse_seeds(bad)
    p = run_all("--seeds", "two", "--dry-run")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "--seeds 'two'" in p.stderr
    p = run_all("--seeds", "3", "-p", "seed=1", "--dry-run")
    assert p.returncode == 2 and "both given" in p.stderr


@pytest.mark.fast
def test_every_seed_has_its_own_folder_and_cache_key_and_seed_0_is_the_default_run(tmp_path):
    runs = build_plan("torch", "lenet", "graph", "cpu", "quick", seeds="3", repeats=2)
    assert [(r.seed, r.repeat, r.seed_dir) for r in runs] == [
        (0, 1, ""), (0, 2, ""), (1, 1, "seed-1"), (1, 2, "seed-1"), (2, 1, "seed-2"), (2, 2, "seed-2")]
    assert [r.params["seed"] for r in runs] == [0, 0, 1, 1, 2, 2]
    keys = {execute.cache_key(execute.key_parts(r, "freeze")) for r in runs if r.repeat == 1}
    assert len(keys) == 3
    plain = build_plan("torch", "lenet", "graph", "cpu", "quick")[0]
    assert execute.key_parts(plain, "f") == execute.key_parts(runs[0], "f")  # a default run is seed 0's
    p = run_all("--frameworks", "torch", "--workloads", "lenet", "--seeds", "0,4", "--dry-run", "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert "torch/lenet-graph seed 0: execute" in p.stdout and "torch/lenet-graph seed 4: execute" in p.stdout


# ------------------------------------------------------------------ synthetic seed folders
def _result(fw, acc, seed, root="/o", repeat=1, lr=0.001, **params):
    d = f"{root}/runs/{fw}/lenet-graph" + (f"/seed-{seed}" if seed else "") + (f"/r{repeat}" if repeat > 1 else "")
    return {"framework": fw, "workload": "lenet", "mode": "graph", "device": "cpu", "status": "ok",
            "params": {"seed": seed, "lr": lr, "out_dir": d, **params}, "test_acc": acc, "samples_per_s": 1000.0,
            "epochs": [{"epoch": 1, "seconds": 1.0, "samples": 640}], "_dir": d, "_source": root}


SPREAD = (0.0, 1.0, -1.0, 0.5, -0.5)  # a seed's offset from the mean, in units of the spread


def _seed_results(fw, mean, spread, seeds, shift=0, **kw):
    return [_result(fw, mean + spread * SPREAD[(i + shift) % 5], s, **kw) for i, s in enumerate(seeds)]


def _sentence(results):
    rows = make_rows(results, Strings("en"))
    return quality_finding("lenet", rows, Strings("en"), analyse(rows)), rows


@pytest.mark.fast
def test_a_run_s_seeds_and_repeats_make_one_row_with_one_value_per_seed():
    rs = [_result("torch", 0.90, 0), _result("torch", 0.92, 0, repeat=2), _result("torch", 0.80, 1),
          _result("torch", 0.70, 2)]
    rows = make_rows(rs, Strings("en"))
    assert len(rows) == 1 and [s for s, _ in rows[0].seeds] == [0, 1, 2]
    q = analyse(rows).quality(rows[0])
    assert q.by_seed == pytest.approx({0: 0.91, 1: 0.80, 2: 0.70})  # seed 0: the mean of its repeats
    assert q.mean == pytest.approx((0.91 + 0.80 + 0.70) / 3) and q.lo < q.mean < q.hi and q.n == 3


@pytest.mark.fast
def test_a_seed_left_by_another_plan_is_not_a_seed_of_this_one():
    rows = make_rows([_result("torch", 0.9, 0), _result("torch", 0.8, 1), _result("torch", 0.1, 2, lr=0.5)],
                     Strings("en"))
    assert sorted(len(w.seeds) for w in rows) == [1, 2]
    assert {w.variant for w in rows} == {"lr=0.001", "lr=0.5"}  # a run of several seeds is not told apart by its seed


@pytest.mark.fast
def test_a_tenth_of_a_point_apart_with_a_three_tenths_spread_is_within_seed_noise():
    text, _ = _sentence(_seed_results("torch", 0.950, 0.003, range(5))
                        + _seed_results("tensorflow", 0.949, 0.003, range(5), shift=1))
    assert "over seeds" in text and "TensorFlow graph within seed noise" in text and "paired by seed" in text
    assert "lower by" not in text


@pytest.mark.fast
def test_a_point_apart_with_a_tenth_spread_is_lower_with_an_interval_that_excludes_0():
    text, rows = _sentence(_seed_results("torch", 0.960, 0.001, range(5))
                           + _seed_results("tensorflow", 0.950, 0.001, range(5), shift=1))
    assert "TensorFlow graph lower by" in text and "paired by seed" in text
    an = analyse(rows)
    t, f = (next(w for w in rows if w.fw == fw) for fw in ("torch", "tensorflow"))
    d = stats.seed_difference(an.quality(t).by_seed, an.quality(f).by_seed)
    assert d["verdict"] == "lower" and d["hi"] < 0 and d["paired"]
    lo, hi = sorted((abs(d["lo"]), abs(d["hi"])))
    assert f"lower by {abs(d['diff']) * 100:.2f} pt ({lo * 100:.2f} pt–{hi * 100:.2f} pt)" in text
    sd, dof = stats.pooled_sd([[r.raw["test_acc"] for s, rs in w.seeds for r in rs[:1]] for w in rows])
    assert f"SD {sd * 100:.2f} pt, within each of the 2 runs over its seeds, pooled ({dof} degrees" in text and dof == 8
    for w in rows:  # each run's mean and interval, as recomputed from its seeds
        q = stats.seed_mean([r["test_acc"] for s, rs in w.seeds for r in [rs[0].raw]])
        assert f"{w.label} {q['mean'] * 100:.2f}% ({q['lo'] * 100:.2f}%–{q['hi'] * 100:.2f}%, 5 seeds)" in text


@pytest.mark.fast
def test_other_seeds_on_the_two_sides_are_compared_unpaired_and_say_so():
    text, _ = _sentence(_seed_results("torch", 0.960, 0.001, range(5))
                        + _seed_results("tensorflow", 0.950, 0.001, range(5, 10), shift=1))
    assert "unpaired: the runs' seeds differ" in text and "paired by seed" not in text
    d = stats.seed_difference({0: 1.0, 1: 1.1, 2: 0.9}, {3: 1.0, 4: 1.1, 5: 0.9})
    assert not d["paired"] and d["verdict"] == "same"
    assert stats.seed_difference({0: 1.0, 1: 1.1}, {0: 2.0, 1: 2.1})["verdict"] == "too_few"


@pytest.mark.fast
def test_one_seed_gives_a_range_never_a_ranking_and_equal_values_are_equal(monkeypatch):
    from frameval.workloads import get
    for k in list(get("lenet").seed_spread):  # where no spread was measured
        monkeypatch.delitem(get("lenet").seed_spread, k)
    text, _ = _sentence([_result("torch", 0.95501, 0), _result("tensorflow", 0.95499, 0)])
    assert "every run reaches the same" in text and "best" not in text and "lowest" not in text
    text, _ = _sentence([_result("torch", 0.9550, 0), _result("tensorflow", 0.9530, 0)])
    assert "One seed: a range, not a ranking" in text
    # agreement to 1e-7, however consistent its sign, is no difference
    assert stats.seed_difference({0: 0.9, 1: 0.8, 2: 0.7}, {0: 0.9 + 1e-7, 1: 0.8 + 1e-7, 2: 0.7 + 1e-7},
                                 tol=1e-4)["verdict"] == "same"


@pytest.mark.fast
def test_one_seed_is_widened_by_the_seed_spread_measured_here(monkeypatch):
    """A one-seed report says no more than the measured seed spread allows:
    a gap within 1.96 x sqrt(2) x SD is no ranking; a larger one ranks, and
    says what the spread is."""
    from frameval.workloads import get
    from frameval.workloads.base import SeedSpread
    wl = get("lenet")
    monkeypatch.setitem(wl.seed_spread, "mnist-embedded", SeedSpread(0.003, 5, 7, 5, "2026-11-26, 2-core CPU"))
    noise = stats.seed_noise(0.003)
    assert noise == pytest.approx(0.008316, abs=1e-6)
    text, _ = _sentence([_result("torch", 0.955, 0), _result("tensorflow", 0.955 - 0.8 * noise, 0)])
    assert "within what the seed alone moves it" in text and "SD 0.30 pt" in text and "0.83 pt" in text
    assert "best" not in text and "lowest" not in text
    text, _ = _sentence([_result("torch", 0.955, 0), _result("tensorflow", 0.955 - 1.2 * noise, 0)])
    assert "best" in text and "larger than the seed alone moves it" in text and "SD 0.30 pt" in text
    # runs on another data set than the one measured: no widening claimed
    text, _ = _sentence([_result("torch", 0.955, 0), _result("tensorflow", 0.950, 0, dataset="full")])
    assert "One seed: a range, not a ranking" in text


@pytest.mark.fast
def test_pooled_sd_is_the_spread_within_frameworks_not_between_them():
    sd, dof = stats.pooled_sd([[1.0, 2.0, 3.0], [11.0, 12.0, 13.0], [5.0]])
    assert sd == pytest.approx(1.0) and dof == 4
    assert stats.pooled_sd([[1.0]]) == (None, 0)


# ------------------------------------------------------------------ a real run with seeds
@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    out = tmp_path_factory.mktemp("seeds")
    args = ["--frameworks", "torch,mxnet", "--workloads", "lenet", "--mode", "eager", "--seeds", "3",
            "-p", "epochs=1", "-p", "max_train_samples=320", "--timeout", "600", "--out", str(out)]
    p = run_all(*args)
    return {"out": out, "proc": p, "args": args}


def test_a_real_seeded_matrix_reports_quality_intervals_equal_to_the_result_files(seeded):
    out, p = seeded["out"], seeded["proc"]
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    md = (out / "report.md").read_text(encoding="utf-8")
    for fw, name in (("torch", "PyTorch"), ("mxnet", "MXNet")):
        folders = [out / "runs" / fw / "lenet-eager", *(out / "runs" / fw / "lenet-eager" / f"seed-{s}" for s in (1, 2))]
        recs = [json.loads((d / RESULT).read_text()) for d in folders]
        assert [r["params"]["seed"] for r in recs] == [0, 1, 2] and all(r["status"] == "ok" for r in recs)
        q = stats.seed_mean([r["test_acc"] for r in recs])
        assert f"{name} eager {q['mean'] * 100:.2f}% ({q['lo'] * 100:.2f}%–{q['hi'] * 100:.2f}%, 3 seeds)" in md
    from frameval.result.store import load_runs
    rows = make_rows(load_runs(str(out), repeats=True), Strings("en"))
    assert sorted((w.fw, len(w.seeds)) for w in rows) == [("mxnet", 3), ("torch", 3)]  # one row per run, not per seed
    for w in rows:  # the table's quality cell: the mean and its interval
        q = analyse(rows).quality(w)
        assert f"| {q.mean * 100:.2f}% ({q.lo * 100:.2f}%–{q.hi * 100:.2f}%) |" in md


def test_a_real_seeded_matrix_reports_time_to_target_equal_to_the_result_files(seeded):
    """Each run's evaluation points (4 an epoch), its recorded time to target equal
    to a recomputation from those points, and the report's time-to-target table
    equal to the recomputation over the seeds."""
    from frameval import target
    from frameval.nb import evaluation
    from frameval.workloads import get
    out = seeded["out"]
    md = (out / "report.md").read_text(encoding="utf-8")
    goal = get("lenet").target({"dataset": "embedded"})
    for fw in ("torch", "mxnet"):
        folders = [out / "runs" / fw / "lenet-eager", *(out / "runs" / fw / "lenet-eager" / f"seed-{s}" for s in (1, 2))]
        recs = [json.loads((d / RESULT).read_text()) for d in folders]
        for r in recs:
            pts = r["evaluation"]["points"]
            # 320 samples, batch 64: 5 steps, evaluated after steps 2, 3, 4 and 5
            assert [p["step"] for p in pts] == sorted(evaluation.due_steps(5)) == [2, 3, 4, 5]
            assert [p["epochs"] for p in pts] == [0.4, 0.6, 0.8, 1.0] and r["evaluation"]["metric"] == "test_acc"
            assert pts[-1]["value"] == pytest.approx(r["test_acc"], abs=1e-9)  # the last point is the final model
            # training so far, evaluation excluded: at most the epoch's seconds (which add the loss read-back after the loop)
            assert 0 < pts[0]["train_s"] < pts[-1]["train_s"] <= r["epochs"][0]["seconds"]
            assert r["time_to_target"] == target.from_evaluation(r["evaluation"], goal)
        got = [target.from_evaluation(r["evaluation"], goal) for r in recs]
        times = [g["train_s"] if g["reached"] else None for g in got]
        med = stats.algoperf_median(times)
        reached = sum(g["reached"] for g in got)
        name = {"torch": "PyTorch", "mxnet": "MXNet"}[fw]
        line = next(ln for ln in md.splitlines() if ln.startswith(f"| {name} eager | Test accuracy ≥ 94.00% |"))
        cells = [c.strip().strip("*") for c in line.split("|")[1:-1]]
        assert cells[2] == f"{reached}/3"
        assert (cells[3] == "not reached") == math.isinf(med["value"])


def test_a_rerun_with_the_same_seeds_reuses_every_one(seeded):
    p = run_all(*seeded["args"], "--dry-run")
    assert p.returncode == 0, p.stderr
    lines = [ln for ln in p.stdout.splitlines() if "lenet-eager seed" in ln]
    assert len(lines) == 6 and all(": reuse (" in ln for ln in lines), lines


# ------------------------------------------------------------------ compare A B: a verdict on a changed hyperparameter
def _write_folder(root, fw_means, seeds=range(5), shift=0):
    for fw, mean in fw_means.items():
        for r in _seed_results(fw, mean, 0.001, seeds, shift=shift, root=str(root), lr=0.002 if shift else 0.001):
            d = root / "runs" / fw / r["_dir"].split(f"/runs/{fw}/", 1)[1]
            d.mkdir(parents=True, exist_ok=True)
            (d / RESULT).write_text(json.dumps({k: v for k, v in r.items() if not k.startswith("_")}))


@pytest.mark.fast
def test_compare_gives_a_quality_verdict_per_run_paired_by_seed_or_unpaired(tmp_path):
    from frameval.report.folders import compare_folders
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    _write_folder(a, {"torch": 0.950, "tensorflow": 0.950})
    _write_folder(b, {"torch": 0.960, "tensorflow": 0.9505}, shift=1)  # torch a point better, tensorflow the same
    got = compare_folders(str(a), str(b))
    q = {x["run"]: x for x in got["data"]["quality"]}
    assert q["torch/lenet-graph"]["verdict"] == "better" and q["torch/lenet-graph"]["lo"] > 0
    assert q["tensorflow/lenet-graph"]["verdict"] == "same" and q["torch/lenet-graph"]["paired"]
    assert "## Quality over seeds" in got["markdown"] and "within seed noise" in got["markdown"]
    assert "paired by seed" in got["markdown"]
    _write_folder(c, {"torch": 0.940, "tensorflow": 0.950}, seeds=range(5, 10), shift=1)
    q = {x["run"]: x for x in compare_folders(str(a), str(c))["data"]["quality"]}
    assert q["torch/lenet-graph"]["verdict"] == "worse" and not q["torch/lenet-graph"]["paired"]

"""The between-run noise of the machine that made the runs (#67, frameval/noise.py).

Fast: the SD per run and its chi-square interval from known pairs; a report
whose folder holds a measured spread uses it in every interval and names it;
one without marks every verdict provisional, with the command that measures
this machine; a command with --repeats adds its pairs."""
import json
import math
import random

import pytest

from frameval import noise, speed
from test_peak_report import _machine, _run, build

pytestmark = pytest.mark.fast


def test_the_spread_and_its_interval_from_pairs():
    rng = random.Random(1)
    d = [rng.gauss(0, 0.1 * math.sqrt(2)) for _ in range(400)]  # pairs of runs whose log SD is 0.1
    got = noise.spread(d)
    assert got["n"] == 400 and got["lo"] < 0.1 < got["hi"] and abs(got["sd"] - 0.1) < 0.01
    assert noise.spread([0.2, -0.2])["sd"] == pytest.approx(0.2 / math.sqrt(2))
    assert noise._chi2_quantile(0.975, 21) == pytest.approx(35.4789, abs=1e-3)  # scipy.stats.chi2.ppf


def _record(sd, n=21):
    rng = random.Random(0)
    pairs = [{"run": f"r{i}", "log_ratio": rng.choice((-1, 1)) * sd * math.sqrt(2)} for i in range(n)]
    return dict(noise.spread([p["log_ratio"] for p in pairs]), pairs=pairs, measured="2026-11-29T05:40:00")


def _report(tmp_path, rec):
    _machine(tmp_path)
    if rec is not None:
        (tmp_path / "src" / noise.NOISE).write_text(json.dumps(rec))
    return build(tmp_path, [_run("tensorflow", 20_000), _run("paddle", 14_000), _run("megengine", 19_500)])


def test_a_measured_spread_is_used_and_named(tmp_path):
    md = _report(tmp_path, _record(0.02))["md"]
    assert "on this machine from 21 pairs of fresh runs (log SD 0.020 per run" in md
    assert "provisional" not in md and "‡" not in md
    row = next(ln for ln in md.splitlines() if ln.startswith("| PaddlePaddle | 3.3.1 | graph |"))
    assert "slower" in row  # 1.43x with a 2% spread per run: called
    built = _report(tmp_path / "b", None)  # the same runs widened by the imported 0.128
    far = built["md"]
    row = next(ln for ln in far.splitlines() if ln.startswith("| PaddlePaddle | 3.3.1 | graph |"))
    assert "‡" in row and "Every verdict here is provisional" in far
    assert "The command python3 run_all.py bench noise measures this one" in built["html"]
    assert f"log SD {speed.BETWEEN_RUN_SD:.3f} per run, about ±13.7%" in far


def test_fewer_pairs_than_the_minimum_are_not_used(tmp_path):
    md = _report(tmp_path, _record(0.02, n=noise.MIN_PAIRS - 1))["md"]
    assert "Every verdict here is provisional" in md


def test_repeats_add_their_pairs(tmp_path, monkeypatch):
    monkeypatch.setenv("FRAMEVAL_NOISE_DIR", str(tmp_path))
    r = {"status": "ok", "device": "cpu", "framework": "torch", "workload": "lenet", "mode": "graph",
         "params": {"threads": 0}, "repeats": [1.0, 1.1, 1.0]}
    busy = dict(r, machine={"cores": 2, "load_before": [1.9, 1.5, 1.0], "other_share": 0.6})
    noise.add_from_repeats([r, dict(r, reused=True), busy])  # reused: counted when it ran; busy: another's noise
    m = noise.read_cached(noise.threads_all())
    assert [round(p["log_ratio"], 6) for p in m["pairs"]] == [round(math.log(1 / 1.1), 6), round(math.log(1.1), 6)]
    assert m["sd"] == pytest.approx(math.sqrt(2 * math.log(1.1) ** 2 / 4), abs=1e-5)


def test_every_printed_interval_uses_the_spread_of_the_machine_that_made_the_runs(tmp_path):
    """Each ratio's interval in the tables, recomputed from the runs' windows with
    the record's spread (0.020) where one is measured, with the imported 0.128
    where none is: the printed text is the recomputed one, and the two differ."""
    from frameval.report import fmt
    runs = {fw: _run(fw, sps) for fw, sps in (("tensorflow", 20_000), ("paddle", 14_000), ("megengine", 19_500))}
    rates = {fw: [speed.rates(r["timing"]["windows"])] for fw, r in runs.items()}
    rec = _record(0.02)
    for folder, sd in ((tmp_path / "a", rec["sd"]), (tmp_path / "b", speed.BETWEEN_RUN_SD)):
        md = _report(folder, rec if sd != speed.BETWEEN_RUN_SD else None)["md"]
        for fw, name in (("paddle", "PaddlePaddle"), ("megengine", "MegEngine")):
            iv = speed.ratio_interval(rates["tensorflow"], rates[fw], between_sd=sd)
            row = next(ln for ln in md.splitlines() if ln.startswith(f"| {name} | "))
            assert f"{fmt.ratio(iv['ratio'])} ({fmt.interval(iv['lo'], iv['hi'])})" in row, (sd, row)
    narrow = speed.ratio_interval(rates["tensorflow"], rates["paddle"], between_sd=rec["sd"])
    wide = speed.ratio_interval(rates["tensorflow"], rates["paddle"])
    assert wide["hi"] - wide["lo"] > 2 * (narrow["hi"] - narrow["lo"])

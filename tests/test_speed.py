"""The one speed estimate (frameval/speed.py): what a window holds, the
between-run floor on an interval, and the recorder and the report agreeing
to the last digit."""
import json
import math

import pytest

from conftest import Clock
from frameval import files, nb, speed
from frameval.report.i18n import Strings
from frameval.report.model import make_rows

pytestmark = pytest.mark.fast

STEP_S, BUILD_S, AFTER_S = 0.004, 0.03, 0.03




def _timed_run(tmp_path, epochs, steps=12, monkeypatch=None):
    """A recorder over `epochs` epochs whose batch list takes BUILD_S to build
    and whose epoch ends with AFTER_S of read-back: neither may enter a window."""
    from frameval.nb import record
    clock = Clock()
    if monkeypatch is not None:
        monkeypatch.setattr(record, "time", clock)
    rec = nb.Recorder("torch", "lenet", {"epochs": epochs, "mode": "graph", "device": "cpu"}, out_dir=str(tmp_path),
                      chdir=False)

    def batches():
        clock.now += BUILD_S
        return [list(range(4))] * steps
    for e in range(epochs):
        with rec.epoch(samples=4 * steps) as ep:
            for i in ep.timed(batches()):
                clock.now += STEP_S * (1 + 0.01 * ((e + len(rec.windows)) % 3))  # a little spread
            clock.now += AFTER_S  # the per-epoch loss .item()
    rec.write()
    return json.loads((tmp_path / files.RESULT).read_text())


def test_a_window_holds_the_steps_only_whatever_the_epoch_count(tmp_path, monkeypatch):
    for epochs in (3, 8):
        r = _timed_run(tmp_path / str(epochs), epochs, monkeypatch=monkeypatch)
        per_step = [w["seconds"] / w["steps"] for w in r["timing"]["windows"] if w["epoch"] > 1]
        assert len(per_step) >= speed.MIN_WINDOWS and r["timing"]["window"] == "steps"
        # the steps' own time and nothing else: the batch build or the read-back would add 0.03 s
        assert all(STEP_S <= s <= STEP_S * 1.02 + 1e-9 for s in per_step), (epochs, per_step)


def test_recorder_and_report_agree_to_the_last_digit(tmp_path, monkeypatch):
    r = _timed_run(tmp_path, 3, monkeypatch=monkeypatch)
    rec_sps = r["samples_per_s"]
    row = make_rows([dict(r, _dir=str(tmp_path))], Strings("en"))[0]
    assert row.samples_per_s == rec_sps == speed.run_rate(r["timing"]["windows"])


def _runs(rates_per_run, windows=6, spread=0.002):
    return [[x * (1 + spread * ((i % 3) - 1)) for i in range(windows)] for x in rates_per_run]


def test_two_repeats_that_agree_closely_are_not_narrower_than_the_floor():
    a, b = _runs([1000.0, 1000.5]), _runs([800.0, 800.4])
    iv = speed.ratio_interval(a, b)
    floor = math.sqrt(2) * speed.BETWEEN_RUN_SD / math.sqrt(2)  # both sides, each between_sd / sqrt(2)
    half_width = (math.log(iv["hi"]) - math.log(iv["lo"])) / 2
    assert iv["widened"] and half_width >= 0.95 * 1.96 * floor
    one = speed.ratio_interval(_runs([1000.0]), _runs([800.0]))
    assert math.log(iv["hi"] / iv["lo"]) <= math.log(one["hi"] / one["lo"])  # more runs: not wider
    # two runs are not narrower than what between_sd / sqrt(2) implies for each side
    assert math.log(iv["hi"] / iv["lo"]) >= 0.95 * math.log(one["hi"] / one["lo"]) / math.sqrt(2)


def test_runs_that_disagree_widen_beyond_the_floor():
    calm = speed.rate_interval(_runs([1000.0, 1001.0, 999.0]))
    wild = speed.rate_interval(_runs([1000.0, 1600.0, 700.0]))
    assert math.log(wild["hi"] / wild["lo"]) > 1.5 * math.log(calm["hi"] / calm["lo"])


def test_six_runs_rest_on_the_bootstrap_alone():
    iv = speed.rate_interval(_runs([1000.0, 1000.2, 999.9, 1000.1, 1000.3, 999.8]))
    assert not iv["widened"] and iv["hi"] / iv["lo"] < 1.01


def test_the_interval_is_of_the_point_it_shows():
    runs = _runs([1000.0, 1300.0, 900.0])
    iv = speed.rate_interval(runs, between_sd=0)
    assert iv["rate"] == speed.side_rate(runs) and iv["lo"] <= iv["rate"] <= iv["hi"]


def test_ranking_and_compare_never_point_opposite_ways():
    """Random version pairs, 1 to 7 runs a side: compare's verdict (stats.verdict
    on each run's speed.run_rate) and the ranking's interval never contradict."""
    import random
    from frameval import stats
    rng = random.Random(7)
    for _ in range(150):
        sides = []
        for base in (1000.0, 1000.0 * math.exp(rng.gauss(0, 0.3))):
            n = rng.choice([1, 2, 3, 5, 7])
            sides.append([[base * math.exp(rng.gauss(0, 0.1)) * (1 + rng.gauss(0, 0.02)) for _ in range(6)]
                          for _ in range(n)])
        a, b = sides
        v = stats.verdict([speed.side_rate([r]) for r in a], [speed.side_rate([r]) for r in b])["verdict"]
        a_faster = speed.side_rate(a) >= speed.side_rate(b)
        iv = speed.ratio_interval(a, b) if a_faster else speed.ratio_interval(b, a)
        if iv["verdict"] == "slower":  # the ranking: B slower where A is faster, and the reverse
            assert v != ("faster" if a_faster else "slower"), (v, a_faster, iv)


def test_compare_reads_each_run_as_the_ranking_does(tmp_path, monkeypatch):
    from frameval.report.comparison import samples_per_s
    from frameval.result import Result
    r = _timed_run(tmp_path, 3, monkeypatch=monkeypatch)
    assert samples_per_s(Result.from_dict(r)) == speed.run_rate(r["timing"]["windows"]) == r["samples_per_s"]


def test_the_fastest_side_drawn_once_gives_the_same_intervals():
    """ratio_interval remembers the fastest side's replicates (a report sets every
    run against it): each interval is the one drawn afresh, to the last digit."""
    import math
    import random
    rng = random.Random(1)
    best = [[rng.uniform(90, 110) for _ in range(16)], [rng.uniform(95, 105) for _ in range(16)]]
    others = [[[rng.uniform(40, 60) for _ in range(16)]] for _ in range(4)]
    speed._BEST_SIDE.clear()
    remembered = [speed.ratio_interval(best, o) for o in others]
    assert len(speed._BEST_SIDE) == 1
    for o, got in zip(others, remembered):
        r = random.Random(0)
        a, _ = speed._side_draws(speed._clean(best), r, speed.DRAWS, speed.BETWEEN_RUN_SD)
        b, _ = speed._side_draws(speed._clean(o), r, speed.DRAWS, speed.BETWEEN_RUN_SD)
        lo, hi = speed._percentiles([x - y for x, y in zip(a, b)])
        assert (got["lo"], got["hi"]) == (math.exp(lo), math.exp(hi))

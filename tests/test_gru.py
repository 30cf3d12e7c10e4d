"""The GRU in the LSTM's place (#70, `-p lstm.cell=gru`) and CPU use in training:
the plan and bad input, then every framework's GRU and LSTM in real kernels at
tiny sizes, each checked against its own float64 reference, and the report's
"LSTM against GRU" figures recomputed from the result files."""
from __future__ import annotations

import json

import pytest

from conftest import TINY, run_all
from frameval.catalog import FRAMEWORKS
from frameval.nb.record import cores_in_use
from frameval.plan import build_plan
from frameval.report import fmt


@pytest.mark.fast
def test_an_unknown_cell_is_one_line_and_exit_2_before_anything_runs(tmp_path):
    out = tmp_path / "out"
    p = run_all("--workloads", "lstm", "-p", "lstm.cell=rnn", "--out", str(out), "--dry-run")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "cell=rnn: choose from lstm, gru" in p.stderr and not out.exists()


@pytest.mark.fast
def test_both_cells_are_two_runs_a_framework():
    names = [r.name for r in build_plan("torch,mxnet", "lstm", "graph", "cpu", "quick", ["lstm.cell=lstm,gru"])]
    assert sorted(names) == ["mxnet/lstm-graph@cell=gru", "mxnet/lstm-graph@cell=lstm",
                             "torch/lstm-graph@cell=gru", "torch/lstm-graph@cell=lstm"]


@pytest.mark.fast
def test_cpu_use_is_cpu_time_over_wall_time_in_the_steady_epochs():
    epochs = [{"seconds": 9.0, "cpu_s": 1.0}, {"seconds": 2.0, "cpu_s": 3.0}, {"seconds": 2.0, "cpu_s": 5.0}]
    assert cores_in_use(epochs) == 2.0  # the first epoch (warm-up) left out
    assert cores_in_use(epochs[:1]) is None  # one epoch: nothing steady
    assert cores_in_use([{"seconds": 1.0}, {"seconds": 1.0}]) is None  # an old result: not recorded, not 0


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    out = tmp_path_factory.mktemp("gru")
    p = run_all("--workloads", "lstm", "-p", "lstm.cell=lstm,gru", "--mode", "eager", "--out", str(out), *TINY,
                timeout=1500)
    results = {}
    for f in sorted((out / "runs").glob("*/lstm-eager@cell=*/result.json")):
        r = json.loads(f.read_text())
        results[(r["framework"], r["params"]["cell"])] = r
    return {"out": out, "proc": p, "results": results}


def test_every_framework_trains_the_gru_it_is_checked_against(both):
    p, res = both["proc"], both["results"]
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert sorted(res) == sorted((fw, c) for fw in FRAMEWORKS for c in ("lstm", "gru"))
    for (fw, c), r in res.items():
        assert r["status"] == "ok" and r["check"]["ok"] is True, (fw, c, r.get("error"), r["check"].get("problems"))
        assert r["param_counts"] == ({"gru": 3393} if c == "gru" else {"lstm": 4385}), (fw, c, r["param_counts"])
        assert set(r["check"]["grads"]) == ({"gru.weight_ih", "gru.weight_hh", "gru.bias_ih", "gru.bias_hh",
                                             "fc.weight", "fc.bias"} if c == "gru" else
                                            {"lstm.weight_ih", "lstm.weight_hh", "lstm.bias", "fc.weight", "fc.bias"})
        losses = [e["train_mse"] for e in r["epochs"]]
        assert all(x == x and abs(x) < 1e6 for x in losses), (fw, c, losses)
        cores = r["cpu_cores"]
        assert cores is not None and 0 < cores <= (r["machine"].get("cores") or 64) + 0.5, (fw, c, cores)


def test_the_report_sets_each_gru_against_its_lstm(both):
    md = (both["out"] / "report.md").read_text()
    assert "## GRU against the LSTM" in md
    table = md.split("## GRU against the LSTM", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "eager" in line]
    assert len(rows) == len(FRAMEWORKS), table
    for (fw, c), g in both["results"].items():
        if c != "gru":
            continue
        lstm = both["results"][(fw, "lstm")]
        row = next(line for line in rows if line.split("|")[1].strip().startswith(fw_name(fw) + " "))
        cells = [x.strip() for x in row.strip("|").split("|")]
        assert cells[2] == f"{fmt.rate(lstm['samples_per_s'])} / {fmt.rate(g['samples_per_s'])}", (fw, cells)
        assert cells[3].startswith(fmt.ratio(g["samples_per_s"] / lstm["samples_per_s"])), (fw, cells)
        assert cells[4] == "4,385 / 3,393" and cells[9] == "✓ / ✓", (fw, cells)
        assert cells[7] == f"{lstm['cpu_cores']:.2f} / {g['cpu_cores']:.2f}", (fw, cells)
    # a GRU is never ranked against an LSTM: the summary's speed lines name each cell's ranking apart
    assert "LSTM (CO2 time series) (GRU):" in md and "LSTM (CO2 time series) (LSTM):" in md


def fw_name(fw: str) -> str:
    from frameval.catalog import framework_name
    return framework_name(fw)

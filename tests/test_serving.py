"""Save, load and serve (#70) on the real path: every run of the 42-run matrix
(7 frameworks x 3 workloads x both modes, tiny) saved its model in its
framework's deployment format, loaded it in a fresh process and timed it;
the report's section carries each figure of the result files."""
import json
import re
from pathlib import Path

import pytest

from frameval import frameworks
from frameval.report import fmt
from frameval.report.serving import ROUNDING, median_interval, reload_verdict, small

# the workloads' evaluation batches and inputs, as the notebooks' serve cells hand them over
BATCH = {"lenet": 1000, "dcgan": 64, "lstm": 256}
INPUTS = {"lenet": "the test set", "dcgan": "a fixed batch of the evaluation's noise", "lstm": "the validation windows"}


def test_every_run_saved_loaded_and_served(matrix):
    assert len(matrix["results"]) == 42
    for (fw, wl, mode), r in matrix["results"].items():
        s = r["serving"]
        where = f"{fw}/{wl}-{mode}: {s}"
        assert r["status"] == "ok" and s["status"] == "ok", where
        assert s["inputs"] == INPUTS[wl] and s["batch"] == min(BATCH[wl], s["n"]) and s["calls"] == 3, where
        folder = Path(r["_dir"] if "_dir" in r else matrix["out"] / "runs" / fw / f"{wl}-{mode}") / "work" / "served" / "model"
        on_disk = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
        assert s["bytes"] == on_disk > 0, where  # the figure is the files' own size
        assert s["save_s"] > 0 and s["import_s"] > 0 and s["load_s"] > 0, where
        assert s["finite"] and (s["exact"] or s["max_rel_diff"] <= ROUNDING), where
        assert s["exact"] == (s["max_abs_diff"] == 0), where
        for b in {1, s["batch"]}:
            lat = s["latency_ms"][str(b)]
            assert lat["calls"] == 3 and len(lat["ms"]) == 3 and lat["p99"] is None, where  # no p99 below 100 calls
            assert 0 < min(lat["ms"]) <= lat["p50"] <= lat["p90"] <= max(lat["ms"]), where
        assert s["throughput"] == pytest.approx(s["batch"] / (s["latency_ms"][str(s["batch"])]["p50"] / 1e3)), where


def _serving_rows(md: str) -> dict:
    """{(workload heading, framework, mode): cells} of the report's serving tables."""
    section = md.split('<a name="serving"></a>')[1].split("\n<a name=")[0]
    out = {}
    for part in section.split("\n### ")[1:]:
        heading = part.splitlines()[0]
        for line in part.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if line.startswith("| ") and len(cells) == 11 and cells[1] in ("graph", "eager"):
                out[(heading, cells[0], cells[1])] = cells
    return out


def test_report_section_carries_the_result_files_figures(matrix):
    md = (matrix["out"] / "report.md").read_text()
    rows = _serving_rows(md)
    assert len(rows) == 42, sorted(rows)
    names = {"lenet": "LeNet-5", "dcgan": "DCGAN", "lstm": "LSTM"}
    for (fw, wl, mode), r in matrix["results"].items():
        s = r["serving"]
        cells = rows[(next(h for h in {k[0] for k in rows} if h.startswith(names[wl])), frameworks.get(fw).display, mode)]
        assert cells[3] == fmt.kib(s["bytes"]) and cells[4] == fmt.seconds(s["save_s"]), (fw, wl, mode, cells)
        assert cells[5] == fmt.seconds(s["import_s"]) and cells[6] == fmt.seconds(s["load_s"])
        mark = reload_verdict(s)[0]
        assert cells[7].strip("*") == (mark if s["exact"] else f"{mark} {small(s['max_abs_diff'])}")
        assert cells[8] == f"{fmt.millis(s['latency_ms']['1']['p50'])} / n/a"
    assert "p99 is not available below 100 calls; --serve times 100" in md
    assert "serving latencies over fewer than 100 calls: no p99" in md  # the scope box


def test_median_interval_from_order_statistics():
    calls = list(range(1, 101))  # 1..100 ms
    lo, hi = median_interval(calls)
    assert lo < 50.5 < hi and (lo, hi) == (40, 61)  # the 40th and 61st smallest: binomial(100, 1/2)'s 2.5% point is 40
    assert median_interval([1.0] * 5) is None


def test_reload_verdicts():
    assert reload_verdict({"exact": True, "max_abs_diff": 0.0})[0] == "✓"
    assert reload_verdict({"exact": False, "max_abs_diff": 5e-8, "max_rel_diff": 4e-7, "finite": True})[0] == "≈"
    assert reload_verdict({"exact": False, "max_abs_diff": 0.3, "max_rel_diff": 0.1, "finite": True})[0] == "✗"
    assert reload_verdict({"exact": False, "max_abs_diff": 0.0, "max_rel_diff": 0.0, "finite": False})[0] == "✗"

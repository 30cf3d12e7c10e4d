"""One type for the files a run writes (frameval/result: result.json;
frameval/result/folder.py: plan.json, environments/*.json): every record
survives a round trip through its dict, every writer writes the current
version's keys, and every older file (the committed fixtures: schemas 1 and
2, and files of no schema at all) reads without raising."""
from __future__ import annotations

import json
from dataclasses import MISSING, fields
from pathlib import Path
from types import SimpleNamespace

import pytest

from frameval import result
from frameval.result import SCHEMA_VERSION, Result, folder, store

pytestmark = pytest.mark.fast
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def test_one_version_for_writer_and_reader():
    from frameval.nb import record
    assert SCHEMA_VERSION == record.SCHEMA == 5


def test_a_result_round_trips_through_its_file(tmp_path):
    """save then load: the same dict, and the same typed view; where it was found is not written."""
    d = {**result.new_result("torch", "lenet", "graph", "cpu", {"epochs": 1}, 2, {"python": "3.10"}, "now"),
         "test_acc": 0.9, "check": {"ok": True}}
    f = tmp_path / "runs" / "torch" / "lenet-graph" / "result.json"
    result.save(f, d)
    assert json.loads(f.read_text()) == d == result.load(f) == result.validate(d)
    r = Result.from_dict({**d, "_dir": str(f.parent)})
    r.save(f)
    assert Result.load(f) == Result.from_dict(d) and Result.load(f).raw == d


@pytest.mark.parametrize("record", [
    folder.Plan(command="python3 run_all.py", profile="quick", frameworks=["torch"], runs=["torch/lenet-graph"],
                extra={"something_new": 1}),
    folder.Environment(framework="torch", fw_key="torch", spec_name="torch", backend="venv",
                       extra={"framework_version": "2.5.0", "installer": "uv"}),
], ids=lambda r: type(r).__name__)
def test_every_record_round_trips(record):
    d = record.to_dict()
    assert json.loads(json.dumps(d)) == d
    again = type(record).from_dict(d)
    assert again == record and again.to_dict() == d


def test_the_writers_write_the_same_keys():
    """A notebook's record, a failed run's and the corrupt-file fallback: one shape."""
    new = result.new_result("torch", "lenet", "graph", "cpu", {"epochs": 1}, 2, {"python": "3.10"}, "now")
    run = SimpleNamespace(framework="torch", workload="lenet", mode="graph", device="cpu", params={"epochs": 1})
    failed = store.failure_record(run, "RuntimeError", "boom", "tb")
    starts = {f.name for f in fields(Result) if f.metadata.get("start", MISSING) is not MISSING}
    assert set(new) == set(failed) == starts and len(starts) == 36
    assert new["schema"] == failed["schema"] == SCHEMA_VERSION and failed["status"] == "failed"
    kept = store.failure_record(run, "Timeout", "late", partial={**new, "epochs": [{"epoch": 1}], "test_acc": 0.5})
    assert kept["epochs"] == [{"epoch": 1}] and kept["test_acc"] == 0.5 and kept["error"]["type"] == "Timeout"


def test_a_corrupt_file_reads_as_a_failed_record_of_this_schema(tmp_path):
    f = tmp_path / "runs" / "torch" / "lenet-graph" / "result.json"
    f.parent.mkdir(parents=True)
    f.write_text("{not json")
    r = result.load(f)
    assert r["schema"] == SCHEMA_VERSION and r["status"] == "failed" and r["error"]["type"] == "CorruptResult"
    assert (r["framework"], r["workload"], r["mode"]) == ("torch", "lenet", "graph")


@pytest.mark.parametrize("path", sorted(FIXTURES.rglob("*.json")), ids=lambda p: p.relative_to(FIXTURES).as_posix())
def test_every_committed_file_of_an_older_version_reads(path):
    d = json.loads(path.read_text())
    if path.name == "plan.json":
        out = folder.Plan.from_dict(d).to_dict()
    elif path.parent.name == "environments":
        out = folder.Environment.from_dict(d).to_dict()
    else:
        out = result.validate(d)
        assert 1 <= out["schema"] <= SCHEMA_VERSION and Result.from_dict(d).workload == d.get("workload")
    assert {k: out[k] for k in d} == d  # every key as it was written: the report shows the same


def test_an_older_plan_keeps_its_overrides_as_written():
    """Plans before version 4 held the -p values as a dict; the report shows them as they were."""
    assert folder.Plan.from_dict({"overrides": {"epochs": 3}}).overrides == {"epochs": 3}
    assert folder.Plan.from_dict({"overrides": ["lenet.lr=0.002"]}).overrides == ["lenet.lr=0.002"]
    assert folder.Plan.from_dict({"overrides": "x"}).overrides == []


@pytest.mark.parametrize("junk", [None, [], "text", {"schema": "x", "params": 3, "epochs": {}}, {}])
def test_junk_reads_without_raising(junk):
    r = result.validate(junk)
    assert isinstance(r["params"], dict) and isinstance(r["epochs"], list)
    assert folder.Plan.from_dict(junk).repeats == 1 and folder.Environment.from_dict(junk).framework == ""

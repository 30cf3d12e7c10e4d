"""One schema for the files a run writes (frameval/schema.py): every record
survives a round trip through its dict, every writer writes the current
version's keys, and every older file (the committed fixtures: schemas 1 and
2, and files of no schema at all) reads without raising."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from frameval import results, schema
from frameval.result import SCHEMA_VERSION, Result

pytestmark = pytest.mark.fast
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def test_one_version_for_writer_and_reader():
    assert SCHEMA_VERSION == schema.SCHEMA_VERSION == 5


@pytest.mark.parametrize("record", [
    schema.ResultRecord(framework="torch", workload="lenet", mode="graph", params={"epochs": 1},
                        extra={"test_acc": 0.9, "check": {"ok": True}}),
    schema.Plan(command="python3 run_all.py", profile="quick", frameworks=["torch"], runs=["torch/lenet-graph"],
                extra={"something_new": 1}),
    schema.Environment(framework="torch", fw_key="torch", spec_name="torch", backend="venv",
                       extra={"framework_version": "2.5.0", "installer": "uv"}),
], ids=lambda r: type(r).__name__)
def test_every_record_round_trips(record):
    d = record.to_dict()
    assert json.loads(json.dumps(d)) == d
    again = type(record).from_dict(d)
    assert again == record and again.to_dict() == d


def test_the_writers_write_the_same_keys():
    """A notebook's record, a failed run's and the corrupt-file fallback: one shape."""
    new = schema.new_result("torch", "lenet", "graph", "cpu", {"epochs": 1}, 2, {"python": "3.10"}, "now")
    run = SimpleNamespace(framework="torch", workload="lenet", mode="graph", device="cpu", params={"epochs": 1})
    failed = results.failure_record(run, "RuntimeError", "boom", "tb")
    assert set(new) == set(failed) == {f for f in schema.ResultRecord.__dataclass_fields__ if f != "extra"}
    assert new["schema"] == failed["schema"] == SCHEMA_VERSION and failed["status"] == "failed"
    kept = results.failure_record(run, "Timeout", "late", partial={**new, "epochs": [{"epoch": 1}], "test_acc": 0.5})
    assert kept["epochs"] == [{"epoch": 1}] and kept["test_acc"] == 0.5 and kept["error"]["type"] == "Timeout"


def test_a_corrupt_file_reads_as_a_failed_record_of_this_schema(tmp_path):
    f = tmp_path / "runs" / "torch" / "lenet-graph" / "result.json"
    f.parent.mkdir(parents=True)
    f.write_text("{not json")
    r = results.read_result(f)
    assert r["schema"] == SCHEMA_VERSION and r["status"] == "failed" and r["error"]["type"] == "CorruptResult"
    assert (r["framework"], r["workload"], r["mode"]) == ("torch", "lenet", "graph")


@pytest.mark.parametrize("path", sorted(FIXTURES.rglob("*.json")), ids=lambda p: p.relative_to(FIXTURES).as_posix())
def test_every_committed_file_of_an_older_version_reads(path):
    d = json.loads(path.read_text())
    if path.name == "plan.json":
        out = schema.Plan.from_dict(d).to_dict()
    elif path.parent.name == "environments":
        out = schema.Environment.from_dict(d).to_dict()
    else:
        out = schema.read_result(d)
        assert out["schema"] in (1, 2, 3, 4) and Result.from_dict(d).workload == d.get("workload")
    assert {k: out[k] for k in d} == d  # every key as it was written: the report shows the same


def test_an_older_plan_keeps_its_overrides_as_written():
    """Plans before version 4 held the -p values as a dict; the report shows them as they were."""
    assert schema.Plan.from_dict({"overrides": {"epochs": 3}}).overrides == {"epochs": 3}
    assert schema.Plan.from_dict({"overrides": ["lenet.lr=0.002"]}).overrides == ["lenet.lr=0.002"]
    assert schema.Plan.from_dict({"overrides": "x"}).overrides == []


@pytest.mark.parametrize("junk", [None, [], "text", {"schema": "x", "params": 3, "epochs": {}}, {}])
def test_junk_reads_without_raising(junk):
    r = schema.read_result(junk)
    assert isinstance(r["params"], dict) and isinstance(r["epochs"], list)
    assert schema.Plan.from_dict(junk).repeats == 1 and schema.Environment.from_dict(junk).framework == ""

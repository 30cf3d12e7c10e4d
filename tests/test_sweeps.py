"""Sweeps as matrix axes (-p batch_size=16,64,256, --threads 1,2): the planner
expands, names and caches each value apart; the report's scaling section shows
each value's figures as the result files hold them, and a value that fails as
failed."""
import json

import pytest

from conftest import run_all
from frameval import execute, files
from frameval.plan import PlanError, build_plan


@pytest.mark.fast
def test_a_comma_list_expands_into_one_run_per_value_for_every_framework():
    runs = build_plan("torch,tf", "lenet", "graph", "cpu", "quick", ["batch_size=16,64", "threads=1,2"])
    assert [r.name for r in runs] == [f"{fw}/lenet-graph@batch_size={b},threads={t}"
                                      for fw in ("torch", "tensorflow") for b in (16, 64) for t in (1, 2)]
    assert [(r.params["batch_size"], r.params["threads"]) for r in runs[:4]] == [(16, 1), (16, 2), (64, 1), (64, 2)]
    assert all(r.sweep == {"batch_size": r.params["batch_size"], "threads": r.params["threads"]} for r in runs)
    # equal work within each value: every framework the same parameters
    by_fw = {fw: [r.params for r in runs if r.framework == fw] for fw in ("torch", "tensorflow")}
    assert by_fw["torch"] == by_fw["tensorflow"]


@pytest.mark.fast
def test_a_scoped_sweep_stays_in_its_workload_and_no_sweep_names_as_before():
    runs = build_plan("torch", "lenet,lstm", "graph", "cpu", "quick", ["lenet.batch_size=16,64"])
    assert [r.name for r in runs] == ["torch/lenet-graph@batch_size=16", "torch/lenet-graph@batch_size=64",
                                      "torch/lstm-graph"]
    plain = build_plan("torch", "lenet", "graph", "cpu", "quick")
    assert [r.name for r in plain] == ["torch/lenet-graph"] and plain[0].tag == "" and plain[0].sweep == {}
    assert files.run_dir("/o", "torch", "lenet", "graph", tag=runs[1].tag).name == "lenet-graph@batch_size=64"
    # a later single value ends an earlier sweep; duplicates are one value
    assert [r.tag for r in build_plan("torch", "lenet", "graph", "cpu", "quick",
                                      ["batch_size=16,64", "lenet.batch_size=32"])] == [""]
    assert len(build_plan("torch", "lenet", "graph", "cpu", "quick", ["batch_size=16,16,64"])) == 2


@pytest.mark.fast
def test_bad_sweep_values_are_refused_naming_the_value():
    with pytest.raises(PlanError, match="batch_size must be a positive integer"):
        build_plan("torch", "lenet", "graph", "cpu", "quick", ["batch_size=16,0"])
    with pytest.raises(PlanError, match="an empty value"):
        build_plan("torch", "lenet", "graph", "cpu", "quick", ["batch_size=16,,64"])
    p = run_all("--threads", "1,two", "--dry-run")
    assert p.returncode == 2 and "--threads '1,two'" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    p = run_all("--threads", "1,2", "-p", "threads=1", "--dry-run")
    assert p.returncode == 2 and "both given" in p.stderr


@pytest.mark.fast
def test_each_value_has_its_own_cache_key(tmp_path):
    runs = build_plan("torch", "lenet", "graph", "cpu", "quick", ["batch_size=16,64"])
    keys = [execute.cache_key(execute.key_parts(r, "freeze")) for r in runs]
    assert len(set(keys)) == 2
    p = run_all("--frameworks", "torch", "--workloads", "lenet", "--threads", "1,2", "--dry-run",
                "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert "torch/lenet-graph@threads=1: execute" in p.stdout and "torch/lenet-graph@threads=2: execute" in p.stdout

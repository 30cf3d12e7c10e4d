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
    assert [r.name for r in runs] == [f"{fw}/lenet-graph@batch_size={b}+threads={t}"
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


# ------------------------------------------------------------------ a real sweep, end to end
SWEEP = ["--frameworks", "torch,tensorflow", "--workloads", "lenet", "--mode", "eager", "-p", "epochs=2",
         "-p", "max_train_samples=512", "-p", "batch_size=16,64", "--threads", "1,2", "--timeout", "600"]
FAULT = "tensorflow/lenet@threads=2:raise"  # one value of the thread sweep fails, in one framework


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    import os
    import subprocess
    import sys
    from conftest import REPO
    out = tmp_path_factory.mktemp("sweep")
    p = subprocess.run([sys.executable, str(REPO / "run_all.py"), *SWEEP, "--out", str(out)], capture_output=True,
                       text=True, cwd=REPO, env=dict(os.environ, FRAMEVAL_INJECT_FAULT=FAULT))
    results = {f.parent.name: json.loads(f.read_text()) for f in (out / "runs").glob("*/*/result.json")}
    return {"out": out, "proc": p, "results": results}


def _section(out):
    from frameval.report import charts
    from frameval.report.i18n import Strings
    from frameval.report.model import make_rows
    from frameval.report.analysis import analyse
    from frameval.report.peak import machines
    from frameval.report.scaling import workload_scaling
    from frameval.result.store import load_runs
    from frameval.report.guard import Problems
    S = Strings("en")
    rows = make_rows(load_runs(str(out), repeats=True), S)
    an = analyse(rows, machines([str(out)]))
    problems = Problems(S)
    part = workload_scaling("lenet", rows, S, charts.Charts(out / "check-assets", "en"), problems, an)
    assert not problems.texts(), problems.texts()
    return rows, part, an


def test_a_real_sweep_gives_one_run_per_value_and_the_failed_value_stays(sweep):
    p, res = sweep["proc"], sweep["results"]
    assert p.returncode == 1, p.stdout[-3000:] + p.stderr[-3000:]  # two values failed, on purpose
    names = {f"lenet-eager@batch_size={b}+threads={t}" for b in (16, 64) for t in (1, 2)}
    assert {f.parent.name for f in (sweep["out"] / "runs" / "torch").glob("*/result.json")} == names
    for fw in ("torch", "tensorflow"):
        for b in (16, 64):
            for t in (1, 2):
                r = json.loads((sweep["out"] / "runs" / fw / f"lenet-eager@batch_size={b}+threads={t}" / "result.json").read_text())
                assert (r["params"]["batch_size"], r["params"]["threads"]) == (b, t)
                want = "failed" if (fw, t) == ("tensorflow", 2) else "ok"
                assert r["status"] == want, (fw, b, t, r.get("error"))
    machine = json.loads((sweep["out"] / "machine.json").read_text())
    assert machine["peak_gflops_1"] > 0 and "numpy.matmul" in machine["method"]["matmul"]


def test_the_scaling_tables_equal_the_result_files(sweep):
    out = sweep["out"]
    rows, part, _ = _section(out)
    from frameval import flops
    from frameval.report import fmt
    machine = json.loads((out / "machine.json").read_text())
    batch = part["batch"]
    assert [h["t"] for h in batch["headers"][1:]] == ["16", "64"]
    by_label = {line[0]["t"]: line[1:] for line in batch["rows"]}
    assert set(by_label) == {"PyTorch eager, threads=1", "PyTorch eager, threads=2", "TensorFlow eager, threads=1",
                             "TensorFlow eager, threads=2"}
    for label, cells in by_label.items():
        fw = "torch" if label.startswith("PyTorch") else "tensorflow"
        t = int(label.rsplit("=", 1)[1])
        for b, c in zip((16, 64), cells):
            r = json.loads((out / "runs" / fw / f"lenet-eager@batch_size={b}+threads={t}" / "result.json").read_text())
            if r["status"] == "ok" and machine.get("busy"):
                # the suite's one probe was not idle: the peak is a lower bound, so no share
                assert c["v"] == pytest.approx(r["samples_per_s"]) and "%" not in c["t"] and c["cls"] != "flag"
            elif r["status"] == "ok":
                assert c["v"] == pytest.approx(r["samples_per_s"])
                share = r["samples_per_s"] * flops.training_flops("lenet") / 1e9 / (
                    machine["peak_gflops_1"] if t == 1 else max(machine["peak_gflops_1"], machine["peak_gflops_all"]))
                assert c["t"].endswith(f"· {fmt.sig(share * 100, 2)}%") and c["cls"] != "flag"
            else:
                assert c["v"] is None and c["cls"] == "flag" and "RuntimeError" in c["t"]
    mem = {line[0]["t"]: line[1:] for line in part["memory"]["rows"]}
    r = json.loads((out / "runs" / "torch" / "lenet-eager@batch_size=64+threads=1" / "result.json").read_text())
    assert mem["PyTorch eager, threads=1"][1]["v"] == pytest.approx(r["peak_rss_mb"])
    threads = {line[0]["t"]: line for line in part["threads"]["rows"]}
    a, b = (json.loads((out / "runs" / "torch" / f"lenet-eager@batch_size=16+threads={t}" / "result.json").read_text())
            for t in (1, 2))
    speedup = threads["PyTorch eager, batch_size=16"][3]["v"]
    assert speedup == pytest.approx(b["samples_per_s"] / a["samples_per_s"])
    assert threads["PyTorch eager, batch_size=16"][4]["v"] == pytest.approx(speedup / 2)  # efficiency: 2 threads
    assert threads["TensorFlow eager, batch_size=16"][2]["cls"] == "flag"  # the failed value, shown as failed
    assert part["charts"] and all("file" in c for c in part["charts"])


def test_the_sweeps_report_shows_scaling_and_every_runs_share_of_peak(sweep):
    out = sweep["out"]
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "## Scaling" in md and "report-lenet-scaling-batch.png" in md and (out / "assets" / "report-lenet-scaling-batch.png").stat().st_size > 1000
    assert "This machine's peak" in md and "GFLOP/s on 1 thread" in md
    # the shares follow the probe's verdict: a peak measured busy is no limit to rank against
    busy = json.loads((out / "machine.json").read_text()).get("busy")
    assert ("closest to this machine's limit" in md) == (not busy)
    assert (busy is not None) == ("The probe could not get an idle figure" in md)
    assert md.count("failed (RuntimeError)") >= 2
    html = (out / "report.html").read_text(encoding="utf-8")
    assert 'id="scaling-batch-lenet"' in html and 'id="scaling-threads-lenet"' in html


def test_the_swept_settings_are_no_difference_between_frameworks(sweep):
    """Batch size and threads vary on purpose: the audit compares the frameworks at
    each value, so neither (nor the threads in effect that follow from them) is
    flagged, while the audit still shows every run's own value."""
    from frameval.report.i18n import Strings
    S = Strings("en")
    md = (sweep["out"] / "report.md").read_text(encoding="utf-8")
    flags = md.split("### Failures and flags", 1)[1].split("###", 1)[0]
    assert S("set_batch_size") not in flags and S("audit_threads_effective") not in flags
    assert "settings differ between frameworks" not in flags
    rows, _, _ = _section(sweep["out"])
    from frameval.report.audit import audit_table, varied_keys, value_groups
    ok = [w for w in rows if w.ok]
    assert varied_keys(ok, ["batch_size", "threads", "lr"]) == ["batch_size", "threads"]
    groups = value_groups(ok, ["batch_size", "threads", "lr"])
    assert all(len({(ok[i].result.params["batch_size"], ok[i].result.params["threads"]) for i in g}) == 1 for g in groups)
    table = audit_table("lenet", ok, S)["table"]
    batch = next(r for r in table["rows"] if r[0]["v"] == "batch_size")
    assert sorted({c["v"] for c in batch[2:-1]}) == [16, 64] and not any(c["cls"] == "flag" for c in batch)


@pytest.mark.fast
def test_no_sweep_no_scaling_section_and_no_peak_without_a_probe(tmp_path):
    """A report of runs with one batch size and one thread count has no scaling
    section; without machine.json its runs have GFLOP/s but no share of peak."""
    from conftest import REPO
    from frameval import flops, report
    src = REPO / "tests" / "fixtures" / "report" / "cpu"
    info = report.build([src], tmp_path, name="r")
    md = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert "## Scaling" not in md and "scaling-" not in md and not info["problems"]
    assert "was not measured for these runs" in md
    r = next(json.loads(f.read_text()) for f in sorted(src.glob("runs/*/lenet-*/result.json"))
             if json.loads(f.read_text()).get("status") == "ok")
    assert fmt_g(r["samples_per_s"] * flops.training_flops("lenet") / 1e9) in md


def fmt_g(v):
    from frameval.report import fmt
    return fmt.sig(v)


def test_each_value_is_reused_from_its_own_cache_entry(sweep):
    """Asked again with one value changed: the values that ran are reused, the new one executes."""
    args = [a if a != "batch_size=16,64" else "batch_size=16,32" for a in SWEEP]
    p = run_all(*args, "--out", str(sweep["out"]), "--dry-run")
    assert p.returncode == 0, p.stderr
    lines = {ln.split("] ", 1)[1].split(":")[0]: ln for ln in p.stdout.splitlines() if "] " in ln}
    assert ": reuse (" in lines["torch/lenet-eager@batch_size=16+threads=1"]
    assert ": execute (no result yet)" in lines["torch/lenet-eager@batch_size=32+threads=2"]


def test_overhead_bound_series_are_those_whose_samples_per_s_rise_1_5_fold(sweep):
    """Within one batch series the peak is the same (one thread count), so the
    share of peak rises as samples/s does: the series named overhead-bound are
    exactly those whose result files' samples/s rise 1.5-fold from batch 16 to 64."""
    from frameval.report.scaling import OVERHEAD_RISE, batch_series, overhead_bound
    rows, _, an = _section(sweep["out"])
    expect = set()
    busy = json.loads((sweep["out"] / "machine.json").read_text()).get("busy")
    for g in [] if busy else batch_series(rows):  # no share of a peak measured busy, so none is named
        lo, hi = g["points"][0][1], g["points"][-1][1]
        if lo.ok and hi.ok and hi.result.samples_per_s / lo.result.samples_per_s >= OVERHEAD_RISE:
            expect.add(g["label"])
    assert {g["label"] for g, _, _ in overhead_bound(rows, an)} == expect
    md = (sweep["out"] / "report.md").read_text(encoding="utf-8")
    assert ("Overhead-bound at small batches" in md) == bool(expect)
    for label in expect:
        assert f"{label} " in md.split("Overhead-bound at small batches", 1)[1].split("\n", 1)[0]

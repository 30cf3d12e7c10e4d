"""`run_all.py reproduce` (issue #41): a tiny real two-run report (torch and
MXNet LeNet, eager, real notebooks in their kernels) made again from its own
record agrees; the same report with one result's accuracy altered names that
run and the difference; a report from another commit warns and names the files
that changed. The comparisons of the altered and older reports reuse the one
reproduction (--compare-only), so the module runs the notebooks twice in all.

And, fast: bad input is one line and exit 2 before anything runs; the
determinism finding, the "Same seed twice" column; the record's environments
rebuilt as the record says (the lock at the report's commit, your interpreter)."""
import hashlib
import json
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, run_all
from frameval import reproduce
from frameval.envs import framework_spec, lockfile, recorded
from frameval.report import determinism, fmt, reproduction
from frameval.report.i18n import Strings
from frameval.report.model import make_rows
from frameval.report.tables import workload_table
from frameval.result import Result
from frameval.envs.specfile import parse_spec

TINY2 = ["--frameworks", "torch,mxnet", "--workloads", "lenet", "--mode", "eager", "-p", "epochs=2",
         "-p", "lenet.max_train_samples=512"]


def _copy(src, dst):
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".frameval.lock*"))
    return dst


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory):
    """A tiny two-run report, and `reproduce` of it (the real pipeline, twice)."""
    root = tmp_path_factory.mktemp("reproduce")
    a, b = root / "A", root / "B"
    run_all(*TINY2, "--out", str(a), timeout=900, check=True)
    p = run_all("reproduce", str(a), "--out", str(b), timeout=900)
    return {"a": a, "b": b, "proc": p, "root": root}


def _results(folder):
    return {f.parent.relative_to(folder / "runs").as_posix(): json.loads(f.read_text())
            for f in sorted((folder / "runs").glob("*/*/result.json"))}


def test_a_report_reproduced_agrees(reproduced):
    p, a, b = reproduced["proc"], reproduced["a"], reproduced["b"]
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert p.stdout.strip().splitlines()[-1] == "reproduced: 2 of 2 runs agree"
    ra, rb = _results(a), _results(b)
    assert set(ra) == set(rb) == {"torch/lenet-eager", "mxnet/lenet-eager"}
    for run in ra:  # the reproduction ran again (not reused), with the same parameters
        assert rb[run]["status"] == "ok" and not rb[run].get("reused") and rb[run]["started"] != ra[run]["started"]
        assert {k: v for k, v in rb[run]["params"].items() if k != "out_dir"} == \
               {k: v for k, v in ra[run]["params"].items() if k != "out_dir"}
    data = json.loads((b / "reproduce.json").read_text())
    assert data["agree"] == data["runs"] == 2 and data["same_cpu"] is True
    for line in data["lines"]:
        x, y = ra[line["run"]], rb[line["run"]]
        assert line["quality"] == [x["test_acc"], y["test_acc"]]
        # determinism as a finding, from the numbers: bit-identical exactly when every loss is
        same = all(e["train_loss"] == f["train_loss"] and e["test_loss"] == f["test_loss"]
                   for e, f in zip(x["epochs"], y["epochs"]))
        assert line["determinism"]["identical"] is same and line["determinism"]["pairs"] == 1
    # the environments: the report's locks, named in the comparison
    md = (b / "reproduce.md").read_text()
    assert "envs/torch.lock.txt, the report's lock" in md and "envs/mxnet.lock.txt, the report's lock" in md
    # the switches as the runs had them, none turned on
    assert rb["torch/lenet-eager"]["determinism"]["torch.use_deterministic_algorithms"] is False
    assert rb["mxnet/lenet-eager"]["determinism"]["MXNET_ENFORCE_DETERMINISM"] == "unset"


def test_an_altered_accuracy_names_the_run_and_the_difference(reproduced):
    a = _copy(reproduced["a"], reproduced["root"] / "A-altered")
    f = a / "runs" / "torch" / "lenet-eager" / "result.json"
    r = json.loads(f.read_text())
    was = r["test_acc"]
    r["test_acc"] = round(was + 0.0371, 6)
    f.write_text(json.dumps(r))
    p = run_all("reproduce", str(a), "--out", str(reproduced["b"]), "--compare-only", timeout=300)
    last = p.stdout.strip().splitlines()[-1]
    assert p.returncode == 1, p.stdout[-2000:] + p.stderr[-2000:]
    assert last.startswith("reproduced: 1 of 2 runs agree; differs: torch/lenet-eager: quality "), last
    assert f"{fmt.percent(r['test_acc'])} → {fmt.percent(was)}" in last and "mxnet" not in last, last


def test_a_report_from_another_commit_warns_and_names_the_files(reproduced):
    a = _copy(reproduced["a"], reproduced["root"] / "A-older")
    old = subprocess.run(["git", "-C", str(REPO), "rev-parse", "dcba2cc"], capture_output=True, text=True,
                         check=True).stdout.strip()  # a commit before reproduce existed
    rec = json.loads((a / "provenance.json").read_text())
    rec["frameval"].update(commit=old, dirty=False)
    (a / "provenance.json").write_text(json.dumps(rec))
    p = run_all("reproduce", str(a), "--out", str(reproduced["b"]), "--compare-only", timeout=300)
    assert p.returncode == 0 and p.stdout.strip().splitlines()[-1] == "reproduced: 2 of 2 runs agree"
    (warn,) = [ln for ln in p.stderr.splitlines() if "warning:" in ln]
    assert f"the report was made at {old[:12]}" in warn
    text = warn.split("frameval/ and notebooks/: ", 1)[1]
    changed = subprocess.run(["git", "-C", str(REPO), "diff", "--name-only", old, "--", "frameval", "notebooks"],
                             capture_output=True, text=True, check=True).stdout.split()
    if len(changed) > 20:  # the line names the first 20 and counts the rest; reproduce.json keeps them all
        assert text.rstrip(".").endswith(f"(+{len(changed) - 20})"), text
        text = text.rsplit(" (+", 1)[0]
    named = set(text.rstrip(".").split(", "))
    assert named <= set(changed) and len(named) == min(20, len(changed))
    assert set(changed) == set(json.loads((reproduced["b"] / "reproduce.json").read_text())["changed_files"])
    assert "frameval/commands/reproduce.py" in changed
    assert not any(n.startswith(("tests/", "docs/", "README")) for n in named)
    assert warn.partition("frameval: ")[2] in (reproduced["b"] / "reproduce.md").read_text()


# ------------------------------------------------------------------ fast
@pytest.mark.fast
def test_bad_input_is_one_line_and_exit_2(tmp_path):
    no_record = tmp_path / "no-record"
    (no_record / "runs").mkdir(parents=True)
    empty_plan = tmp_path / "empty-plan"
    empty_plan.mkdir()
    (empty_plan / "provenance.json").write_text(json.dumps({"plan": {"runs": []}, "command": {"argv": []}}))
    for folder, said in ((tmp_path / "missing", "no such folder"), (no_record, "no provenance.json"),
                         (empty_plan, "no plan")):
        p = run_all("reproduce", str(folder), timeout=60)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and said in p.stderr, p.stderr
        assert p.stderr.startswith("frameval: error: reproduce ")
    assert not (tmp_path / "missing-reproduction").exists()
    good = tmp_path / "good"
    good.mkdir()
    (good / "provenance.json").write_text(json.dumps({"plan": {"runs": [{"name": "torch/lenet-graph"}]},
                                                      "command": {"argv": ["--frameworks", "torch"]}}))
    for args, said in ((["--offline", str(tmp_path / "no-bundle")], "--offline"),
                       (["--compare-only", "--out", str(tmp_path / "none")], "holds no reproduction"),
                       (["--out", str(good)], "the report's own folder")):
        p = run_all("reproduce", str(good), *args, timeout=60)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and said in p.stderr, p.stderr


@pytest.mark.fast
def test_the_run_command_again_sets_its_own_folder_and_interpreters():
    rec = {"command": {"argv": ["--frameworks", "torch", "--out", "/old", "--force", "--python", "torch=/x/python",
                                "-p", "epochs=2", "--dry-run", "--force=torch", "--offline=/b"]}}
    argv = reproduce.run_argv(rec, "/new", {"torch": "/y/python"}, "/bundle")
    assert argv == ["--frameworks", "torch", "-p", "epochs=2", "--out", "/new", "--force", "all",
                    "--python", "torch=/y/python", "--offline", "/bundle"]


@pytest.mark.fast
def test_a_plan_this_clone_makes_otherwise_is_named():
    from frameval.commands.reproduce import planned_runs
    argv = ["--frameworks", "torch", "--workloads", "lenet", "-p", "epochs=2"]
    runs = planned_runs(argv)
    rec = {"plan": {"runs": [{"name": r.name, "repeat": r.repeat, "params": dict(r.params)} for r in runs]}}
    assert reproduce.plan_differences(rec, runs) == []
    rec["plan"]["runs"][0]["params"]["epochs"] = 5  # the report's profile gave 5 where this clone gives 2
    rec["plan"]["runs"].append({"name": "torch/lenet-eager", "repeat": 1, "params": {}})
    said = [reproduction.said(n, Strings("en")) for n in reproduce.plan_differences(rec, runs)]
    assert said == ["the plan differs here: torch/lenet-eager (repeat 1) is not planned from the report's command "
                    "by this clone", "the plan differs here: torch/lenet-graph (repeat 1): epochs 5 → 2"]


def _result(losses, seed=0, acc=0.5, run_dir="/x/runs/torch/lenet-graph", cpu="AMD EPYC"):
    return {"schema": 3, "framework": "torch", "framework_version": "2.13.0", "workload": "lenet", "mode": "graph",
            "device": "cpu", "status": "ok", "params": {"seed": seed, "epochs": len(losses), "out_dir": run_dir},
            "epochs": [{"epoch": i + 1, "samples": 64, "seconds": 1.0, "train_loss": v, "test_loss": v / 2}
                       for i, v in enumerate(losses)], "test_acc": acc, "samples_per_s": 64.0,
            "environment": {"machine": {"cpu": cpu, "cores": 2, "isa": ["avx2"], "isa_caps": {}}},
            "determinism": {"torch.use_deterministic_algorithms": False}, "_dir": run_dir}


@pytest.mark.fast
def test_the_same_seed_twice_is_a_finding():
    a = determinism.pair(*(Result.from_dict(_result([2.25, 1.5])) for _ in range(2)))
    assert a["identical"] and a["max_abs"] == 0.0 and a["quality_diff"] == 0.0
    b = determinism.pair(Result.from_dict(_result([2.25, 1.5])),
                         Result.from_dict(_result([2.25, 1.5 + 3e-7], acc=0.52)))
    assert not b["identical"] and b["max_abs"] == pytest.approx(3e-7) and b["quality_diff"] == pytest.approx(0.02)
    for other in (_result([2.25, 1.5], seed=1), _result([2.25, 1.5], cpu="Intel Xeon")):  # not the same seed twice
        assert determinism.pair(Result.from_dict(_result([2.25, 1.5])),
                                Result.from_dict(other)) is None


@pytest.mark.fast
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_default_report_has_the_column_where_repeats_exist(lang):
    S = Strings(lang)
    runs = [_result([2.25, 1.5]), _result([2.25, 1.5 + 3e-7], run_dir="/x/runs/torch/lenet-graph/r2")]
    table = workload_table("lenet", make_rows(runs, S), S, False, {})
    heads = [h["t"] for h in table["headers"]]
    col = heads.index(S("col_determinism"))
    cell = table["rows"][0][col]
    assert cell["t"] == S("det_differs", abs="3.0e-07", rel=f"{3e-7 / (1.5 + 3e-7):.1e}", n=1)
    assert "torch.use_deterministic_algorithms = False" in cell["title"]
    alone = workload_table("lenet", make_rows([_result([2.25, 1.5])], S), S, False, {})
    assert S("col_determinism") not in [h["t"] for h in alone["headers"]]  # no repeats: no column


@pytest.mark.fast
def test_environments_rebuild_as_the_record_says(tmp_path):
    """The lock at the report's commit where this clone's differs (megengine's changed in 51854df),
    the clone's where it is the same, your interpreter where it exists, a venv from its freeze where not."""
    old = subprocess.run(["git", "-C", str(REPO), "rev-parse", "51854df^"], capture_output=True, text=True,
                         check=True).stdout.strip()
    old_lock = subprocess.run(["git", "-C", str(REPO), "show", f"{old}:envs/megengine.lock.txt"],
                              capture_output=True, text=True, check=True).stdout
    digest = hashlib.sha256(lockfile.body_of(old_lock).encode()).hexdigest()
    here = lockfile.lock_digest(framework_spec("torch"))
    runner = lockfile.lock_digest(parse_spec(REPO / "environment.yml"))
    rec = {"frameval": {"commit": old}, "plan": {"device": "cpu"}, "environments": {
        "runner": {"spec": "environment.yml", "lock": {"state": "locked", "sha256": runner}},
        "megengine": {"spec": "envs/megengine.yml", "python": "3.10", "freeze": "megengine==1.13.0\n",
                      "lock": {"state": "locked", "file": "envs/megengine.lock.txt", "sha256": digest}},
        "torch": {"spec": "envs/torch.yml", "lock": {"state": "locked", "file": "envs/torch.lock.txt", "sha256": here}},
        "mxnet": {"provided_by_user": True, "python_executable": sys.executable, "lock": {"state": "user"}},
        "jax": {"provided_by_user": True, "python_executable": str(tmp_path / "gone" / "python"),
                "python_version": "3.11.7", "freeze": "jax==0.4.1\n-e /src/x\nflax @ file:///w.whl\n",
                "lock": {"state": "user"}}}}
    plan = recorded.plan_rebuild(rec, tmp_path)
    assert digest != lockfile.lock_digest(framework_spec("megengine")) and plan.spec_dir == tmp_path / "envs"
    assert (plan.spec_dir / "megengine.lock.txt").read_text() == old_lock
    assert lockfile.status(parse_spec(plan.spec_dir / "megengine.yml"))[0].digest == digest  # builds from it
    assert (plan.spec_dir / "torch.lock.txt").read_text() == (REPO / "envs" / "torch.lock.txt").read_text()
    assert plan.pythons == {"mxnet": sys.executable}
    assert plan.venvs == [("jax", "3.11", rec["environments"]["jax"]["freeze"])]
    assert recorded.freeze_lines(rec["environments"]["jax"]["freeze"]) == ["jax==0.4.1"]
    said = "\n".join(reproduction.said(n, Strings("en")) for n in plan.notes)
    assert all(reproduction.said(n, Strings("zh")) != reproduction.said(n, Strings("en")) for n in plan.notes)
    assert f"envs/megengine.lock.txt as it was at {old[:12]}" in said and "no longer exists" in said
    assert "envs/torch.lock.txt, the report's lock" in said
    assert "runner (draws the report, runs no notebook): this clone's, from the report's lock" in said


def test_a_gone_interpreter_becomes_a_venv_from_its_freeze(tmp_path):
    """The record's freeze installed into a new venv (the index's packages; an editable line left out)."""
    from importlib.metadata import version
    v = version("packaging")
    freeze = f"packaging=={v}\n-e /src/mine\n"
    py = recorded.build_venv("mxnet", "%d.%d" % sys.version_info[:2], freeze, tmp_path / "venv-mxnet",
                             echo=lambda m: None)
    p = subprocess.run([str(py), "-c", "import packaging, ipykernel; print(packaging.__version__)"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == v, p.stderr[-2000:]
    assert py.parent.parent == tmp_path / "venv-mxnet"

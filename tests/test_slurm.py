"""--executor slurm against a REAL Slurm: a one-node cluster on this host
(tests/slurm_fixture.py: slurmctld + slurmd + munged, installed with apt-get
as a printed setup step if missing). PyTorch kernel, tiny sizes.

Nothing here depends on the machine's speed: the tests assert on what a job
leaves behind (its result.json, its slurm.json, its Slurm log), never on
catching a passing state between two polls (a fast node runs a tiny job from
PENDING to COMPLETED in one poll interval); a run that must still be running
when it is cancelled or killed is given more epochs than any machine finishes
in its time limit."""
import json
import re
import signal
import socket
import subprocess
import sys
import time

from conftest import REPO, run_all
from slurm_fixture import slurm_cluster  # noqa: F401 - the fixture

SMALL = ["--frameworks", "torch", "--mode", "eager", "--workloads", "lenet,lstm", "-p", "epochs=2",
         "-p", "lenet.max_train_samples=256", "-p", "lstm.max_train_samples=128"]
SLURM = ["--executor", "slurm", "--slurm-partition", "debug", "--slurm-time", "10"]
ENDLESS = "epochs=1000000"  # ends only by Slurm's time limit, scancel or Ctrl-C


def results(out):
    return {f.parent.name: json.loads(f.read_text()) for f in (out / "runs").glob("*/*/result.json")}


def wait_for_state(job: str, final: str, limit_s: float = 600) -> None:
    """Until squeue names the job's final state (it keeps ended jobs for the
    fixture's MinJobAge); `limit_s` only stops a hang, it times nothing."""
    deadline, st = time.monotonic() + limit_s, []
    while time.monotonic() < deadline:
        st = subprocess.run(["squeue", "-h", "--states=all", "-j", job, "-o", "%T"], capture_output=True,
                            text=True).stdout.split()
        if st and st[0] == final:
            return
        time.sleep(1)
    raise AssertionError(f"slurm job {job} never reached {final} (last seen: {st})")


def survivors(out, limit_s: float = 120) -> list:
    """Processes still working for `out` (a job's python, a kernel in a run
    folder) once Slurm has ended its jobs; waits for them to go, up to
    `limit_s` (a bound on a hang: Slurm's KillWait is 5 s)."""
    import os
    deadline, left = time.monotonic() + limit_s, []
    while time.monotonic() < deadline:
        left = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
                cwd = os.readlink(f"/proc/{pid}/cwd")
            except OSError:
                continue
            if str(out) in cmd or cwd.startswith(str(out)):
                left.append(f"{pid} {cmd[:200]}")
        if not left:
            return []
        time.sleep(1)
    return left


def test_bad_slurm_options_exit_2_before_anything_runs(tmp_path):
    for args, msg in ((["--executor", "pbs"], "--executor 'pbs'"),
                      (["--slurm-time", "5"], "only used with --executor slurm"),
                      (["--executor", "slurm", "--slurm-time", "soon"], "--slurm-time 'soon'"),
                      (["--executor", "slurm", "--slurm-cpus-per-task", "0"], "--slurm-cpus-per-task '0'"),
                      (["--executor", "slurm", "--slurm-extra", "partition=x"], "use --slurm-partition"),
                      (["--executor", "slurm", "--slurm-extra", "constraint"], "expected KEY=VALUE")):
        p = run_all(*args, "--out", str(tmp_path / "x"))
        assert p.returncode == 2 and msg in p.stderr and len(p.stderr.strip().splitlines()) == 1, (args, p.stderr)
    assert not (tmp_path / "x").exists()


def test_matrix_on_slurm_matches_local_and_rerun_submits_nothing(tmp_path, slurm_cluster):
    local, onslurm = tmp_path / "local", tmp_path / "slurm"
    run_all(*SMALL, "--out", str(local), check=True)
    dry = run_all(*SMALL, *SLURM, "--out", str(onslurm), "--dry-run", check=True)
    assert "one job array of 2 element(s)" in dry.stdout and "#SBATCH --time=10" in dry.stdout
    assert "#SBATCH --exclusive" in dry.stdout and "#SBATCH --partition=debug" in dry.stdout
    for what in ("repository: ", "runner environment python: ", "environment cache (FRAMEVAL_CACHE_DIR): ",
                 "output folder: "):
        assert what in dry.stdout, dry.stdout
    p = run_all(*SMALL, *SLURM, "--out", str(onslurm), check=True)
    array = re.search(r"submitted job array (\d+) with 2 element\(s\)", p.stdout)
    assert array, p.stdout
    lo, sl = results(local), results(onslurm)
    host = socket.gethostname()
    for name in ("lenet-eager", "lstm-eager"):
        assert sl[name]["status"] == "ok", sl[name].get("error")
        # the node ran it, in the array submitted: its records say so, whatever the polls saw
        meta = json.loads((onslurm / "runs/torch" / name / "slurm.json").read_text())
        assert meta["job_id"].split("_")[0] == array.group(1) == str(sl[name]["slurm"]["job_id"]).split("_")[0]
        assert sl[name]["slurm"]["state"] == "COMPLETED" and f"torch/{name}: ok (slurm " in p.stdout, p.stdout
        assert sl[name]["param_counts"] == lo[name]["param_counts"]
        assert sl[name]["check"]["ok"] is True and lo[name]["check"]["ok"] is True
        assert sl[name]["cache_parts"] == lo[name]["cache_parts"]
        assert sl[name]["environment"]["machine"]["hostname"] == host == sl[name]["slurm"]["hostname"]
        assert sl[name]["slurm"]["job_id"] and sl[name]["slurm"]["cpu"]
    md = (onslurm / "report.md").read_text()
    assert "lenet" in md.lower() and "lstm" in md.lower() and f"| {host} |" in md
    # nothing changed: nothing is submitted
    again = run_all(*SMALL, *SLURM, "--out", str(onslurm), check=True)
    assert "nothing to submit" in again.stdout and "submitted job array" not in again.stdout
    assert again.stdout.count(": reused (unchanged)") == 2
    # one parameter changed: only that run is submitted
    dry = run_all(*SMALL, *SLURM, "-p", "lstm.lr=0.002", "--out", str(onslurm), "--dry-run", check=True)
    assert "one job array of 1 element(s)" in dry.stdout and "torch/lstm-eager: execute (changed: params)" in dry.stdout


def test_time_limit_is_recorded_as_timeout(tmp_path, slurm_cluster):
    out = tmp_path / "out"
    p = run_all("--frameworks", "torch", "--mode", "eager", "--workloads", "lenet", "-p", ENDLESS,
                "-p", "lenet.max_train_samples=256", "--executor", "slurm", "--slurm-time", "1", "--out", str(out))
    assert p.returncode == 1, p.stdout + p.stderr
    r = results(out)["lenet-eager"]
    assert r["status"] == "failed" and r["error"]["type"] == "TIMEOUT", r["error"]
    assert r["slurm"]["state"] == "TIMEOUT" and "Slurm log" in r["error"]["traceback"]
    md = (out / "report.md").read_text()
    assert "TIMEOUT" in md and (out / "report.html").exists()
    assert survivors(out) == []  # the run and its kernel ended with the job


def test_scancel_and_ctrl_c_are_recorded_as_cancelled(tmp_path, slurm_cluster):
    long = ["--frameworks", "torch", "--mode", "eager", "--workloads", "lstm", "-p", ENDLESS,
            "-p", "lstm.max_train_samples=128", *SLURM]
    # the runner is gone (killed), then the running array is scancelled: --report-only records it
    out = tmp_path / "scancel"
    proc = subprocess.Popen([sys.executable, str(REPO / "run_all.py"), *long, "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in proc.stdout:
        lines.append(line)
        # RUNNING lasts as long as the endless run does: a state that cannot be missed
        m = re.search(r"slurm (\d+)(_\d+)? RUNNING", line)
        if m:
            proc.kill()
            proc.communicate(timeout=60)
            subprocess.run(["scancel", m.group(1)], check=True)
            break
    assert m, "".join(lines)
    assert json.loads((out / "runs/torch/lstm-eager/slurm.json").read_text())["job_id"].startswith(m.group(1))
    wait_for_state(m.group(1), "CANCELLED")  # a final state: it stays (MinJobAge), so a poll cannot miss it
    rep = run_all("--report-only", "--out", str(out), check=True)
    assert f"slurm job {m.group(1)}" in rep.stdout and "CANCELLED" in rep.stdout, rep.stdout
    r = results(out)["lstm-eager"]
    assert r["error"]["type"] == "CANCELLED" and "CANCELLED" in (out / "report.md").read_text()
    assert survivors(out) == []  # the run and its kernel ended with the job
    # Ctrl-C on the runner: it cancels its array, records it, writes the report
    out = tmp_path / "ctrlc"
    proc = subprocess.Popen([sys.executable, str(REPO / "run_all.py"), *long, "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if re.search(r"slurm \d+(_\d+)? RUNNING", line):
            proc.send_signal(signal.SIGINT)
            break
    rest = proc.communicate(timeout=900)[0]  # a bound on a hang, not a timing
    assert proc.returncode == 130 and "scancel" in rest, "".join(lines) + rest
    assert results(out)["lstm-eager"]["error"]["type"] == "CANCELLED"
    assert (out / "report.md").exists() and survivors(out) == []

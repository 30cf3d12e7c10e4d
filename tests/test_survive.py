"""A run survives what a user's machine does to it (#72), with real processes: a
hang-up to the command's process group ends like Ctrl-C; a runner killed by SIGKILL
leaves no papermill child and no kernel behind, and the next command says so and
runs the unfinished run again; a kernel that grows past --max-rss is stopped and
recorded, and the other runs go on; a kernel killed by SIGKILL is recorded with the
signal and its last resident size."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO, run_all
from test_faults import SMALL, results

LONG = ["-p", "dcgan.epochs=100000"]  # the DCGAN is stopped mid-run, whatever the machine's speed


def _start(out, *extra, env=None):
    return subprocess.Popen([sys.executable, str(REPO / "run_all.py"), *SMALL, "--out", str(out), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            env=env)


def _until_second_run_trains(proc, out):
    """Lines read until the DCGAN (the second run) has trained an epoch: its partial record is there."""
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if "[2/3]" in line and "running" in line:
            break
    partial = out / "runs/torch/dcgan-eager/result.partial.json"
    deadline = time.monotonic() + 900  # a bound on a hang, not a timing
    while not partial.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert partial.exists(), "".join(lines)
    return lines


def _kernels_of(out) -> list:
    """Processes whose command line or working folder names this output folder (the papermill
    child runs in the run's folder, the kernel too)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(out) in cwd or str(out) in cmd:
            found.append((int(pid), cmd[:120]))
    return found


def _gone_within(out, seconds) -> list:
    deadline = time.monotonic() + seconds
    left = _kernels_of(out)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = _kernels_of(out)
    return left


def test_hangup_ends_like_ctrl_c(tmp_path):
    """SIGHUP to the command's process group (a closed terminal): the DCGAN is recorded as
    interrupted by SIGHUP, the report is written, nothing is left running, and the same
    command goes on, reusing the LeNet."""
    proc = _start(tmp_path, *LONG)
    lines = _until_second_run_trains(proc, tmp_path)
    os.killpg(proc.pid, signal.SIGHUP)
    rest = proc.communicate(timeout=300)[0]
    out = "".join(lines) + rest
    assert proc.returncode == 130, out
    r = results(tmp_path)
    assert r["lenet-eager"]["status"] == "ok", out
    assert r["dcgan-eager"]["error"]["type"] == "Interrupted" and "SIGHUP" in r["dcgan-eager"]["error"]["message"]
    assert (tmp_path / "report.md").exists() and "the same command goes on from here" in rest, rest
    assert _gone_within(tmp_path, 5) == []
    p = run_all(*SMALL, "--out", str(tmp_path), "--workloads", "lenet", timeout=600)
    assert "torch/lenet-eager: reused" in p.stdout, p.stdout


def test_killed_runner_leaves_no_kernel(tmp_path):
    """SIGKILL of the runner alone (what the OOM killer or kill -9 does): its papermill child
    and the kernel, in other process groups, end within a few seconds. The next command says
    the last one ended without its report, reuses the LeNet and runs the DCGAN again."""
    proc = _start(tmp_path, *LONG)
    lines = _until_second_run_trains(proc, tmp_path)
    assert _kernels_of(tmp_path), "no kernel found running before the kill: the test would prove nothing"
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    left = _gone_within(tmp_path, 5)
    assert left == [], ("".join(lines), left)
    p = run_all(*SMALL, "--out", str(tmp_path), "-p", "dcgan.epochs=1", "--workloads", "lenet,dcgan", timeout=900)
    assert "ended without its report" in p.stdout, p.stdout
    assert "torch/lenet-eager: reused" in p.stdout and "torch/dcgan-eager: running" in p.stdout, p.stdout
    assert results(tmp_path)["dcgan-eager"]["status"] == "ok"


def test_memory_guard_stops_a_growing_run(tmp_path):
    """A real kernel that allocates past a small --max-rss: stopped, recorded with its peak and
    the limit; the LSTM after it runs; the limit is in provenance.json."""
    env = dict(os.environ, FRAMEVAL_INJECT_FAULT="torch/lenet:grow=64")
    p = subprocess.run([sys.executable, str(REPO / "run_all.py"), *SMALL, "--workloads", "lenet,lstm",
                        "--max-rss", "1500M", "--out", str(tmp_path)], capture_output=True, text=True, env=env,
                       timeout=900)
    r = results(tmp_path)
    err = r["lenet-eager"]["error"]
    assert err["type"] == "MemoryLimit" and "1,500 MB" in err["message"], (err, p.stdout[-2000:])
    guard = r["lenet-eager"]["memory_guard"]
    assert guard["limit_mb"] == 1500 and 1500 < guard["peak_mb"] < 1500 + 64 * 40, guard
    assert r["lstm-eager"]["status"] == "ok" and r["lstm-eager"]["memory_guard"]["peak_mb"] < 1500
    assert json.loads((tmp_path / "provenance.json").read_text())["plan"]["max_rss_mb"] == 1500
    assert (tmp_path / "report.md").exists() and p.returncode == 1
    assert _gone_within(tmp_path, 5) == []


def test_kernel_killed_by_sigkill_is_named(tmp_path):
    env = dict(os.environ, FRAMEVAL_INJECT_FAULT="torch/lenet:kill")
    subprocess.run([sys.executable, str(REPO / "run_all.py"), *SMALL, "--workloads", "lenet", "--out", str(tmp_path)],
                   capture_output=True, text=True, env=env, timeout=600)
    err = results(tmp_path)["lenet-eager"]["error"]
    assert err["type"] == "KernelKilled" and "SIGKILL" in err["message"] and "MB" in err["message"], err


@pytest.mark.parametrize("bad", ["lots", "0", "150%"])
def test_bad_max_rss_is_one_line(bad):
    p = run_all("--dry-run", "--max-rss", bad, "--frameworks", "torch", "--workloads", "lenet")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "--max-rss" in p.stderr, p.stderr

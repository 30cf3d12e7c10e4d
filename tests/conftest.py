"""Shared fixtures. The suite runs inside the runner environment
(`python3 run_all.py test`), which builds it first."""
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

class Clock:
    """A virtual perf_counter for the recorder (monkeypatched over its modules'
    `time`): the test advances it, so what a clock holds is exact and no
    figure depends on this machine's speed."""
    def __init__(self):
        self.now = 1000.0

    def perf_counter(self):
        return self.now

    def __getattr__(self, name):  # strftime, time, sleep: the real module's
        return getattr(time, name)


# Tiny sizes for the real-notebook runs: enough for two epochs (a warm-up and
# a steady one) and a LeNet accuracy above chance, small enough for CI.
TINY = ["-p", "epochs=2", "-p", "lenet.max_train_samples=512", "-p", "dcgan.batch_size=16",
        "-p", "dcgan.max_train_samples=32", "-p", "lstm.max_train_samples=256"]


def run_all(*args, timeout=None, check=False):
    p = subprocess.run([sys.executable, str(REPO / "run_all.py"), *args], capture_output=True, text=True,
                       timeout=timeout, cwd=REPO)
    if check and p.returncode != 0:
        raise AssertionError(f"run_all.py {' '.join(args)} exited {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


@pytest.fixture(scope="session")
def matrix(tmp_path_factory):
    """The real pipeline, once: every framework x workload x both modes on tiny
    sizes, in the real framework environments, then the collector."""
    out = tmp_path_factory.mktemp("matrix")
    p = run_all("--mode", "both", "--out", str(out), *TINY, "--timeout", "900")
    (out / "runner-stdout.txt").write_text(p.stdout + "\n---- stderr ----\n" + p.stderr)
    results = {}
    for f in sorted((out / "runs").glob("*/*/result.json")):
        r = json.loads(f.read_text())
        results[(r["framework"], r["workload"], r["mode"])] = r
    return {"out": out, "proc": p, "results": results}


def bare_python() -> str:
    """A Python outside the runner environment: run_all.py started with it
    builds (or finds) the runner environment and re-executes inside it, the
    path a user's `python3 run_all.py` takes."""
    import shutil
    for cand in (getattr(sys, "_base_executable", ""), shutil.which("python3") or "", "/usr/bin/python3"):
        if not cand or not Path(cand).exists():
            continue
        prefix = subprocess.run([cand, "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True,
                                timeout=60).stdout.strip()
        if prefix and Path(prefix).resolve() != Path(sys.prefix).resolve():
            return cand
    pytest.skip("no Python outside the runner environment on this machine")

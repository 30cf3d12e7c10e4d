"""Shared fixtures. The suite runs inside the runner environment
(`python3 run_all.py test`), which builds it first."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
# The suite's runs never read this machine's measured between-run noise (frameval/noise.py): a
# report's intervals and wording would then depend on whether `bench noise` was run here. Its own
# folder, emptied with the suite's temporary files (tests that measure noise set theirs).
os.environ["FRAMEVAL_NOISE_DIR"] = str(REPO / ".frameval" / "test-tmp" / "noise")
# Runs leave serving out unless a test asks with -p serve=true (frameval/plan.py SERVE_DEFAULT_VAR): the
# suite's runs would each pay a framework import and an export; the matrix serves every run.
os.environ["FRAMEVAL_SERVE_DEFAULT"] = "off"

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
# The matrix's runs save, load in a fresh process and serve (nb/serving.py), with few timed calls;
# its LeNet and LSTM runs checkpoint after epoch 1 and resume in a second kernel (nb/resume.py)
SERVED = ["-p", "serve=true", "-p", "serve_calls=3", "-p", "resume_check=true"]


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
    p = run_all("--mode", "both", "--out", str(out), *TINY, *SERVED, "--timeout", "900")
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


# ------------------------------------------------------------------ the suite on every core
# `run_all.py test` runs the tests not marked `idle` on pytest-xdist's workers
# (frameval/commands/test.py). A group goes to one worker whole: each file is a
# group, so its module fixtures are built once, and every file that uses the
# 42-run `matrix` is one group, so the matrix is built once. Each worker
# collects the same order, longest group first (tests/budget.py's seconds), so
# the matrix starts at once and the short files fill in around it.
# xdist's own `xdist_group` mark does not group under pytest 9 (it renames
# `item._nodeid`, which pytest 9 no longer reads), so the workers write each
# test's group to the file SUITE_GROUPS names and the controller's scheduler
# reads it from there.
MATRIX_GROUP = "matrix"
from frameval.commands.test import SUITE_GROUPS_VAR as SUITE_GROUPS, TEST_OUTPUT, TEST_PASS_VAR  # noqa: E402


def test_group(item, matrix_files) -> str:
    return MATRIX_GROUP if item.path.name in matrix_files else item.path.name


def pytest_collection_modifyitems(config, items):
    from tests import budget
    matrix_files = {it.path.name for it in items if "matrix" in getattr(it, "fixturenames", ())}
    groups = {it.nodeid: test_group(it, matrix_files) for it in items}
    files_of = {}
    for g, it in zip(groups.values(), items):
        files_of.setdefault(g, set()).add(it.path.name)
    seconds = {g: sum(budget.FILES.get(f, (0, 0))[1] for f in fs) for g, fs in files_of.items()}
    if hasattr(config, "workerinput"):  # a worker: the longest groups first (a stable sort keeps a file's order)
        items.sort(key=lambda it: -seconds[groups[it.nodeid]])
        if os.environ.get(SUITE_GROUPS):
            from frameval import files
            files.atomic_write_json(Path(os.environ[SUITE_GROUPS]), groups)


def pytest_xdist_make_scheduler(config, log):
    """--dist loadgroup: xdist's scope scheduler with this suite's groups (above)."""
    if config.getvalue("dist") != "loadgroup" or not os.environ.get(SUITE_GROUPS):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SuiteGroups(LoadScopeScheduling):
        groups = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # written by every worker during collection, before any scheduling
                self.groups = json.loads(Path(os.environ[SUITE_GROUPS]).read_text())
            return self.groups.get(nodeid) or nodeid.split("::", 1)[0]
    return SuiteGroups(config, log)


# ------------------------------------------------------------------ the suite's time (tests/budget.py)
_SUITE = {"start": None, "tests": {}, "files": {}}


def pytest_sessionstart(session):
    _SUITE["start"] = time.time()


def pytest_runtest_logreport(report):
    """Every phase's seconds, per test and per file (a session fixture counts
    where it is first set up: `matrix` in the first file that asks for it)."""
    _SUITE["tests"][report.nodeid] = _SUITE["tests"].get(report.nodeid, 0.0) + report.duration
    f = report.nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
    _SUITE["files"][f] = _SUITE["files"].get(f, 0.0) + report.duration


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The last lines of every run: the total against the budget, the files over
    their seconds, the ten slowest tests; and the same in a JSON file for a person."""
    from tests import budget
    if _SUITE["start"] is None or not _SUITE["tests"]:
        return
    total = time.time() - _SUITE["start"]
    tr = terminalreporter
    tr.write_sep("=", "the suite's time (tests/budget.py)")
    load = " ".join(f"{x:.2f}" for x in __import__("os").getloadavg())
    tr.write_line(f"total {total / 60:.1f} min against a budget of {budget.SUITE_BUDGET_S / 60:.0f} min idle "
                  f"(load average now {load}); {len(_SUITE['tests'])} tests")
    over = [(f, s, budget.FILES.get(f, (0, budget.DEFAULT_S))[1]) for f, s in sorted(_SUITE["files"].items())
            if s > budget.FILES.get(f, (0, budget.DEFAULT_S))[1]]
    for f, s, b in over:
        tr.write_line(f"over its budget: {f} took {s:.0f} s, budget {b} s")
    tr.write_line("ten slowest tests:")
    for nodeid, s in sorted(_SUITE["tests"].items(), key=lambda kv: -kv[1])[:10]:
        tr.write_line(f"  {s:7.1f} s  {nodeid}")
    out = TEST_OUTPUT
    out.mkdir(parents=True, exist_ok=True)
    # one file per pass of `run_all.py test` (the command merges them into durations.json)
    name = f"durations-{os.environ[TEST_PASS_VAR]}.json" if os.environ.get(TEST_PASS_VAR) else "durations.json"
    (out / name).write_text(json.dumps(
        {"total_s": round(total, 1), "load": load, "files": {f: round(s, 1) for f, s in sorted(_SUITE["files"].items())},
         "tests": {k: round(v, 2) for k, v in sorted(_SUITE["tests"].items(), key=lambda kv: -kv[1])}}, indent=1))


def training_mb(r: dict):
    """What training added to resident memory, read from a result dict by the rule of
    docs (#67), written again here so that the report's figure is checked, not copied:
    the recorded increment; else, for a result written before #67, its training peak
    over the level before training where the high-water mark was reset ("clear_refs"),
    or the figure the run stored as its increment where it could not be reset."""
    m = r.get("memory") if isinstance(r.get("memory"), dict) else {}
    num = lambda k: m.get(k) if isinstance(m.get(k), (int, float)) and not isinstance(m.get(k), bool) else None  # noqa: E731
    for key in ("training_increment_mb", "increment_without_reset_mb"):
        if key in m:
            return num(key)
    peak, before = num("training_peak_mb"), num("before_training_mb")
    if m.get("method") == "clear_refs":
        return peak - before if peak is not None and before is not None else None
    return peak

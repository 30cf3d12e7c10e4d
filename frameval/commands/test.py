"""`python3 run_all.py test [--fast] [--env-backend B] [pytest args]`: the
runner environment (built with B's backend), the system browser (a printed
setup step; the fast loop has no browser test), then pytest.

The suite's temporary files go to the clone's `.frameval/test-tmp/` (TMPDIR,
inherited by every run_all.py, kernel, Chromium and Slurm job the tests start;
pytest's own tmp_path folders live there too), emptied when the next test
command starts: a test run leaves nothing in the system temp folder.

The whole suite (no pytest arguments) runs in two passes. First every test not
marked `idle`, on pytest-xdist's workers (SUITE_WORKERS at most, one per core):
a 2-core machine ran the suite one test at a time on about one core's worth
of CPU (47.5 min wall, 50 min of CPU), because most of a real run is a kernel
starting, a framework importing or a compiler on one thread. tests/conftest.py
keeps each file's tests on one worker (its fixtures are built once) and every
file that uses the 42-run `matrix` in one group, the longest first. Then the
tests marked `idle`, which measure this machine and need it to themselves, one
at a time. Before either, the machine is probed once, idle, and every command
the tests start takes those figures (--probe-from, through FRAMEVAL_PROBE_FROM)
instead of probing a machine its neighbours keep busy; the tests of the probe
itself measure. Given pytest arguments, the command is one plain pytest run."""
from __future__ import annotations

import os
import subprocess
import sys
import time

from ..paths import REPO
from ..probe import PROBE_FROM_VAR

from ..optionchecks import check_env_backend, default_env_backend
from ..exits import BadInput, fail
from ..files import read_json

TEST_TMP = REPO / ".frameval" / "test-tmp"
TEST_OUTPUT = REPO / ".frameval" / "test-output"  # durations.json and the browser test's screenshots
SUITE_WORKERS = 2
# What the command tells tests/conftest.py: which pass runs (its durations file), and
# where the workers write each test's group for the scheduler to read.
TEST_PASS_VAR = "FRAMEVAL_TEST_PASS"
SUITE_GROUPS_VAR = "FRAMEVAL_SUITE_GROUPS"

USAGE = ("usage: run_all.py test [--fast] [--env-backend auto|conda|venv] [pytest args]\n"
         "  --fast   the unit-level tests only (pytest -m fast, under 2 minutes); without it, the whole suite (CI)")


def parse_args(argv) -> tuple:
    """The command's own options, before the pytest arguments: (fast, backend, pytest args)."""
    fast, backend, rest = False, default_env_backend(), list(argv)
    while rest and rest[0] in ("--fast", "--env-backend") or rest and rest[0].startswith("--env-backend="):
        opt = rest.pop(0)
        if opt == "--fast":
            fast = True
            continue
        value = opt.split("=", 1)[1] if "=" in opt else (rest.pop(0) if rest else "")
        try:
            check_env_backend(value, "test --env-backend")
        except BadInput as e:
            fail(str(e))
        backend = value
    return fast, backend, rest


def main(argv) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        print(USAGE + "\n(pytest's own options follow)\n", flush=True)
    fast, backend, pytest_args = parse_args(argv)
    from ..bootstrap import ensure_runner
    ensure_runner(["test", *argv], backend=backend)
    if not fast:
        from ..testtools import ensure_browser
        ensure_browser(lambda m: print(m, flush=True))
    from ..envs import jupyter_env
    os.chdir(REPO)
    env = jupyter_env()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    env["FRAMEVAL_ENV_BACKEND"] = backend  # what the tests' own run_all.py calls use
    env["TMPDIR"] = str(fresh_test_tmp())
    if fast or pytest_args:
        cmd = [sys.executable, "-m", "pytest", *(["-m", "fast"] if fast else []), *(pytest_args or ["tests"])]
        os.execve(sys.executable, cmd, env)
    return whole_suite(env, backend)


def suite_workers() -> int:
    """pytest-xdist workers for the first pass: one per core, at most SUITE_WORKERS
    (each real run already uses every core; more workers only queue on them)."""
    return max(1, min(SUITE_WORKERS, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                      else os.cpu_count() or 1))


def whole_suite(env: dict, backend: str) -> int:
    """The two passes (the module's docstring), then one line for both: the exit
    status is the first pass's failure, else the second's."""
    t0 = time.time()
    env[PROBE_FROM_VAR] = str(suite_probe(backend))
    took = {"probe": time.time() - t0}
    workers = suite_workers()
    passes = [("parallel", ["-m", "not idle", "-n", str(workers), "--dist", "loadgroup", "--no-loadscope-reorder"] if workers > 1
               else ["-m", "not idle"]), ("idle", ["-m", "idle"])]
    codes = []
    for name, opts in passes:
        t = time.time()
        # the workers write each test's group there; the scheduler reads it (tests/conftest.py)
        p = subprocess.run([sys.executable, "-m", "pytest", *opts, "tests"],
                           env=dict(env, **{TEST_PASS_VAR: name, SUITE_GROUPS_VAR: str(TEST_TMP / "groups.json")}))
        took[name] = time.time() - t
        codes.append(0 if p.returncode == 5 and name == "idle" else p.returncode)  # 5: no test marked idle
    total = time.time() - t0
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"the whole suite: {total / 60:.1f} min against its budget of 30 min idle "
          f"(the probe {took['probe']:.0f} s, {workers} worker(s) {took['parallel'] / 60:.1f} min, "
          f"the idle tests {took['idle'] / 60:.1f} min; load average now {load})", flush=True)
    merge_durations(total, load)
    return next((c for c in codes if c), 0)


def suite_probe(backend: str):
    """This machine's peak and every framework's GEMM, measured once before any
    test starts (the environments built first, as the suite's first run would):
    the machine.json every command of the suite reuses."""
    from .. import envs, probe
    from ..catalog import FRAMEWORKS
    out = TEST_TMP / "probe"
    out.mkdir(parents=True, exist_ok=True)
    say = lambda m: print(m, flush=True)  # noqa: E731
    built = envs.ensure_frameworks(list(FRAMEWORKS), "cpu", backend, echo=lambda m: say(f"frameval: {m}"))
    probe.record(out, say, {k: e for k, e in built.items() if isinstance(e, envs.Env)})
    return out / probe.MACHINE


def merge_durations(total: float, load: str) -> None:
    """durations.json: both passes' per-test and per-file seconds, and the whole suite's time."""
    import json
    folder = TEST_OUTPUT
    merged = {"total_s": round(total, 1), "load": load, "passes": {}, "files": {}, "tests": {}}
    for name in ("parallel", "idle"):
        d = read_json(folder / f"durations-{name}.json", None)
        if not isinstance(d, dict):
            continue
        merged["passes"][name] = d.get("total_s")
        for key in ("files", "tests"):
            for k, v in (d.get(key) or {}).items():
                merged[key][k] = round(merged[key].get(k, 0) + v, 2)
    merged["tests"] = dict(sorted(merged["tests"].items(), key=lambda kv: -kv[1]))
    (folder / "durations.json").write_text(json.dumps(merged, indent=1))


def fresh_test_tmp():
    """The suite's temp folder, emptied: what the last run left (pytest's three
    kept runs, TensorFlow's autograph files, compile caches) goes now."""
    import shutil
    shutil.rmtree(TEST_TMP, ignore_errors=True)  # a file a process still writes may stay
    TEST_TMP.mkdir(parents=True, exist_ok=True)
    return TEST_TMP

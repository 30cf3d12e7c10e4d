"""`python3 run_all.py test [--fast] [--env-backend B] [pytest args]`: the
runner environment (built with B's backend), the system browser (a printed
setup step; the fast loop has no browser test), then pytest.

The suite's temporary files go to the clone's `.frameval/test-tmp/` (TMPDIR,
inherited by every run_all.py, kernel, Chromium and Slurm job the tests start;
pytest's own tmp_path folders live there too), emptied when the next test
command starts: a test run leaves nothing in the system temp folder."""
from __future__ import annotations

import os
import sys

from ..paths import REPO

TEST_TMP = REPO / ".frameval" / "test-tmp"
from ..checks import check_env_backend, default_env_backend
from ..exits import BadInput, fail

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
    cmd = [sys.executable, "-m", "pytest", *(["-m", "fast"] if fast else []), *(pytest_args or ["tests"])]
    os.execve(sys.executable, cmd, env)


def fresh_test_tmp():
    """The suite's temp folder, emptied: what the last run left (pytest's three
    kept runs, TensorFlow's autograph files, compile caches) goes now."""
    import shutil
    shutil.rmtree(TEST_TMP, ignore_errors=True)  # a file a process still writes may stay
    TEST_TMP.mkdir(parents=True, exist_ok=True)
    return TEST_TMP

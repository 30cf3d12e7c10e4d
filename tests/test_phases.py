"""Where the time went (frameval/phases.py, issue #50): a run's phases add up
to the runner's wall time, a missing mark is "not available" (None), and the
command's phases reach timing.json and its last line."""
import pytest

from frameval import files, phases

pytestmark = pytest.mark.fast


def _result():
    return {"runner_clock": {"start": 100.0, "end": 160.0},
            "clock": {"created": 102.0, "imported": 110.0, "data": 111.0, "train_start": 140.0,
                      "train_end": 155.0, "written": 159.0},
            "check": {"seconds": 20.0},
            "epochs": [{"seconds": 6.0, "eval_s": 1.0}, {"seconds": 6.0, "eval_s": 1.0}]}


def test_a_runs_phases_add_up_to_its_wall_time():
    ph = phases.run_phases(_result())
    assert ph == {"kernel start": 2.0, "import": 8.0, "data": 1.0, "model and check": 29.0, "training": 12.0,
                  "evaluation points": 2.0, "between epochs": 1.0, "after training": 4.0,
                  "writing and kernel stop": 1.0, "_check": 20.0}
    assert sum(v for k, v in ph.items() if not k.startswith("_")) == pytest.approx(60.0)


def test_a_missing_mark_is_not_available_never_zero():
    r = _result()
    del r["clock"]["data"], r["runner_clock"]
    ph = phases.run_phases(r)
    assert ph["data"] is None and ph["model and check"] is None and ph["kernel start"] is None
    assert ph["writing and kernel stop"] is None and ph["import"] == 8.0
    assert phases.run_phases({}) == {k: None for k in (*phases.RUN_PHASES, "_check")}


def test_the_command_clock_writes_its_phases_and_names_the_largest(tmp_path):
    clock = phases.CommandClock()
    clock.phases = {"environments": 48.0, "probe": 78.0, "runs": 435.0, "report": 7.5}
    clock.write(tmp_path, files.atomic_write_json)
    assert phases.read(tmp_path)["phases"] == clock.phases
    line = clock.last_line([_result()])
    assert "the largest part: runs, 7 min 15 s (of which model and check: 29.0 s over 1 run(s))" in line


def test_the_bootstrap_builds_count_in_the_command_that_it_execs(tmp_path):
    """The environments the bootstrap builds before it execs the runner are the
    command's first phase (the first report's builds took 58 s that no phase
    showed): the exec'd process (same pid) reads the mark; a child it starts does not."""
    import os
    import subprocess
    import sys
    from conftest import REPO
    after_exec = ("from frameval import phases; import subprocess, sys; "
                  "child = subprocess.run([sys.executable, '-c', 'from frameval import phases; "
                  "print(phases.CommandClock().phases)'], capture_output=True, text=True).stdout.strip(); "
                  "c = phases.CommandClock(); print(int(c.phases.get('environments', 0.0)), int(c.total())); "
                  "print(child); print(phases.CommandClock().phases)")
    script = ("import os, sys, time; from frameval import phases; "
              "os.environ[phases.BOOTSTRAP_VAR] = phases.bootstrap_mark(time.time() - 5.0); "
              f"os.execv(sys.executable, [sys.executable, '-c', {after_exec!r}])")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=str(REPO),
                         env=dict(os.environ, PYTHONPATH=str(REPO))).stdout.split("\n")
    envs_s, total_s = map(int, out[0].split())  # 5 s before the exec, plus this machine's start-up after it
    assert 5 <= envs_s <= total_s < 120, out
    assert out[1] == "{}" and out[2] == "{}", out  # its child; a second clock in the exec'd process
    assert phases.bootstrap_seconds({phases.BOOTSTRAP_VAR: "garbage"}) == 0.0
    assert phases.bootstrap_seconds({phases.BOOTSTRAP_VAR: f"{os.getpid()}:1e12"}) == 0.0  # in the future

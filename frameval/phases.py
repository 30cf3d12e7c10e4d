"""Where the time went (issue #50): a run's wall time cut into phases, and a
command's own phases around its runs.

A run's phases come from the wall-clock marks its recorder writes
(result["clock"]: created, imported, data, train_start, train_end, written)
and from the runner's start and end (result["runner_clock"]), and from the
figures the result already holds (import_s, the check's seconds, the epochs'
seconds, the evaluation points' eval_s). They add up to the runner's wall time.
A phase whose marks are missing (an older result) is None, never 0.

The command's phases (environments, data caches, the probe, the runs, the
report) are timed by the pipeline with `CommandClock` and written to
<out>/timing.json. Standard library only: the runner imports it before any
environment exists.
"""
from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from .files import read_json

# A run's phases, in the order they happen.
RUN_PHASES = ("kernel start", "import", "data", "model and check", "training", "evaluation points",
              "between epochs", "after training", "writing and kernel stop")
COMMAND_PHASES = ("environments", "data caches", "probe", "runs", "report")
TIMING = "timing.json"  # <out>/timing.json: the last command's phases


def _gap(clock: dict, a: str, b: str):
    x, y = clock.get(a), clock.get(b)
    return y - x if isinstance(x, (int, float)) and isinstance(y, (int, float)) else None


def _sub(x, *ys):
    if x is None or any(y is None for y in ys):
        return None
    return x - sum(ys)


def run_phases(result: dict) -> dict:
    """{phase: seconds or None} for one result dict, in RUN_PHASES order."""
    clock = dict(result.get("clock") or {})
    rc = result.get("runner_clock") or {}
    clock.update({"runner_start": rc.get("start"), "runner_end": rc.get("end")})
    epochs = [e for e in result.get("epochs") or [] if isinstance(e.get("seconds"), (int, float))]
    training = sum(e["seconds"] for e in epochs) if epochs else None
    evaluation = sum(float(e.get("eval_s") or 0.0) for e in epochs) if epochs else None
    check = (result.get("check") or {}).get("seconds")
    check = check if isinstance(check, (int, float)) else None
    return {
        "kernel start": _gap(clock, "runner_start", "created"),
        "import": _gap(clock, "created", "imported"),
        "data": _gap(clock, "imported", "data"),
        "model and check": _gap(clock, "data", "train_start"),
        "training": training,
        "evaluation points": evaluation,
        "between epochs": _sub(_gap(clock, "train_start", "train_end"), training or 0.0, evaluation or 0.0)
        if training is not None else None,
        "after training": _gap(clock, "train_end", "written"),
        "writing and kernel stop": _gap(clock, "written", "runner_end"),
        "_check": check,  # inside "model and check": shown apart where the report has room
    }


def sum_phases(results) -> dict:
    """{phase: (seconds summed, runs that had it)} over result dicts."""
    out = {}
    for r in results:
        for k, v in run_phases(r).items():
            if v is not None:
                s, n = out.get(k, (0.0, 0))
                out[k] = (s + max(0.0, v), n + 1)
    return out


class CommandClock:
    """`with clock("runs"):` times one of the command's phases; `write(out)` keeps them."""

    def __init__(self):
        self.t0 = time.perf_counter()
        self.phases: dict = {}
        before = bootstrap_seconds()
        os.environ.pop(BOOTSTRAP_VAR, None)  # counted once: a second clock in this process starts at zero
        if before:  # the bootstrap built environments before it exec'd this process: part of the command
            self.t0 -= before
            self.phases["environments"] = before

    @contextlib.contextmanager
    def __call__(self, name: str):
        t = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] = self.phases.get(name, 0.0) + time.perf_counter() - t

    def total(self) -> float:
        return time.perf_counter() - self.t0

    def write(self, out: Path, atomic_write_json) -> None:
        atomic_write_json(Path(out) / TIMING, {"phases": {k: round(v, 2) for k, v in self.phases.items()},
                                               "total_s": round(self.total(), 2)})

    def last_line(self, runs: list) -> str:
        """The command's total and its largest part; within the runs, their largest phase."""
        total = self.total()
        parts = dict(self.phases)
        if not parts:
            return f"frameval: done in {_dur(total)}"
        big = max(parts, key=parts.get)
        text = f"frameval: done in {_dur(total)}; the largest part: {big}, {_dur(parts[big])}"
        summed = {k: v for k, v in sum_phases(runs).items() if not k.startswith("_")}
        if big == "runs" and summed:
            inner = max(summed, key=lambda k: summed[k][0])
            text += f" (of which {inner}: {_dur(summed[inner][0])} over {summed[inner][1]} run(s))"
        return text + " (" + ", ".join(f"{k} {_dur(v)}" for k, v in parts.items()) + f"; {TIMING})"


# The bootstrap (frameval/bootstrap.py) builds the runner's environment, and the
# frameworks' beside it, then execs the runner: "<pid>:<start, epoch seconds>" tells
# the exec'd process (the same pid) when the command began. Another process that
# inherits the variable (a test's subprocess) has another pid and ignores it.
BOOTSTRAP_VAR = "FRAMEVAL_BOOTSTRAP_MARK"


def bootstrap_mark(started: float) -> str:
    return f"{os.getpid()}:{started:.3f}"


def bootstrap_seconds(environ=None) -> float:
    """Seconds this process's bootstrap spent before the exec (0.0 where there was none)."""
    pid, _, started = (environ if environ is not None else os.environ).get(BOOTSTRAP_VAR, "").partition(":")
    try:
        if int(pid) != os.getpid():
            return 0.0
        secs = time.time() - float(started)
    except ValueError:
        return 0.0
    return secs if 0 <= secs < 86400 else 0.0


def read(out: Path) -> dict:
    """<out>/timing.json, or {} where there is none."""
    return read_json(Path(out) / TIMING, {})


def _dur(s: float) -> str:
    s = float(s)
    if s < 60:
        return f"{s:.1f} s"
    return f"{int(s // 60)} min {s % 60:02.0f} s"

"""Whether a peak figure was measured on an idle machine, and the timing loop
that measures it (standard library only: the runner's probe and the
framework-side GEMM script, frameval/envscripts/gemm.py, both use it).

A peak measured while other work runs is a lower bound, not a peak: on 2 cores
at load 3.98 MindSpore's GEMM read 63 GFLOP/s where idle it reaches 110, and
the report raised a false alarm on it (#49). So every figure carries the load
average before it and its own repeat spread; a figure measured busy is flagged
(`busy_reason`), never silently used as a ceiling.
"""
from __future__ import annotations

import os
import time

# The 1-minute load average at or above this share of the cores, before the
# probe starts, marks the machine busy: the probe waits a little for it to fall.
# It is not the verdict on a figure: the probe's own earlier products lift the
# load average by themselves.
BUSY_LOAD_PER_CORE = 0.75
# The verdict: other processes' share of the machine's CPU time while the
# figure was timed (its own process's time taken out; frameval/nb/measure.py)
# above this marks the figure busy (as report/labels.BUSY_SHARE for a run).
BUSY_OTHER_SHARE = 0.25
# The best and the second-best repeats within this of each other: the figure
# is reproducible and the loop stops.
AGREE = 0.03
# A spread (median repeat over the best, less one) above this, where the best
# two never agreed: the repeats disagree, so something else shared the cores
# while they ran (where the best two agree, the slow ones were warm-up).
NOISY_SPREAD = 0.15
MIN_REPEATS = 3
MAX_REPEATS = 10
# ...or until the timed repeats have taken this long: on a busy machine more
# repeats do not make the figure idle, they only make the probe slow (it ran
# past 5 minutes at load 7 on 2 cores without this).
BUDGET_S = 4.0
# How long the probe waits for a busy machine to settle before measuring anyway.
WAIT_S = 20.0
WAIT_STEP_S = 5.0
# How long the CPU is watched to tell work now from a load average still decaying.
NOW_WINDOW_S = 0.5
# A child started ahead of its turn (frameval/envscripts: run_staged) starts Python,
# imports its framework and sets up beside the others, then waits here, stopped by
# the parent, until the parent lets it time: start-ups share the cores, timings have them alone.
STAGED_VAR = "FRAMEVAL_STAGED"
READY = "frameval: ready to time"


def load() -> list | None:
    """The 1, 5 and 15 minute load averages, or None where the OS has none."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def cores() -> int:
    return os.cpu_count() or 1


def is_busy(avg: list | None, n_cores: int | None = None) -> bool:
    """True when the 1-minute load average says other work holds the cores."""
    return bool(avg) and avg[0] >= BUSY_LOAD_PER_CORE * (n_cores or cores())


def busy_share_now(window_s: float = NOW_WINDOW_S, sleep=time.sleep) -> float | None:
    """The share of the machine's CPU time busy over the next `window_s`, while
    this process sleeps (so all of it is other work); None without /proc/stat."""
    from frameval.nb.measure import cpu_times
    a = cpu_times()
    sleep(window_s)
    b = cpu_times()
    if not a or not b or b["total_s"] <= a["total_s"]:
        return None
    return (b["busy_s"] - a["busy_s"]) / (b["total_s"] - a["total_s"])


def busy_now(avg, n_cores=None, sleep=time.sleep) -> bool:
    """Whether other work holds the cores now. The load average decays over a
    minute: right after frameval's own environment builds or runs it still
    reads busy on an idle machine (every command of the suite waited 20 s for
    it), so where it says busy the CPU's share over the last half second decides."""
    if not is_busy(avg, n_cores):
        return False
    share = busy_share_now(sleep=sleep)
    return share is None or share > BUSY_OTHER_SHARE


def wait_for_idle(say=None, wait_s: float = WAIT_S, step_s: float = WAIT_STEP_S, sleep=time.sleep) -> dict:
    """Wait up to `wait_s` for other work to leave the cores:
    {"load": the load average when measuring starts, "waited_s": how long it waited}."""
    t0, avg = time.perf_counter(), load()
    busy = busy_now(avg, sleep=sleep)
    if busy and say:
        say(f"frameval: the machine is busy (load {avg[0]:.2f} on {cores()} cores): "
            f"waiting up to {wait_s:.0f} s before measuring its peak")
    while busy and time.perf_counter() - t0 < wait_s:
        sleep(step_s)
        avg = load()
        busy = busy_now(avg, sleep=sleep)
    return {"load": avg, "waited_s": round(time.perf_counter() - t0, 1)}


def best_time(run, sync=lambda: None, min_repeats: int = MIN_REPEATS, max_repeats: int = MAX_REPEATS) -> dict:
    """Time `run` (then `sync`) after one warm-up until its best two repeats
    agree within AGREE (at least `min_repeats`, at most `max_repeats`):
    {"best_s", "repeats", "spread", "times", "load", "other_share"}. A repeat
    that disagrees buys another; agreement stops early, so an idle machine
    pays little. `other_share`: the CPU time other processes took meanwhile."""
    from frameval.nb.measure import machine_before, machine_state
    wait_for_turn()
    before = machine_before()
    run()
    sync()
    times = []
    while len(times) < max_repeats:
        t0 = time.perf_counter()
        run()
        sync()
        times.append(time.perf_counter() - t0)
        if len(times) >= min_repeats and (_agree(times) or sum(times) > BUDGET_S):
            break
    state = machine_state(before)
    return {"best_s": min(times), "repeats": len(times), "spread": spread(times), "times": [round(t, 7) for t in times],
            "load": before.get("load"), "other_share": state.get("other_share")}


def wait_for_turn() -> None:
    """In a staged child (STAGED_VAR set): say READY on stdout, then block on stdin
    until the parent writes a line (or closes it); the parent stops the process
    meanwhile, as its framework's threads may still work (envscripts._Child).
    Elsewhere it returns at once."""
    global _TURN
    if os.environ.get(STAGED_VAR) and not _TURN:
        import sys
        print(READY, flush=True)
        sys.stdin.readline()
        _TURN = True  # once a process: its turn lasts until it exits (a second product, bfloat16's, times in it)


_TURN = False


def _agree(times) -> bool:
    a, b = sorted(times)[:2]
    return b <= a * (1 + AGREE)


def spread(times) -> float:
    """The median repeat over the best, less one (0 = every repeat the same)."""
    s = sorted(times)
    return round(s[len(s) // 2] / s[0] - 1, 4) if s and s[0] > 0 else 0.0


def converged(timed: dict) -> bool:
    """Whether the figure's best two repeats agreed within AGREE: its best is
    reproducible, so slower repeats beside it were warm-up (a BLAS's threads
    starting, the clock rising), not other work. An idle 2-core EPYC timed
    numpy's 2-thread product at 180, 176, 108 and 109 ms: a 64% spread, and a
    peak the report had refused as "not idle" while other processes took 1%."""
    times = timed.get("times")
    return bool(times) and len(times) >= 2 and _agree(times)


def busy_reason(timed: dict, n_cores: int | None = None) -> str | None:
    """Why a figure (`best_time`'s dict) is not an idle one ("load 3.98 on 2
    cores, other processes 48% of the CPU time", "repeat spread 31%"), or None when it is."""
    why = []
    other, avg, spread_ = timed.get("other_share"), timed.get("load"), timed.get("spread")
    if other is not None and other > BUSY_OTHER_SHARE:
        why.append((f"load {avg[0]:.2f} on {n_cores or cores()} cores, " if avg else "")
                   + f"other processes {other * 100:.0f}% of the CPU time")
    if spread_ is not None and spread_ > NOISY_SPREAD and not converged(timed):
        why.append(f"repeat spread {spread_ * 100:.0f}%")
    return "; ".join(why) or None

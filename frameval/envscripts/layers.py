"""Every layer of a workload's training step, timed inside a framework's own
environment at the run's shapes (`python -m frameval.envscripts.layers
FRAMEWORK WORKLOAD BATCH THREADS MODE [PROCESS]`; prints one JSON line). Issue #66.

The layers and what the step asks of each (how many forwards, which
gradients) come from the workload's record (`Workload.ops`,
frameval/workloads/base.py `Op`); each framework builds and runs one layer in
its part `frameworks/<fw>/layers.py`:

    setup(threads, mode) -> version     threads as its notebooks set them
    build(op, batch, input_grad, weight_grad, mode, builtin=False) -> run
        run(): one forward and the backward the use needs, finished when it
        returns (a framework that runs asynchronously synchronises inside)
    substitutes(mode) -> {kind: what its notebooks use instead of the built-in}
    substitute(op, mode) -> that text or None, where a kind is substituted only
        in some layers (a stride-2 convolution's padding); optional
    HOW: {mode: how a layer is compiled in that mode}

Each layer's use is also read less the cost of one call with next to no work
in it (`call_floor`: a ReLU of one number, forward and backward): the
framework's per-call dispatch, which a step compiled whole pays once and an
eager step pays per operator anyway, so it belongs around the kernels, not
in them (frameval/layers.py subtracts it).

A layer a run substitutes (the notebooks' †) is timed as the run uses it,
and the built-in beside it where it runs at all. Each use is warmed up
(the first call compiles in graph mode), then repeated until MIN_S or
MAX_REPEATS, at least MIN_REPEATS: its median and spread (the median over the
fastest, less one). A layer that fails is its cell's error; the others go on.
"""
from __future__ import annotations

import json
import sys
import time

from frameval import frameworks, idle, workloads

MIN_REPEATS, MAX_REPEATS, MIN_S = 3, 50, 0.4
# The empty call: a ReLU of one number at batch 1, its input's gradient.
FLOOR_OP = {"name": "one call, next to no work", "kind": "relu", "shape": [1], "args": {}, "uses": [[1, True, False]],
            "macs": 0}


def time_use(run) -> dict:
    """{"median_s", "best_s", "spread", "repeats"} of `run` after its warm-up."""
    t0 = time.perf_counter()
    run()  # compiles in graph mode
    if time.perf_counter() - t0 < 1.0:
        run()  # a second warm-up where it is cheap: allocators, caches
    times = []
    while len(times) < MAX_REPEATS and (len(times) < MIN_REPEATS or sum(times) < MIN_S):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    s = sorted(times)
    return {"median_s": s[len(s) // 2], "best_s": s[0], "spread": idle.spread(times), "repeats": len(times)}


def _error(e: BaseException) -> str:
    return (f"{type(e).__name__}: " + (str(e).strip().splitlines() or [""])[0])[:300]


def _cell(part, op: dict, batch: int, mode: str, ig: bool, wg: bool, builtin: bool = False) -> dict:
    try:
        return time_use(part.build(op, batch, ig, wg, mode, builtin=builtin))
    except Exception as e:  # noqa: BLE001 - one layer's failure is its cell, never the table's
        return {"error": _error(e)}


def measure(framework: str, workload: str, batch: int, threads: int, mode: str) -> dict:
    from frameval.nb.measure import machine_before, machine_state
    part = frameworks.part(framework, "layers")
    version = part.setup(threads, mode)
    subs = part.substitutes(mode)
    idle.wait_for_turn()
    before, t0 = machine_before(), time.perf_counter()
    # what one call of a layer costs with next to no work in it (a ReLU of one number, forward and
    # backward): the framework's per-call dispatch, which a whole step compiled as one pays once
    floor = _cell(part, FLOOR_OP, 1, mode, True, False)
    rows = []
    for op in (o.to_dict() for o in workloads.get(workload).ops({})):
        row = dict(op, uses=[])
        for times, ig, wg in op["uses"]:
            row["uses"].append(dict(_cell(part, op, batch, mode, ig, wg), times=times, input_grad=ig, weight_grad=wg))
        sub = part.substitute(op, mode) if hasattr(part, "substitute") else subs.get(op["kind"])
        if sub:  # the run's layer is a substitute: the built-in beside it, as the step would use it
            row["substitute"] = sub
            row["builtin"] = [dict(_cell(part, op, batch, mode, ig, wg, builtin=True), times=times, input_grad=ig,
                                   weight_grad=wg) for times, ig, wg in op["uses"]]
        rows.append(row)
    state = machine_state(before)
    other = state.get("other_share")
    busy = (f"other processes {other * 100:.0f}% of the CPU time"
            if other is not None and other > idle.BUSY_OTHER_SHARE else None)
    return {"framework": framework, "version": version, "workload": workload, "batch": batch, "threads": threads,
            "mode": mode, "how": part.HOW.get(mode, mode), "ops": rows, "call_floor": floor, "load": before.get("load"),
            "other_share": other, "busy": busy, "timing_s": round(time.perf_counter() - t0, 2),
            "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "cache": busy is None}


if __name__ == "__main__":
    # argv[6], the process's index (frameval/layers.py PROCESSES), only tells its cache file apart
    fw, wl, batch, threads, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    print(json.dumps(measure(fw, wl, batch, threads, mode)))

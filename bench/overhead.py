#!/usr/bin/env python
"""The harness's own cost: the same training code run (A) as a plain Python
script and (B) through the full frameval path (papermill, Jupyter kernel,
recorder), alternating A B A B ...

    $(python3 -c 'from frameval.bootstrap import runner_env; print(runner_env().python)') bench/overhead.py
    ... bench/overhead.py --pairs 5 --epochs 4 --samples 1024

Run it with the runner environment's python (it drives papermill the way
`run_all.py` does); the framework environment must be built already
(`python3 run_all.py --setup-only --frameworks torch`).

(A) is the notebook itself: its code cells, in order, with the parameters
injected after the parameters cell as papermill does, executed by the
framework environment's python as one script. Only the recorder is swapped
for a plain stand-in (perf_counter around each epoch, no files), so the model,
the step and the loop are literally the same code. (B) is
`frameval.execute.execute` on a `frameval.plan.build_plan` Run, exactly what
the pipeline runs.

Printed:
- the median over pairs of steady-epoch time B / A (target <= 1.02);
- the fixed per-run cost beyond the framework import: wall time minus the
  epochs' training time minus the import, for B and for A; the harness's own
  part is B's minus A's (target <= 3 s);
- the recorder's own cost: time inside the timed region of an empty epoch,
  the bookkeeping per epoch (result.partial.json written atomically), the
  memory probes (no sampling thread: getrusage and /proc), and whether any
  thread is started.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from frameval import envs, execute, notebook as nbfile  # noqa: E402
from frameval.plan import build_plan  # noqa: E402

# The plain stand-in for nb.Recorder in (A): same thread pinning (before the
# framework import), same clock (perf_counter, device sync before each read),
# nothing else. Everything the notebook calls that does not matter here is a no-op.
PRELUDE = textwrap.dedent('''
    import json as _json, os as _os, time as _time
    from pathlib import Path as _Path
    import frameval.nb as _nb
    from frameval.nb.record import THREAD_VARS as _THREAD_VARS

    class _PlainEpoch(dict):
        def update(self, **kw):
            super().update(kw)
            return self

    class _PlainTimer:
        def __init__(self, rec, samples):
            self.rec, self.samples = rec, samples
        def __enter__(self):
            self.ep = _PlainEpoch(epoch=len(self.rec.epochs) + 1, samples=self.samples)
            if self.rec.sync:
                self.rec.sync()
            self.t0 = _time.perf_counter()
            return self.ep
        def __exit__(self, et, e, tb):
            if self.rec.sync:
                self.rec.sync()
            secs = _time.perf_counter() - self.t0
            if et is None:
                self.ep["seconds"] = secs
                self.rec.epochs.append(self.ep)
            return False

    class PlainRecorder:
        def __init__(self, framework, workload, params, out_dir="", threads=None, chdir=True):
            self.t_created = _time.perf_counter()
            self.threads = int(threads or params.get("threads") or _os.cpu_count() or 1)
            for v in _THREAD_VARS:
                _os.environ[v] = str(self.threads)
            self.out = _Path(out_dir or ".")
            self.out.mkdir(parents=True, exist_ok=True)
            self.result = {"notes": [], "settings": {}}
            self.epochs, self.sync, self.import_s = [], None, None
        def after_import(self, version, sync=None, **kw):
            self.import_s = _time.perf_counter() - self.t_created
            self.sync = sync
        def epoch(self, samples=None):
            return _PlainTimer(self, samples)
        def write(self, status="ok"):
            p = self.out / "plain.json"
            p.write_text(_json.dumps({"import_s": self.import_s,
                                      "epochs": [e["seconds"] for e in self.epochs]}))
            return p
        def summary(self):
            return ""
        def __getattr__(self, name):  # set_data, settings, set_param_counts, set, note, set_compiled ...
            if name.startswith("__"):
                raise AttributeError(name)
            return lambda *a, **k: None

    _nb.Recorder = PlainRecorder
''')


def plain_script(notebook: Path, params: dict) -> str:
    """The notebook's code cells as one script, parameters injected after the
    parameters cell (what papermill does)."""
    nb = nbfile.read(notebook)
    parts = [PRELUDE]
    for cell in nbfile.code_cells(nb):
        parts.append(nbfile.source(cell))
        if "parameters" in nbfile.tags(cell):
            parts.append("\n".join(f"{k} = {v!r}" for k, v in params.items()))
    return "\n\n".join(parts) + "\n"


def steady(secs):
    return statistics.median(secs[1:]) if len(secs) > 1 else None


def run_plain(env, run, d: Path) -> dict:
    d.mkdir(parents=True, exist_ok=True)
    script = d / "plain.py"
    script.write_text(plain_script(run.notebook, dict(run.params, out_dir=str(d))))
    penv = dict(os.environ, **envs.kernel_env(), **envs.FRAMEWORK_KERNEL_ENV.get(run.framework, {}))
    t0 = time.perf_counter()
    p = subprocess.run([str(env.python), str(script)], cwd=d, env=penv, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"plain script failed (exit {p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
    r = json.loads((d / "plain.json").read_text())
    return {"wall": wall, "import": r["import_s"], "epochs": r["epochs"]}


def run_frameval(env, run, d: Path) -> dict:
    parts = execute.key_parts(run, env.freeze)
    t_launch = time.time()
    out = execute.execute(run, d, envs.kernel_name(run.framework, run.device), parts)
    t_exit = time.time()
    r = json.loads((d / "result.json").read_text())
    if out.status != "ok":
        raise SystemExit(f"frameval run failed: {out.error}\nsee {d}")
    return {"wall": out.seconds, "import": r["import_s"], "epochs": [e["seconds"] for e in r["epochs"]],
            "timeline": timeline(d / "output.ipynb", t_launch, t_exit)}


def timeline(output_nb: Path, t_launch: float, t_exit: float) -> dict:
    """Where B's time outside the cells goes, from papermill's own timestamps
    (UTC, in the executed notebook's metadata)."""
    from datetime import datetime, timezone

    def ts(s):
        return datetime.fromisoformat(s).replace(tzinfo=timezone.utc).timestamp()
    try:
        nb = json.loads(output_nb.read_text())
        meta = nb["metadata"]["papermill"]
        cells = [c["metadata"]["papermill"] for c in nb["cells"] if c["metadata"].get("papermill", {}).get("start_time")]
        first = ts(cells[0]["start_time"])
        last_end = ts(cells[-1]["end_time"])
        start, end = ts(meta["start_time"]), ts(meta["end_time"])
        return {"papermill_start": start - t_launch,   # interpreter + papermill import + parameterising
                "kernel_start": first - start,           # kernel launch until the first cell runs
                "cells": sum(c["duration"] for c in cells),
                "between_cells": (last_end - first) - sum(c["duration"] for c in cells),
                "kernel_stop": end - last_end,           # kernel_info + kernel shutdown
                "save_exit": t_exit - end}               # writing output.ipynb, interpreter exit
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return {}


def fixed_cost(r: dict) -> float:
    return r["wall"] - sum(r["epochs"]) - r["import"]


RECORDER_COST = textwrap.dedent('''
    import json, statistics, sys, tempfile, threading, time
    from frameval.nb import measure
    from frameval.nb.record import Recorder
    n = int(sys.argv[1])
    threads0 = threading.active_count()
    rec = Recorder("torch", "lenet", {"mode": "eager", "device": "cpu"}, out_dir=tempfile.mkdtemp(), chdir=False)
    rec.after_import("none")
    inside, outside = [], []
    for i in range(n):
        t0 = time.perf_counter()
        with rec.epoch(samples=1024) as ep:
            pass
        ep.update(train_loss=0.5, train_acc=0.9, test_loss=0.4, test_acc=0.91)
        outside.append(time.perf_counter() - t0 - ep["seconds"])
        inside.append(ep["seconds"])
    def per_call(f, k=2000):
        t0 = time.perf_counter()
        for _ in range(k):
            f()
        return (time.perf_counter() - t0) / k
    t0 = time.perf_counter(); rec.write(); write_s = time.perf_counter() - t0
    print(json.dumps({"inside_s": statistics.median(inside), "inside_max_s": max(inside),
                      "bookkeeping_s": statistics.median(outside), "bookkeeping_max_s": max(outside),
                      "peak_rss_call_s": per_call(measure.peak_rss_mb), "rss_call_s": per_call(measure.rss_mb),
                      "write_s": write_s, "n": n, "threads_before": threads0, "threads_after": threading.active_count()}))
''')


def recorder_cost(env, n=30) -> dict:
    p = subprocess.run([str(env.python), "-c", RECORDER_COST, str(n)], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(REPO)))
    if p.returncode != 0:
        return {"error": p.stderr[-1500:]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--framework", default="torch")
    ap.add_argument("--workload", default="lenet")
    ap.add_argument("--mode", default="eager")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=4, help="epochs per run (the first is the warm-up)")
    ap.add_argument("--samples", type=int, default=1024, help="max_train_samples")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--keep", default="", help="keep the run folders here (default: a temporary folder)")
    a = ap.parse_args(argv)
    try:
        import papermill  # noqa: F401
    except ImportError:
        sys.exit("bench/overhead.py runs in the runner environment (papermill missing); see the docstring")

    env = envs.ensure_framework(a.framework)
    run = build_plan(a.framework, a.workload, mode=a.mode, overrides={None: {
        "epochs": str(a.epochs), "max_train_samples": str(a.samples), "batch_size": str(a.batch_size)}})[0]
    root = Path(a.keep or tempfile.mkdtemp(prefix="frameval-overhead-"))
    print(f"bench/overhead.py: {run.name}, {a.epochs} epochs x {a.samples} samples, batch {a.batch_size}; "
          f"{os.cpu_count()} cores; {a.pairs} pairs A (plain script) / B (frameval); folders in {root}", flush=True)
    pairs = []
    for k in range(1, a.pairs + 1):
        A = run_plain(env, run, root / f"A{k}")
        B = run_frameval(env, run, root / f"B{k}")
        pairs.append((A, B))
        print(f"  pair {k}: A steady {steady(A['epochs']):.3f} s (first {A['epochs'][0]:.2f}, wall {A['wall']:.1f}, "
              f"import {A['import']:.1f})   B steady {steady(B['epochs']):.3f} s (first {B['epochs'][0]:.2f}, "
              f"wall {B['wall']:.1f}, import {B['import']:.1f})   B/A {steady(B['epochs']) / steady(A['epochs']):.3f}",
              flush=True)

    ratios = [steady(B["epochs"]) / steady(A["epochs"]) for A, B in pairs]
    fastest = min(s for _, B in pairs for s in B["epochs"][1:]) / min(s for A, _ in pairs for s in A["epochs"][1:])
    cost_a = [fixed_cost(A) for A, _ in pairs]
    cost_b = [fixed_cost(B) for _, B in pairs]
    extra = [b - c for b, c in zip(cost_b, cost_a)]
    ratio, harness = statistics.median(ratios), statistics.median(extra)
    print()
    print(f"steady epoch time B/A, median of {len(ratios)} pairs: {ratio:.3f}   (per pair: "
          f"{', '.join(f'{r:.3f}' for r in ratios)})   target <= 1.02: {'met' if ratio <= 1.02 else 'MISSED'}")
    print(f"fastest steady epoch B / fastest steady epoch A (less sensitive to a loaded machine): {fastest:.3f}")
    print(f"fixed per-run cost beyond the import (wall - training - import), median: "
          f"A {statistics.median(cost_a):.2f} s, B {statistics.median(cost_b):.2f} s")
    print(f"harness's own fixed cost per run (B - A), median: {harness:.2f} s   (per pair: "
          f"{', '.join(f'{x:.2f}' for x in extra)})   target <= 3 s: {'met' if harness <= 3 else 'MISSED'}")
    tl = [B["timeline"] for _, B in pairs if B.get("timeline")]
    if tl:
        print("B's time outside the notebook's cells, median: " + ", ".join(
            f"{k.replace('_', ' ')} {statistics.median(t[k] for t in tl):.2f} s" for k in tl[0] if k != "cells"))
    print(f"import (recorder created -> after_import), median: A {statistics.median(A['import'] for A, _ in pairs):.2f} s, "
          f"B {statistics.median(B['import'] for _, B in pairs):.2f} s")

    rc = recorder_cost(env)
    print()
    if "error" in rc:
        print(f"recorder cost: could not measure: {rc['error']}")
    else:
        sa = statistics.median(steady(A["epochs"]) for A, _ in pairs)
        print("recorder's own cost (framework env python, empty epochs):")
        print(f"  inside the timed region per epoch: {rc['inside_s'] * 1e6:.1f} us median "
              f"(max {rc['inside_max_s'] * 1e6:.1f} us)  = {rc['inside_s'] / sa * 100:.4f} % of A's steady epoch")
        print(f"  bookkeeping per epoch outside it (Epoch record, result.partial.json written atomically "
              f"with fsync): {rc['bookkeeping_s'] * 1e3:.2f} ms median (max {rc['bookkeeping_max_s'] * 1e3:.2f} ms)")
        print(f"  host memory: no sampling thread; peak_rss_mb() (getrusage) {rc['peak_rss_call_s'] * 1e6:.1f} us "
              f"a call, rss_mb() (/proc/self/statm) {rc['rss_call_s'] * 1e6:.1f} us a call")
        print(f"  threads in the process: {rc['threads_before']} before the recorder, {rc['threads_after']} after "
              f"{rc['n']} epochs (CPU run: no NVML sampler)")
        print(f"  final write (summary + result.json): {rc['write_s'] * 1e3:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

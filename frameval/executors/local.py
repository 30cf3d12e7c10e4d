"""`--executor local`: one run after another on this machine, each through
papermill in its framework's kernel (frameval/execute.py)."""
from __future__ import annotations

import statistics
import time

from .. import execute
from ..result import NOT_OFFERED


def clock(s: float) -> str:
    """Seconds as M:SS, for progress lines."""
    s = int(round(s))
    return f"{s // 60}:{s % 60:02d}"


class Executor:
    name = "local"

    def dry_run(self, ctx, n_execute: int) -> None:
        """Nothing to add: the plan's lines say what runs."""

    def execute(self, ctx, jobs) -> bool:
        done_s, failed = [], False
        t_start = time.perf_counter()
        for k, job in enumerate(jobs, 1):
            if ctx.cancel.is_set():
                failed = True
                break
            ctx.say(f"{job.label}: running ({job.why}) ...")
            try:
                outcome = execute.execute(job.run, job.dir, job.kernel, job.parts, timeout=ctx.timeout,
                                          max_rss_mb=ctx.max_rss_mb,
                                          env_fields=job.env_fields, cancel=ctx.cancel)
            except execute.Interrupted:
                ctx.say(f"{job.label}: interrupted")
                failed = True
                break
            done_s.append(outcome.seconds)
            eta = statistics.mean(done_s) * (len(jobs) - k)
            status = {"ok": "ok", NOT_OFFERED: f"not offered ({outcome.error[:160]})"}.get(
                outcome.status, f"FAILED ({outcome.error[:160]})")
            ctx.say(f"{job.label}: {status} in {outcome.seconds:.1f} s  "
                    f"(elapsed {clock(time.perf_counter() - t_start)}, ETA {clock(eta)})")
            failed |= outcome.status not in ("ok", NOT_OFFERED)  # declined by its framework: a result (#69)
        ctx.say(f"frameval: {len(done_s)} run(s) executed, {ctx.total - len(done_s)} reused or skipped")
        return failed

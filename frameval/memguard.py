"""The memory guard (#72): each run's resident memory, the papermill child, its
kernel and everything they started, watched while it runs; above a limit the run
is stopped and recorded with its peak and the limit, and the next run goes on.

MegEngine's eager GPT peaked at 14.9 GB in the quick profile on a 24 GB machine.
Nothing stopped a run growing past what the machine has, and when the OOM killer
chose, it could take the runner rather than the kernel: every result of the
command after that run lost its report. The default limit leaves the runner and
the system a fifth of the machine's memory; `--max-rss` sets another, and
provenance.json records it.

Linux: /proc, read once a second (a scan of a few hundred processes costs the
runner about a millisecond, beside a run that is timed). Elsewhere the guard
reads nothing and limits nothing, and says so. Standard library only.
"""
from __future__ import annotations

import os
import re

from .exits import BadInput

DEFAULT_SHARE = 0.80   # of the machine's memory: the rest is the runner's and the system's
SAMPLE_S = 1.0         # between two readings
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def machine_mb() -> float | None:
    """The machine's memory (MemTotal), or None where /proc/meminfo is not there."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return None


def default_limit_mb() -> float | None:
    total = machine_mb()
    return None if total is None else round(total * DEFAULT_SHARE)


def parse(text: str) -> float:
    """--max-rss: "12G", "12000M", "12000" (MB) or "60%" of the machine's memory -> MB.
    Anything else, or a limit of 0 or less: one line, exit 2."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([GgMm%]?)[Bb]?\s*", str(text))
    if not m:
        raise BadInput(f"--max-rss {text!r}: give megabytes (12000), a size with its unit (12G, 12000M) or a "
                       "share of the machine's memory (60%)")
    v, unit = float(m.group(1)), m.group(2).upper()
    if unit == "%":
        total = machine_mb()
        if total is None:
            raise BadInput(f"--max-rss {text}: a share needs the machine's memory, which this system does not report")
        if not 0 < v <= 100:
            raise BadInput(f"--max-rss {text}: a share lies between 0 and 100%")
        v = total * v / 100
    elif unit == "G":
        v *= 1024
    if not v > 0:
        raise BadInput(f"--max-rss {text}: must be more than 0")
    return round(v)


def _stat(pid: str):
    """(ppid, resident MB) of one process, or None where it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[1]), int(fields[21]) * _PAGE / 1e6  # field 4 ppid, field 24 rss (pages)
    except (OSError, ValueError, IndexError):
        return None


def tree_mb(root: int) -> float | None:
    """The resident memory of `root` and all its descendants, MB; None without /proc."""
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return None
    info = {int(p): s for p in pids if (s := _stat(p)) is not None}
    kids: dict = {}
    for pid, (ppid, _) in info.items():
        kids.setdefault(ppid, []).append(pid)
    total, todo, seen = 0.0, [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        if pid in info:
            total += info[pid][1]
        todo += kids.get(pid, [])
    return total


class Watch:
    """One run's readings: the peak and the last, and whether the limit was passed."""

    def __init__(self, limit_mb: float | None):
        self.limit_mb, self.peak_mb, self.last_mb = limit_mb, 0.0, None

    def sample(self, root: int) -> bool:
        """Read the tree once; True where it is above the limit."""
        mb = tree_mb(root)
        if mb is None:
            return False
        self.last_mb, self.peak_mb = mb, max(self.peak_mb, mb)
        return self.limit_mb is not None and mb > self.limit_mb

    def record(self) -> dict:
        return {"peak_mb": round(self.peak_mb, 1) if self.last_mb is not None else None,
                "last_mb": None if self.last_mb is None else round(self.last_mb, 1), "limit_mb": self.limit_mb,
                "sampled_every_s": SAMPLE_S}

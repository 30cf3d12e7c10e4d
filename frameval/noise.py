"""The between-run spread of samples/s, measured on the machine that makes the
runs (#67): what widens every single run's interval (frameval/speed.py).

Two runs of the same notebook with the same parameters in fresh kernels
differ by more than their windows show inside one kernel. The spread of that
difference, as a log SD per run, is a property of the machine and its thread
count, not of a framework: `python3 run_all.py bench noise` measures it from
pairs of fresh runs (the default matrix twice, as the imported figure was
measured), and every command with `--repeats 2` or more adds its pairs.
With n pairs whose log ratios are d_i, the SD per run is sqrt(sum d_i² / 2n)
(each difference has twice a run's variance), and its 95% interval comes
from the chi-square distribution with n degrees of freedom: 21 pairs pin it
to about ±30%, 32 to ±25%.

Kept per machine (cpu.identity) and thread count in the user cache
(<cache>/noise/), and copied into each output folder as `noise.json`, so a
report read elsewhere knows where its noise came from. A report whose folder
has none uses speed.BETWEEN_RUN_SD, measured on another machine, and says
its verdicts are provisional. Standard library only.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import time
from pathlib import Path

from . import cpu, files, idle
from .paths import user_cache_dir

NOISE = "noise.json"  # <out>/noise.json
CACHE = "noise"       # <user cache>/noise/<machine key>-<threads>.json
# The fewest pairs whose spread the report uses; fewer say nothing reliable (±50% at 2).
MIN_PAIRS = 8


def _key(threads: int) -> str:
    text = json.dumps({"cpu": cpu.identity(), "threads": threads}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16] + f"-{threads}"


def cache_path(threads: int) -> Path:
    """The machine's record; FRAMEVAL_NOISE_DIR moves it (the suite's smoke run records into its own folder)."""
    base = Path(os.environ["FRAMEVAL_NOISE_DIR"]) if os.environ.get("FRAMEVAL_NOISE_DIR") else user_cache_dir() / CACHE
    return base / f"{_key(threads)}.json"


def _chi2_cdf(x: float, k: int) -> float:
    """P(chi-square with k degrees of freedom <= x): the regularized lower incomplete gamma
    P(k/2, x/2), by its series (converges for every x; a few hundred terms at most here)."""
    if x <= 0:
        return 0.0
    a, z = k / 2, x / 2
    term = total = 1 / a
    n = 0
    while term > total * 1e-15 and n < 10_000:
        n += 1
        term *= z / (a + n)
        total += term
    return min(1.0, math.exp(a * math.log(z) - z - math.lgamma(a)) * total)


def _chi2_quantile(p: float, k: int) -> float:
    """The chi-square distribution's p-quantile with k degrees of freedom (bisection on its CDF)."""
    lo, hi = 0.0, max(10.0, 10.0 * k)
    while _chi2_cdf(hi, k) < p:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _chi2_cdf(mid, k) < p else (lo, mid)
    return (lo + hi) / 2


def spread(log_ratios: list) -> dict:
    """{"sd", "lo", "hi", "n"}: the log SD per run from n pairs' log ratios, with its 95% interval."""
    n = len(log_ratios)
    if n == 0:
        return {"sd": None, "lo": None, "hi": None, "n": 0}
    ss = sum(d * d for d in log_ratios)
    return {"sd": math.sqrt(ss / (2 * n)), "lo": math.sqrt(ss / (2 * _chi2_quantile(0.975, n))),
            "hi": math.sqrt(ss / (2 * _chi2_quantile(0.025, n))), "n": n}


def pair_ratio(a, b) -> float | None:
    """log(a / b) of two positive figures (rates or seconds), else None."""
    ok = all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in (a, b))
    return math.log(a / b) if ok else None


def read_cached(threads: int) -> dict | None:
    m = files.read_json(cache_path(threads), None)
    return m if isinstance(m, dict) and m.get("cpu") == cpu.identity() else None


def add_pairs(pairs: list, threads: int, source: str, load=None) -> dict:
    """Add [(label, log ratio)] to this machine's record for `threads`; the record."""
    m = read_cached(threads) or {"cpu": cpu.identity(), "threads": threads, "pairs": []}
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    m["pairs"] += [{"run": label, "log_ratio": round(d, 6), "source": source, "when": stamp, "load": load}
                   for label, d in pairs if d is not None]
    m.update(spread([p["log_ratio"] for p in m["pairs"]]), measured=stamp)
    files.atomic_write_json(cache_path(threads), m)
    return m


def add_from_repeats(results: list) -> None:
    """A command's runs made --repeats 2 or more: each run's consecutive repeats are
    pairs of fresh kernels (their steady epoch seconds), added to the record for its
    thread count. Reused results were counted when they ran; a run made beside other
    work is left out (the suite's own tiny repeats once took this machine's 0.051 to 0.105)."""
    by_threads: dict = {}
    for r in results:
        if r.get("reused") or r.get("status") != "ok" or (r.get("device") or "cpu") != "cpu" or _busy(r):
            continue
        secs = [v for v in r.get("repeats") or [] if isinstance(v, (int, float))]
        threads = int((r.get("params") or {}).get("threads") or 0) or threads_all()
        label = f"{r.get('framework')}/{r.get('workload')}-{r.get('mode')}"
        by_threads.setdefault(threads, []).extend((label, pair_ratio(a, b)) for a, b in zip(secs, secs[1:]))
    for threads, pairs in by_threads.items():
        if pairs:
            add_pairs(pairs, threads, "--repeats")


def _busy(result: dict) -> bool:
    """A run made beside other work (other processes' share of the CPU over it past the
    probe's busy mark): its pair would record that work's noise. Not the load average,
    which a command's own earlier runs keep high for minutes."""
    m = result.get("machine") if isinstance(result.get("machine"), dict) else {}
    other = m.get("other_share")
    return isinstance(other, (int, float)) and other > idle.BUSY_OTHER_SHARE


def copy_into(out, threads: int) -> dict | None:
    """This machine's record for `threads`, written as <out>/noise.json where it has MIN_PAIRS or more."""
    m = read_cached(threads)
    if not m or len(m.get("pairs") or []) < MIN_PAIRS:
        return None
    files.atomic_write_json(Path(out) / NOISE, m)
    return m


def read(folder) -> dict | None:
    """<folder>/noise.json where it holds a spread from MIN_PAIRS pairs or more, else None."""
    m = files.read_json(Path(folder) / NOISE, None)
    ok = isinstance(m, dict) and isinstance(m.get("sd"), (int, float)) and (m.get("pairs") or []) and \
        len(m["pairs"]) >= MIN_PAIRS
    return m if ok else None


def threads_all() -> int:
    return os.cpu_count() or 1

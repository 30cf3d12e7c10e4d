"""The one speed estimate, used by the notebooks' recorder and by the report
(standard library only: it loads inside every framework's kernel).

- **A timing window** is k consecutive training steps with the device
  synchronised at both edges and nothing else inside: not building the epoch's
  batch list, not the per-epoch read-back of the loss. Its content is the same
  whatever the epoch count; only k changes: a whole epoch's steps where the
  steady epochs number MIN_WINDOWS or more, else enough windows per epoch to
  reach MIN_WINDOWS in all (`window_steps`).
- **The steady windows** are those of every epoch after the first (which
  compiles and warms up). A window shorter than MIN_WINDOW_S is read together
  with the next ones of its epoch until they last that long (`merged`): an
  evaluation or a window count may cut an epoch into windows of a few
  milliseconds, where one scheduler tick (4 ms at 250 Hz) is a third of a
  window. The merged windows still hold training steps only. A run whose
  windows stay under the floor (an epoch shorter than it) is not ranked.
- **A run's rate** is the median samples/s of its steady windows; **a side's
  rate** (a run and its repeats) the median over its runs of each run's rate.
- **Seconds per steady epoch** are derived from that rate, never timed apart:
  a steady epoch's training samples over the rate (`epoch_seconds`), so the
  two figures always agree and rank alike; the wall time of a whole epoch
  (batch building and loss read-back included) is not a speed figure.
- **Its interval** is a bootstrap of that same statistic (runs resampled, then
  each run's windows), on the log scale, the 95% percentile interval. Between
  separate processes a run's rate varies more than its windows do inside one
  process, and two or three runs cannot show that spread, so a side of up to
  FLOOR_RUNS runs has its log-scale spread raised to at least what the
  measured between-run spread implies for that many runs,
  max(BETWEEN_RUN_SD, the runs' own SD) / sqrt(n). Two runs that happen to
  agree closely are therefore never narrower than one would be widened.
"""
from __future__ import annotations

import math
import random
import statistics

MIN_WINDOWS = 5         # every speed figure rests on at least this many steady windows
MIN_WINDOW_S = 0.05     # ... each of them at least this long (docs/workloads.md): shorter ones are merged within their epoch
OUTLIER_FACTOR = 3.0    # a steady window this many times slower than the median is an outlier (counted, never dropped)
# The log SD of samples/s between separate kernels, measured on this 2-core VM
# with nothing else running: two default reports (python3 run_all.py, then
# --force), 21 runs each, pooled over the 21 pairs (median |log ratio| 0.058,
# a heavy tail: torch's LSTM ran at 30,242 and 16,625 samples/s, MindSpore's
# LeNet at 5,390 and 3,450, with other processes under 1% of the CPUs both times).
BETWEEN_RUN_SD = 0.128
# The machine BETWEEN_RUN_SD and the workloads' seed spreads were measured on: the
# report says "on this machine" only for CPU runs on one like it, else names it.
MEASURED_ON = {"cpu": "AMD EPYC", "cores": 2, "device": "cpu"}
FLOOR_RUNS = 5          # up to this many runs a side, the between-run floor applies
CONFIDENCE = 0.95
DRAWS = 2000


# ------------------------------------------------------------------ windows
def window_steps(steps: int, epochs: int) -> int:
    """Steps per timing window in an epoch of `steps` steps of a run of `epochs` epochs."""
    steady = int(epochs or 1) - 1
    if steady >= MIN_WINDOWS:
        return max(1, steps)
    per_epoch = -(-MIN_WINDOWS // max(steady, 1))
    return max(1, steps // per_epoch)


def steady(windows) -> list:
    """The windows of every epoch after the first that hold samples and time."""
    out = []
    for w in windows or []:
        if not isinstance(w, dict) or not isinstance(w.get("epoch"), (int, float)) or w["epoch"] <= 1:
            continue
        n, s = _num(w.get("samples")), _num(w.get("seconds"))
        if n and s and s > 0:
            out.append(w)
    return out


def merged(windows) -> list:
    """The steady windows, each shorter than MIN_WINDOW_S read with the next ones
    of its epoch ({"epoch", "samples", "seconds", "steps", "merged": how many});
    an epoch's short remainder joins its last window."""
    out: list = []
    for w in steady(windows):
        last = out[-1] if out else None
        if last and last["epoch"] == w["epoch"] and last["seconds"] < MIN_WINDOW_S:
            _add(last, w)
        else:
            out.append({"epoch": w["epoch"], "samples": _num(w["samples"]), "seconds": _num(w["seconds"]),
                        "steps": w.get("steps"), "merged": 1})
    for i in range(len(out) - 1, 0, -1):  # a short remainder at an epoch's end joins the window before it
        if out[i]["seconds"] < MIN_WINDOW_S and out[i - 1]["epoch"] == out[i]["epoch"]:
            _add(out[i - 1], out.pop(i))
    return out


def _add(into: dict, w: dict) -> None:
    into["samples"] += _num(w["samples"])
    into["seconds"] += _num(w["seconds"])
    into["steps"] = (into["steps"] + w["steps"]) if isinstance(into.get("steps"), int) and isinstance(
        w.get("steps"), int) else None
    into["merged"] += w.get("merged", 1)


def rates(windows) -> list:
    """samples/s of each steady window, short ones merged (`merged`)."""
    return [w["samples"] / w["seconds"] for w in merged(windows)]


def too_short(windows) -> float | None:
    """The median merged window's seconds where it stays under MIN_WINDOW_S (the run
    is not ranked), else None."""
    secs = sorted(w["seconds"] for w in merged(windows))
    med = secs[len(secs) // 2] if secs else None
    return med if med is not None and med < MIN_WINDOW_S else None


def outliers(rs) -> int:
    med = statistics.median(rs) if rs else None
    return sum(r * OUTLIER_FACTOR < med for r in rs) if rs else 0


def run_rate(windows):
    """A run's samples/s: the median of its steady windows' rates, or None. The
    recorder writes it as the run's `samples_per_s`; the report and compare read
    that figure as written, so a file's number is shown as it is."""
    rs = rates(windows)
    return statistics.median(rs) if rs else None


def side_rate(runs):
    """A side's samples/s: the median over its runs (each a list of window rates) of each run's median."""
    meds = [statistics.median(r) for r in runs if r]
    return statistics.median(meds) if meds else None


def epoch_samples(epochs, windows=None, n_train=None):
    """Training samples in one steady epoch: the median of the steady epochs'
    recorded samples, else one steady epoch's windows summed, else n_train."""
    per = [_num(e.get("samples")) for e in epochs or [] if isinstance(e, dict)
           and isinstance(e.get("epoch"), (int, float)) and e["epoch"] > 1]
    per = [n for n in per if n]
    if per:
        return statistics.median(per)
    by_epoch: dict = {}
    for w in steady(windows):
        by_epoch[w["epoch"]] = by_epoch.get(w["epoch"], 0) + _num(w["samples"])
    if by_epoch:
        return statistics.median(by_epoch.values())
    return _num(n_train) or None


def epoch_seconds(samples, rate):
    """Seconds per steady epoch of `samples` training samples at `rate` samples/s, or None."""
    samples, rate = _num(samples), _num(rate)
    return samples / rate if samples and rate and rate > 0 else None


def _num(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


# ------------------------------------------------------------------ intervals
def _draw(runs, rng) -> float:
    """One bootstrap replicate of side_rate, on the log scale."""
    picked = [runs[rng.randrange(len(runs))] for _ in runs]
    med = statistics.median
    return math.log(med([med([w[rng.randrange(len(w))] for _ in w]) for w in picked]))


def floor_sd(runs, between_sd: float = BETWEEN_RUN_SD) -> float:
    """The least log-scale SD a side's rate may have: max(between_sd, the runs'
    own SD of log rates) / sqrt(n) for up to FLOOR_RUNS runs, else 0."""
    n = len(runs)
    if n > FLOOR_RUNS or n == 0:
        return 0.0
    own = statistics.stdev([math.log(statistics.median(r)) for r in runs]) if n > 1 else 0.0
    return max(between_sd, own) / math.sqrt(n)


def _side_draws(runs, rng, draws: int, between_sd: float) -> tuple:
    """(log replicates raised to the floor, whether they were widened)."""
    reps = [_draw(runs, rng) for _ in range(draws)]
    have = statistics.pstdev(reps)
    extra = math.sqrt(max(0.0, floor_sd(runs, between_sd) ** 2 - have ** 2))
    return ([x + rng.gauss(0.0, extra) for x in reps] if extra else reps), extra > 0


def _percentiles(reps) -> tuple:
    reps = sorted(reps)
    return (reps[int((1 - CONFIDENCE) / 2 * len(reps))], reps[int((1 + CONFIDENCE) / 2 * len(reps)) - 1])


def _clean(runs) -> list:
    return [[x for x in r if _num(x) and x > 0] for r in runs if r and any(_num(x) and x > 0 for x in r)]


def rate_interval(runs, between_sd: float = BETWEEN_RUN_SD, draws: int = DRAWS, seed: int = 0) -> dict | None:
    """A side's samples/s (runs: each a list of window rates) with its 95% interval:
    {"rate", "lo", "hi", "widened", "runs", "windows"}; None without a window."""
    runs = _clean(runs)
    if not runs:
        return None
    reps, widened = _side_draws(runs, random.Random(seed), draws, between_sd)
    lo, hi = _percentiles(reps)
    return {"rate": side_rate(runs), "lo": math.exp(lo), "hi": math.exp(hi), "widened": widened,
            "runs": len(runs), "windows": sum(map(len, runs))}


_BEST_SIDE: dict = {}  # the fastest side's replicates, drawn once for every ratio against it


def _best_side_draws(best_runs, rng, draws: int, between_sd: float) -> tuple:
    """_side_draws of the fastest side, remembered with the generator's state after
    them: a report sets every run against the same fastest side (18 ratios, 4 s of
    its 12 s drawing that side again), and the next side then draws exactly what it
    would have drawn (the same numbers as without the memory)."""
    key = (tuple(map(tuple, best_runs)), draws, between_sd, rng.getstate())
    if key not in _BEST_SIDE:
        if len(_BEST_SIDE) > 256:
            _BEST_SIDE.clear()
        reps, widened = _side_draws(best_runs, rng, draws, between_sd)
        _BEST_SIDE[key] = (reps, widened, rng.getstate())
    reps, widened, state = _BEST_SIDE[key]
    rng.setstate(state)
    return list(reps), widened


def ratio_interval(best_runs, runs, between_sd: float = BETWEEN_RUN_SD, draws: int = DRAWS,
                   seed: int = 0) -> dict | None:
    """How many times slower `runs` are than `best_runs` per sample (side_rate of
    the best over this; 1 is as fast) with the 95% interval of that same ratio:
    {"ratio", "lo", "hi", "verdict", "widened", "runs", "windows"}. The verdict:
    "slower" when the whole interval lies above 1, else "within_noise"."""
    best_runs, runs = _clean(best_runs), _clean(runs)
    if not best_runs or not runs:
        return None
    rng = random.Random(seed)
    a, wa = _best_side_draws(best_runs, rng, draws, between_sd)
    b, wb = _side_draws(runs, rng, draws, between_sd)
    lo, hi = _percentiles([x - y for x, y in zip(a, b)])
    return {"ratio": side_rate(best_runs) / side_rate(runs), "lo": math.exp(lo), "hi": math.exp(hi),
            "verdict": "slower" if lo > 0 else "within_noise", "widened": wa or wb,
            "runs": (len(best_runs), len(runs)), "windows": (sum(map(len, best_runs)), sum(map(len, runs)))}

"""Did it get faster? The verdicts on two sets of runs of the same workload,
made to survive noise (scipy, in the runner environment, for the test).

A change in steady samples/s is called *faster* or *slower* only when both
  - it is larger than a threshold (default 10%, `--threshold`), as asv's `--factor`, and
  - it is significant across repeats: a two-sided Mann-Whitney U test over
    the repeats' samples/s gives p < 0.002, asv's threshold.
Otherwise it is *no significant change*. Where the repeats are too few for
the test ever to reach p < 0.002 (5 against 5: the smallest two-sided p is
2/252 = 0.008), a change beyond the threshold is not called ("too_few"), and
`repeats_needed` says how many repeats would do. The numerical check is
compared too (`check_change`): a version whose check errors against the same
float64 reference differ by more than the check's tolerance computes a
different function.

Pure functions of numbers and check records: the report's tables that show
them are in frameval/report/comparison.py.
"""
from __future__ import annotations

import math
import statistics

from .catalog import CHECK_SECTIONS_READ
from .result import as_dict, number

P_THRESHOLD = 0.002  # asv's p threshold (asv/_stats.py is_different)
DEFAULT_THRESHOLD = 0.10
VERDICTS = ("faster", "slower", "same", "too_few", "na")


# ------------------------------------------------------------------ medians and ratios
def median(values):
    """The median of the values that are not None, or None."""
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def ratio(b, a):
    """median(b) / median(a): above 1 means B has more (of samples/s: B is faster)."""
    mb, ma = median(b), median(a)
    if mb is None or ma is None or ma == 0:
        return None
    x = mb / ma
    return x if math.isfinite(x) else None


# ------------------------------------------------------------------ significance
def min_p(n: int, m: int) -> float:
    """The smallest two-sided exact Mann-Whitney p that n against m samples can give."""
    return 2 / math.comb(n + m, n) if n and m else 1.0


def repeats_needed(p_threshold: float = P_THRESHOLD) -> int:
    """The fewest repeats per side with which the test can reach p < p_threshold."""
    k = 1
    while min_p(k, k) >= p_threshold:
        k += 1
    return k


def mann_whitney(a, b):
    """Two-sided p of scipy's Mann-Whitney U (exact without ties up to 20 a side,
    else the normal approximation with tie correction)."""
    from scipy.stats import mannwhitneyu
    ties = len(set(a) | set(b)) < len(a) + len(b)
    method = "exact" if not ties and max(len(a), len(b)) <= 20 else "asymptotic"
    p = float(mannwhitneyu(a, b, alternative="two-sided", method=method).pvalue)
    return p if math.isfinite(p) else 1.0  # all values equal: no evidence of a change


def verdict(a, b, threshold: float = DEFAULT_THRESHOLD, p_threshold: float = P_THRESHOLD) -> dict:
    """{"verdict", "ratio" (B/A samples/s), "p", "n_a", "n_b", "needed"} for the
    samples/s of A's repeats against B's."""
    a = [x for x in a if x is not None]
    b = [x for x in b if x is not None]
    out = {"ratio": ratio(b, a), "p": None, "n_a": len(a), "n_b": len(b), "needed": repeats_needed(p_threshold)}
    if out["ratio"] is None:
        return dict(out, verdict="na")
    beyond = out["ratio"] > 1 + threshold or out["ratio"] < 1 / (1 + threshold)
    if min_p(len(a), len(b)) < p_threshold:
        out["p"] = mann_whitney(a, b)
    if not beyond:
        return dict(out, verdict="same")
    if out["p"] is None:
        return dict(out, verdict="too_few")
    if out["p"] >= p_threshold:
        return dict(out, verdict="same")
    return dict(out, verdict="faster" if out["ratio"] > 1 else "slower")


# ------------------------------------------------------------------ the check
def check_change(check_a, check_b) -> dict:
    """Whether B computes the function A does, from two runs' check records
    (result["check"]): each tensor's error against the shared float64
    reference, A's against B's, within the check's tolerance.
    {"different": True/False/None (not known), "worst": (section, name, delta, tol) or None}"""
    ca, cb = as_dict(check_a), as_dict(check_b)
    if not ca or not cb:
        return {"different": None, "worst": None}
    tol = {**as_dict(ca.get("tolerances")), **as_dict(cb.get("tolerances"))}
    worst, over = None, []
    for section in CHECK_SECTIONS_READ:
        t = number(tol.get(section))
        ea, eb = as_dict(ca.get(section)), as_dict(cb.get(section))
        for name in set(ea) & set(eb):
            x, y = number(ea[name]), number(eb[name])
            if x is None or y is None:
                if (x is None) != (y is None):  # one side measured it, the other could not
                    over.append((section, str(name), float("inf"), t))
                continue
            delta = abs(y - x)
            if worst is None or delta > worst[2]:
                worst = (section, str(name), delta, t)
            if t is not None and delta > t:
                over.append((section, str(name), delta, t))
    if (ca.get("ok") is True) != (cb.get("ok") is True) and ca.get("ok") in (True, False) and cb.get("ok") in (True, False):
        over.append(("ok", "check", float("inf"), None))
    over.sort(key=lambda x: -x[2])
    return {"different": bool(over), "worst": over[0] if over else worst}


# ------------------------------------------------------------------ how far a speed ranking can be trusted
# Between separate processes one run's samples/s varies more than its timing
# windows do inside one process (thread placement, the machine's other load):
# two default reports once ranked LeNet's fastest two in opposite orders, each
# with tight windows. The log standard deviation of samples/s between separate
# kernels, measured on this 2-core VM with nothing else running: two default
# reports (python3 run_all.py, then --force), 21 runs each, pooled over the 21
# pairs (median |log ratio| 0.058; the tail is heavy: torch's LSTM ran at 30,242
# and 16,625 samples/s, MindSpore's LeNet at 5,390 and 3,450, with other
# processes under 1% of the CPUs both times). A side measured in a single run
# has its interval widened by it; with repeats (--repeats), resampling the
# repeats sees that variation itself, tails included.
BETWEEN_RUN_SD = 0.128
CONFIDENCE = 0.95
BOOTSTRAP_DRAWS = 2000


def _side(runs, rng, statistic):
    """One bootstrap replicate of a side: runs resampled, then each run's windows."""
    picked = [runs[rng.randrange(len(runs))] for _ in runs]
    return statistic([statistic([w[rng.randrange(len(w))] for _ in w]) for w in picked])


def _interval(theta: float, reps: list, point: float | None) -> tuple:
    """(centre, low, high) from log-scale bootstrap replicates around the estimate
    theta: the 95% percentile interval, shifted to `point` where given (the
    figure the tables show), back on the linear scale."""
    reps = sorted(reps)
    lo_q, hi_q = reps[int((1 - CONFIDENCE) / 2 * len(reps))], reps[int((1 + CONFIDENCE) / 2 * len(reps)) - 1]
    centre = math.log(point) if point else theta
    return math.exp(centre), math.exp(centre + lo_q - theta), math.exp(centre + hi_q - theta)


def speed_interval(best_runs, runs, between_sd: float = BETWEEN_RUN_SD, draws: int = BOOTSTRAP_DRAWS,
                   seed: int = 0, point: float | None = None) -> dict | None:
    """How many times slower `runs` are than `best_runs` per sample (the ratio
    of their samples/s, best over this; 1 is as fast) with its 95% interval.

    Each side is a list of runs, each run the samples/s of its steady timing
    windows. The interval is a bootstrap over the windows within each run and
    over the runs, on the log scale, widened by `between_sd` for a side with a
    single run; it is centred on `point` (the ratio the tables show) where given.
    The verdict: "slower" when the whole interval lies above 1, else "within
    noise". None when a side has no window."""
    best_runs = [list(w) for w in best_runs if w]
    runs = [list(w) for w in runs if w]
    if not best_runs or not runs:
        return None
    import random
    rng = random.Random(seed)
    med = statistics.median
    theta = math.log(med([med(w) for w in best_runs]) / med([med(w) for w in runs]))
    widen = math.sqrt(sum(between_sd ** 2 for side in (best_runs, runs) if len(side) == 1))
    reps = [math.log(_side(best_runs, rng, med) / _side(runs, rng, med)) + rng.gauss(0.0, widen)
            for _ in range(draws)]
    centre, lo, hi = _interval(theta, reps, point)
    return {"ratio": centre, "lo": lo, "hi": hi, "verdict": "slower" if lo > 1 else "within_noise",
            "widened": widen > 0, "runs": (len(best_runs), len(runs)),
            "windows": (sum(map(len, best_runs)), sum(map(len, runs)))}


def rate_interval(runs, between_sd: float = BETWEEN_RUN_SD, draws: int = BOOTSTRAP_DRAWS, seed: int = 0,
                  point: float | None = None) -> dict | None:
    """One side's samples/s (the median over its runs of each run's windows)
    with its 95% interval: speed_interval's bootstrap for a single side, widened
    by `between_sd` when it rests on one run; centred on `point` where given.
    The scaling charts' error bars. None when no run has a window."""
    runs = [list(w) for w in runs if w]
    if not runs:
        return None
    import random
    rng = random.Random(seed)
    med = statistics.median
    theta = math.log(med([med(w) for w in runs]))
    widen = between_sd if len(runs) == 1 else 0.0
    reps = [math.log(_side(runs, rng, med)) + rng.gauss(0.0, widen) for _ in range(draws)]
    centre, lo, hi = _interval(theta, reps, point)
    return {"rate": centre, "lo": lo, "hi": hi,
            "widened": widen > 0, "runs": len(runs), "windows": sum(map(len, runs))}

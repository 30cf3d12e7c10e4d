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

Time to a target quality (`algoperf_median`, `mlperf_mean`) and the
convergence-parity test across frameworks (`convergence_parity`: Mann-Whitney
U of each against the rest pooled, Holm-corrected) are here too
(docs/time-to-target.md).

Pure functions of numbers and check records: the report's tables that show
them are in frameval/report/comparison.py. A ranking's speed ratios and their
intervals are frameval/speed.py's, the one speed estimate.
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


# ------------------------------------------------------------------ quality over seeds
# A quality figure (accuracy, R², a loss) differs between frameworks by
# numerical noise only, for one seed: every framework starts from the same
# weights and sees the same batches (docs/workloads.md). Only seeds show how
# large the real spread is, so quality is compared over seeds: a mean with a
# percentile-bootstrap 95% interval, and between two sides the mean
# difference, paired by seed where both ran the same seeds.
MIN_SEEDS = 3        # fewer seeds give no interval: a bootstrap of 2 values says nothing
SEED_DRAWS = 10_000


def _mean(xs) -> float:
    return math.fsum(xs) / len(xs)


def _boot(draw, draws: int, seed: int) -> tuple:
    import random
    rng = random.Random(seed)
    reps = sorted(draw(rng) for _ in range(draws))
    return reps[int(0.025 * (draws - 1))], reps[int(0.975 * (draws - 1))]


def pooled_sd(groups) -> tuple:
    """(SD, degrees of freedom) pooled over groups (one framework's values over
    its seeds each): the spread within a group, not between the groups' means."""
    ss, dof = 0.0, 0
    for g in groups:
        xs = [float(v) for v in g if v is not None and math.isfinite(float(v))]
        if len(xs) >= 2:
            m = sum(xs) / len(xs)
            ss += sum((x - m) ** 2 for x in xs)
            dof += len(xs) - 1
    return (math.sqrt(ss / dof), dof) if dof else (None, 0)


def seed_noise(sd: float) -> float:
    """The gap two one-seed values may show by the seed alone: 1.96 x sqrt(2) x SD,
    the 95% half-width of a difference of two independent draws."""
    return 1.96 * math.sqrt(2.0) * sd


def seed_mean(values, draws: int = SEED_DRAWS, seed: int = 0) -> dict:
    """{"mean", "lo", "hi", "n"} of one value per seed; lo and hi are None
    below MIN_SEEDS seeds."""
    xs = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not xs:
        return {"mean": None, "lo": None, "hi": None, "n": 0}
    out = {"mean": _mean(xs), "lo": None, "hi": None, "n": len(xs)}
    if len(xs) >= MIN_SEEDS:
        out["lo"], out["hi"] = _boot(lambda rng: _mean(rng.choices(xs, k=len(xs))), draws, seed)
    return out


def seed_difference(a: dict, b: dict, tol: float = 0.0, draws: int = SEED_DRAWS, seed: int = 0) -> dict:
    """B's quality minus A's, from {seed: value} of each side: {"diff", "lo",
    "hi", "paired", "n_a", "n_b", "verdict"}. Paired (a bootstrap of the
    per-seed differences) where both sides ran the same seeds, at least
    MIN_SEEDS of them; else unpaired (each side resampled by itself). The
    verdict: "higher" or "lower" where the interval excludes 0, "same" (within
    seed noise) where it holds 0 or the difference is below `tol` (the
    precision the report prints: agreement to 1e-7 is no ranking, however
    consistent its sign), "too_few" below MIN_SEEDS a side."""
    a = {k: float(v) for k, v in a.items() if v is not None and math.isfinite(float(v))}
    b = {k: float(v) for k, v in b.items() if v is not None and math.isfinite(float(v))}
    out = {"diff": None, "lo": None, "hi": None, "paired": False, "n_a": len(a), "n_b": len(b), "verdict": "na"}
    if not a or not b:
        return out
    xa, xb = list(a.values()), list(b.values())
    out["diff"] = _mean(xb) - _mean(xa)
    if min(len(a), len(b)) < MIN_SEEDS:
        return dict(out, verdict="too_few")
    if set(a) == set(b):
        d = [b[k] - a[k] for k in sorted(a)]
        out["paired"] = True
        out["lo"], out["hi"] = _boot(lambda rng: _mean(rng.choices(d, k=len(d))), draws, seed)
    else:
        out["lo"], out["hi"] = _boot(lambda rng: _mean(rng.choices(xb, k=len(xb))) - _mean(rng.choices(xa, k=len(xa))),
                                     draws, seed)
    if abs(out["diff"]) < tol:
        return dict(out, verdict="same")
    verdict = "higher" if out["lo"] > 0 else "lower" if out["hi"] < 0 else "same"
    return dict(out, verdict=verdict)


# ------------------------------------------------------------------ time to target
# MLPerf Training's and AlgoPerf's scoring of a time (or a sample count) to a
# target quality over runs of different seeds. A run that missed the target
# counts as an infinite time: it can move a median or a mean to "not reached",
# never shorten it. The 95% intervals are percentile bootstraps over the seeds
# with the fixed draws of the quality functions above; a bound may be infinite.
MLPERF_MIN_RUNS = 5   # MLPerf drops the fastest and the slowest of at least 5 runs
PARITY_MIN_RUNS = 3   # a rank test of fewer runs a framework has no power at all
PARITY_ALPHA = 0.05
INF = float("inf")


def _times(values) -> list:
    """Each run's time as a float: None (missed the target) is infinite; a NaN is no run."""
    out = []
    for v in values:
        x = INF if v is None else float(v)
        if x == x:
            out.append(x)
    return out


def _median(xs) -> float:
    return statistics.median(xs) if xs else INF  # misses are +inf only: (x + inf) / 2 is inf, never NaN


def mlperf_statistic(xs) -> float:
    """The mean of the runs without the fastest and the slowest; infinite
    where a run that is averaged missed the target."""
    kept = sorted(xs)[1:-1]
    return INF if any(math.isinf(x) for x in kept) else _mean(kept)


def _interval(xs, statistic, draws: int, seed: int) -> tuple:
    """The percentile bootstrap of `statistic` ("median" or "mlperf") over the
    runs, as _boot's, vectorised with numpy: a report ranks every run of every
    framework this way, and a draw at a time costs seconds per report."""
    if len(xs) < MIN_SEEDS:
        return None, None
    import numpy as np
    reps = np.sort(np.asarray(xs, dtype=float)[np.random.default_rng(seed).integers(0, len(xs), (draws, len(xs)))],
                   axis=1)
    if statistic == "median":  # +inf only (misses), so a mean of two middles is never NaN
        got = np.median(reps, axis=1)
    else:
        kept = reps[:, 1:-1]
        got = np.where(np.isinf(kept).any(axis=1), INF, kept.mean(axis=1))
    got = np.sort(got)
    return float(got[int(0.025 * (draws - 1))]), float(got[int(0.975 * (draws - 1))])


def algoperf_median(values, draws: int = SEED_DRAWS, seed: int = 0) -> dict:
    """AlgoPerf's score of runs (one value per seed, None where the target was
    missed): the median, infinite where half the runs or more missed.
    {"value", "lo", "hi", "n", "reached" (runs that reached the target)}."""
    xs = _times(values)
    lo, hi = _interval(xs, "median", draws, seed)
    return {"value": _median(xs) if xs else None, "lo": lo, "hi": hi, "n": len(xs),
            "reached": sum(1 for x in xs if math.isfinite(x))}


def mlperf_mean(values, draws: int = SEED_DRAWS, seed: int = 0) -> dict:
    """MLPerf Training's score: with MLPERF_MIN_RUNS runs or more, the mean
    without the fastest and the slowest run (infinite where one averaged run
    missed the target), with its bootstrap interval; with fewer, value None and
    `reason` "too_few". {"value", "lo", "hi", "n", "reason"}."""
    xs = _times(values)
    if len(xs) < MLPERF_MIN_RUNS:
        return {"value": None, "lo": None, "hi": None, "n": len(xs), "reason": "too_few"}
    lo, hi = _interval(xs, "mlperf", draws, seed)
    return {"value": mlperf_statistic(xs), "lo": lo, "hi": hi, "n": len(xs), "reason": ""}


def holm(ps) -> list:
    """Holm's step-down adjustment of p-values, in their order: the k-th
    smallest times (m - k + 1), never below an earlier one, at most 1."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out, running = [1.0] * len(ps), 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - k) * ps[i]))
        out[i] = running
    return out


def _rank_p(a, b) -> float:
    """Two-sided Mann-Whitney p of a against b, by the normal approximation
    with tie correction (evaluation points make equal sample counts common);
    infinite values (missed targets) rank above every finite one."""
    from scipy.stats import mannwhitneyu
    big = max([x for x in a + b if math.isfinite(x)], default=0.0) + 1.0
    fa, fb = ([x if math.isfinite(x) else big for x in s] for s in (a, b))  # one rank for every miss
    p = float(mannwhitneyu(fa, fb, alternative="two-sided", method="asymptotic").pvalue)
    return p if math.isfinite(p) else 1.0  # all values equal: no evidence of a difference


def convergence_parity(groups: dict, alpha: float = PARITY_ALPHA) -> dict:
    """Whether a framework needs other numbers of samples to reach the target
    than the rest: {name: [samples to target per run, None where missed]} ->
    {"ok", "reason", "runs", "lines": {name: {"n", "median", "pooled_median",
    "p", "p_holm", "flagged"}}}: each group's values against the others'
    pooled, two-sided, Holm-corrected across the groups. `ok` False (reason
    "too_few") with fewer than 2 groups or a group of fewer than PARITY_MIN_RUNS runs."""
    xs = {k: _times(v) for k, v in groups.items()}
    runs = sum(len(v) for v in xs.values())
    if len(xs) < 2 or any(len(v) < PARITY_MIN_RUNS for v in xs.values()):
        return {"ok": False, "reason": "too_few", "runs": runs, "lines": {}}
    names = list(xs)
    pooled = {k: [x for o in names if o != k for x in xs[o]] for k in names}
    ps = [_rank_p(xs[k], pooled[k]) for k in names]
    lines = {k: {"n": len(xs[k]), "median": _median(xs[k]), "pooled_median": _median(pooled[k]), "p": p,
                 "p_holm": ph, "flagged": ph < alpha} for k, p, ph in zip(names, ps, holm(ps))}
    return {"ok": True, "reason": "", "runs": runs, "lines": lines}

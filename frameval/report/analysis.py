"""What the report derives from its rows, kept beside them: the rows are
frozen (report/model.py), and what is computed from several of them lives
here, built once per report by `analyse`:

- each row's speed against the fastest of its ranking group, the ratio's 95%
  interval and verdict (speed.ratio_interval), a single run widened by the
  between-run spread measured on its machine (its folder's noise.json), else
  by the imported one, which makes the verdict provisional: `an.interval(w)`,
  `an.provisional(w, best)`;
- each row's GFLOP/s and its shares of the machine's peak and of its
  framework's own GEMM (report/peak.py): `an.peak(w)`;
- each row's quality over its seeds, one value per seed (the mean of that
  seed's repeats), with a 95% interval from three seeds on (stats.seed_mean):
  `an.quality(w)`;
- each row's time to its workload's target quality over its seeds,
  recomputed from the evaluation points, by AlgoPerf's and MLPerf's rules
  (stats.algoperf_median, stats.mlperf_mean): `an.target(w)`, which
  report/timetotarget.py lays out.

A row is its own key (rows compare by identity), so two rows that read alike
never share an analysis.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from .. import speed, stats
from .. import target as tt
from ..catalog import WORKLOAD_BY_KEY
from ..result import as_dict, counts, number
from .model import fastest_by_group, run_windows, speed_ratio
from .peak import NO_PEAK, Peak, peak_of


@dataclass(frozen=True)
class SeedQuality:
    """A row's quality figure over its seeds: `per_seed` ((seed, value), ...),
    each the mean of that seed's counted repeats (result.counts); the mean over seeds and its 95%
    interval (None below stats.MIN_SEEDS seeds); `n` seeds with a value."""
    per_seed: tuple = ()
    mean: float | None = None
    lo: float | None = None
    hi: float | None = None
    n: int = 0

    @property
    def by_seed(self) -> dict:
        return dict(self.per_seed)


NO_QUALITY = SeedQuality()


def quality_of(w) -> SeedQuality:
    per_seed = []
    for seed, results in w.seeds:
        vals = [v for v in (number(r.quality()) for r in results if counts(r)) if v is not None]
        if vals:
            per_seed.append((seed, sum(vals) / len(vals)))
    m = stats.seed_mean([v for _, v in per_seed])
    return SeedQuality(tuple(per_seed), m["mean"], m["lo"], m["hi"], m["n"])


# ------------------------------------------------------------------ time to target
# One run per seed: a seed's first completed run (its repeats train the same
# steps to the same quality; only seeds are replicates of the quality curve).
@dataclass(frozen=True)
class RunTarget:
    """One seed's run: its time to target recomputed from its points, and the
    result's own record of it (None where the run wrote none)."""
    seed: object
    got: dict
    recorded: dict | None

    @property
    def agrees(self) -> bool:
        """The recorder's figure equals the recomputation (or was not recorded)."""
        return self.recorded is None or all(self.recorded.get(k) == self.got.get(k)
                                            for k in ("reached",) + tt.CUMULATIVE)


@dataclass(frozen=True)
class TargetTime:
    """A row's time to target over its seeds; `target` None: none at this size."""
    target: tuple | None = None
    runs: tuple = ()           # (RunTarget, ...): the seeds whose run recorded evaluation points
    eval_s: tuple = ()         # every seed's evaluation seconds, where recorded
    algoperf: dict | None = None
    mlperf: dict | None = None
    samples: dict | None = None  # AlgoPerf's median applied to samples to target

    @property
    def reached(self) -> int:
        return sum(1 for r in self.runs if r.got["reached"])


NO_TARGET = TargetTime()


def _first_completed(results):
    """A seed's first counted run (result.counts: never a check-failed one)."""
    return next((r for r in results if counts(r)), None)


def _run_target(seed, r, target) -> RunTarget | None:
    ev = as_dict(r.raw.get("evaluation"))
    got = tt.from_evaluation(ev, target)
    if got is None:
        return None
    rec = r.raw.get("time_to_target")
    return RunTarget(seed, got, rec if isinstance(rec, dict) else None)


def target_of(w) -> TargetTime:
    """The row's TargetTime: every seed's first completed run, its time to
    target recomputed from its evaluation points."""
    wl = WORKLOAD_BY_KEY.get(w.workload)
    target = wl.target(w.result.params) if wl else None
    firsts = [(seed, _first_completed(rs)) for seed, rs in w.seeds]
    firsts = [(s, r) for s, r in firsts if r is not None]
    eval_s = tuple(v for v in (number(as_dict(r.raw.get("evaluation")).get("eval_s")) for _, r in firsts)
                   if v is not None)
    if target is None:
        return TargetTime(eval_s=eval_s)
    runs = tuple(x for x in (_run_target(s, r, target) for s, r in firsts) if x is not None)
    if not runs:
        return TargetTime(target=target, eval_s=eval_s)
    times, samples = _to_target(runs, "train_s"), _to_target(runs, "samples")
    return TargetTime(target=target, runs=runs, eval_s=eval_s, algoperf=stats.algoperf_median(times),
                      mlperf=stats.mlperf_mean(times), samples=stats.algoperf_median(samples))


def _to_target(runs, key) -> list:
    """Each run's `key` to target, None where it missed (stats reads None as
    infinite); a run that reached the target at a point without that figure
    is left out: its time is not available, not infinite."""
    return [r.got[key] for r in runs if not (r.got["reached"] and r.got[key] is None)]


def has_evaluation(w) -> bool:
    return any(isinstance(r.raw.get("evaluation"), dict) for _, rs in w.seeds for r in rs)


@dataclass(frozen=True)
class Analysis:
    intervals: Mapping = field(default_factory=lambda: MappingProxyType({}))
    peaks: Mapping = field(default_factory=lambda: MappingProxyType({}))
    qualities: Mapping = field(default_factory=lambda: MappingProxyType({}))
    targets: Mapping = field(default_factory=lambda: MappingProxyType({}))
    noises: Mapping = field(default_factory=lambda: MappingProxyType({}))  # {row: its machine's noise record or None}

    def interval(self, w):
        """speed.ratio_interval's dict for w against its group's fastest, or
        None (the fastest itself, a failed run, a group of one)."""
        return self.intervals.get(w)

    def verdict(self, w):
        """"slower", "faster" or "same" against the fastest, or None."""
        iv = self.interval(w)
        return iv.get("verdict") if iv else None

    def peak(self, w) -> Peak:
        return self.peaks.get(w, NO_PEAK)

    def between_sd(self, *ws) -> float:
        """The between-run log SD the intervals of rows `ws` were widened by."""
        return between_sd(self.noises, *ws)

    def provisional(self, *ws) -> bool:
        """Whether a comparison of `ws` rests on a spread measured on another machine (#67)."""
        return not all(self.noises.get(w) for w in ws)

    def quality(self, w) -> SeedQuality:
        return self.qualities.get(w, NO_QUALITY)

    def target(self, w) -> TargetTime:
        return self.targets.get(w, NO_TARGET)


def noise_of(w, by_source) -> dict | None:
    """The between-run spread measured on the machine that made row w (its folder's
    noise.json: frameval/noise.py), or None (a GPU's is not measured yet)."""
    m = (by_source or {}).get(str(w.result.source)) or {}
    return m.get("noise") if w.device == "cpu" else None


def between_sd(noises, *ws) -> float:
    """The between-run log SD for a comparison of rows `ws`: the largest measured on their
    machines where every one has it, else speed.BETWEEN_RUN_SD (measured on another machine)."""
    got = [noises.get(w) for w in ws]
    return max(n["sd"] for n in got) if got and all(got) else speed.BETWEEN_RUN_SD


def window_short(w) -> float | None:
    """The median steady window's seconds of a row's runs where it stays under speed.MIN_WINDOW_S."""
    got = [speed.too_short(r.timing.get("windows") if isinstance(r.timing.get("windows"), list) else r.epochs)
           for r in [w.result, *w.extra]]
    return max(filter(None, got), default=None)


def speed_intervals(rows, noises=None) -> dict:
    """{row: the ratio's interval} against the fastest of its workload,
    device and size (speed.ratio_interval on the runs' windows), single runs
    widened by the between-run spread of the machine that made them."""
    out, noises = {}, noises or {}
    for wl in {w.workload for w in rows}:
        wrows = [w for w in rows if w.workload == wl]
        for best in fastest_by_group(wrows).values():
            base = run_windows(best)
            for w in wrows:
                if w is not best and speed_ratio(w, best) is not None:
                    iv = speed.ratio_interval(base, run_windows(w), between_sd(noises, w, best))
                    short = max(filter(None, (window_short(best), window_short(w))), default=None)
                    # windows under the floor even merged within their epoch: no verdict (speed.MIN_WINDOW_S)
                    out[w] = dict(iv, verdict="not_ranked", short_s=short) if iv and short else iv
    return out


def analyse(rows, by_source=None, problems=None, S=None) -> Analysis:
    """The report's analysis of its rows. `by_source`: each output folder's
    machine record (report/peak.machines); without it no peak is known. Under
    `problems`, a peak that cannot be computed is reported and left out, and
    the rest of the report goes on."""
    noises = {w: noise_of(w, by_source) for w in rows}
    intervals = speed_intervals(rows, noises)
    peaks = {}
    if by_source is not None:
        def all_peaks():
            return {w: peak_of(w, by_source) for w in rows}
        peaks = all_peaks() if problems is None else problems.run(S("what_section", name=S("h_peak")), all_peaks,
                                                                   default=lambda it: {})
    qualities = {w: quality_of(w) for w in rows if w.ok}
    targets = {w: target_of(w) for w in rows if w.ok}
    return Analysis(MappingProxyType(intervals), MappingProxyType(peaks or {}), MappingProxyType(qualities),
                    MappingProxyType(targets), MappingProxyType(noises))

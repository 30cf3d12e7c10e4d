"""From result files to rows: one per run (repeats folded in), labelled so that
two rows never read alike. Tables are in `tables` (their cells: `cells`), the
audit in `audit`, the numerical check in `check`, the findings in `findings`.
Everything here is data; the templates only lay it out.

Results come from several versions of the notebooks: any field may be missing
or of another type, which `Result.from_dict` (frameval/result) reads as
None or empty. Missing is "not available" (n/a), never 0.
"""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, replace
from pathlib import Path

from .. import speed
from ..catalog import MIXED, WORKLOAD_BY_KEY
from ..cpu import BF16_FLAGS
from ..files import PLAN, RUNS, read_json
from ..result.folder import Environment, Plan
from ..result import COMPLETED, Result, counts
from ..result.store import is_repeat_dir, is_seed_dir, run_base
from ..versionkey import version_key
from . import fmt
from .spec import MODES, WORKLOADS, framework_name, order_key
from .versions import name_versions

NOISY_SPREAD = 0.10
VARIANT_SKIP = {"out_dir", "mode", "device", "check"}
REPLICATE_SKIP = {"seed", "out_dir"}  # what may differ between a row's seeds and repeats
VARIANT_KEYS_SHOWN = 4


def as_text(v, default="?") -> str:
    """A value shown as text: `default` when it was not recorded (None or empty)."""
    return default if v is None or v == "" else str(v)


def div(a, b):
    """a / b as a finite float, or None."""
    a, b = fmt.num(a), fmt.num(b)
    if a is None or not b:
        return None
    try:
        x = a / b
    except (OverflowError, ZeroDivisionError):
        return None
    return x if math.isfinite(x) else None


# ------------------------------------------------------------------ loading
def load_sources(sources):
    """(plans, environments) of the output folders, read through their schema
    (frameval/result/folder.py: any version, every key present); absent files are skipped."""
    plans, envs = [], {}
    for src in sources:
        p = read_json(Path(src) / PLAN, None)
        if isinstance(p, dict):
            p = Plan.from_dict(p).to_dict()
            p["_source"] = str(src)
            plans.append(p)
        for f in sorted((Path(src) / "environments").glob("*.json")):
            e = read_json(f, None)
            if isinstance(e, dict):
                fw = as_text(e.get("framework"), f.stem)
                e = Environment.from_dict(e).to_dict()
                e["_source"] = str(src)
                same = [x for x in envs.setdefault(fw, [])
                        if (x.get("key"), x.get("spec_name"), x.get("freeze")) == (e.get("key"), e.get("spec_name"), e.get("freeze"))]
                if not same:
                    envs[fw].append(e)
    return plans, envs


def run_id(r: Result) -> str:
    """`<source folder name>/<framework>/<run folder>`: names the run in the HTML (data-run)."""
    d, src = Path(r.dir or ""), Path(r.source or "")
    try:
        rel = d.relative_to(src / RUNS).as_posix()
    except ValueError:
        rel = d.as_posix()
    return f"{src.name or src}/{rel}"


# ------------------------------------------------------------------ rows
@dataclass(frozen=True, eq=False)  # eq=False: a row is hashed by identity, the key of what is derived from it
class Row:
    """One framework x workload x mode x device (x machine) run, repeats folded
    in: a view over `result`, the first repeat's Result (what the run is:
    framework, workload, mode, status, size ... are read from it, never copied),
    with `extra`, the other repeats' Results, what is derived over all of them
    (the speed figures: `_timing`) and how the report names it (labels).
    Frozen: what the report derives from a row (its speed interval, its share
    of the peak) lives beside it, in report/analysis.py."""
    result: Result
    extra: tuple
    fw_name: str                        # the framework's name, with its version where several ran
    extra_failed: tuple = ()
    # over the row's counted runs (repeats and seeds): frameval/speed.py's one estimator
    steady: float | None = None
    steady_lo: float | None = None
    steady_hi: float | None = None
    steady_kind: str = "epochs"
    steady_wall: float | None = None
    n_repeats: int = 1
    spread: float | None = None
    samples_per_s: float | None = None
    sps_lo: float | None = None
    sps_hi: float | None = None
    noisy: bool = False
    # labels: what tells two rows apart
    variant: str = ""
    variant_all: str = ""
    label: str = ""
    short: str = ""
    # ((seed, (its Results: repeats)), ...): every seed of a --seeds run, each
    # with its repeats; one entry for a run of one seed (report/analysis.py's quality)
    seeds: tuple = ()

    # ---------------------------------------------------------------- read from the result
    @property
    def fw(self) -> str:
        return as_text(self.result.framework)

    @property
    def workload(self) -> str:
        return as_text(self.result.workload)

    @property
    def mode(self) -> str:
        return as_text(self.result.mode)

    @property
    def device(self) -> str:
        return as_text(self.result.device, "cpu")

    @property
    def version(self) -> str | None:
        return self.result.framework_version or None

    @property
    def host(self) -> str | None:
        return self.result.host

    @property
    def status(self) -> str:
        return as_text(self.result.status, "unknown")

    @property
    def ok(self) -> bool:
        """It finished and measured (its check may have failed)."""
        return self.status in COMPLETED

    @property
    def check_failed(self) -> bool:
        return self.status == "check_failed"

    @property
    def id(self) -> str:
        return run_id(self.result)

    @property
    def size(self) -> tuple:
        return size_of(self.result)

    @property
    def params_total(self) -> int | None:
        """The model's parameters, where every count was recorded as a finite number."""
        nums = [fmt.num(v) for v in self.result.param_counts.values()]
        complete = self.result.param_counts and all(v is not None for v in nums) and math.isfinite(sum(nums))
        return int(sum(nums)) if complete else None

    @property
    def counted(self) -> bool:
        """Whether the row is ranked, in speed and in quality alike (result.counts):
        it finished and its numerical check passed."""
        return self.ok and not self.check_failed


def _fingerprint(r: Result) -> str:
    """The run's parameters but its seed: the seeds and repeats of one row
    share it, so a replicate left by an earlier plan with other parameters
    becomes a row of its own, never a false seed of this one."""
    return json.dumps({k: v for k, v in r.params.items() if k not in REPLICATE_SKIP}, sort_keys=True, default=str)


def _group(runs) -> list:
    """[(main Result, other Results, ((seed, (Results of that seed)), ...))]:
    a run's repeats (r<k>/) and seeds (seed-<n>/) fold into one row; the main
    is the run folder's own result, else the first seed's first repeat."""
    folders: dict = {}
    for r in runs:
        d = r.dir or ""
        folders.setdefault((str(r.source), run_base(d) if d else id(r)), []).append(r)
    groups = []
    for rs in folders.values():
        by_print: dict = {}
        for r in rs:
            by_print.setdefault(_fingerprint(r) if r.params else None, []).append(r)
        unread = by_print.pop(None, [])  # a corrupt record has no parameters: it stays with its folder's run
        parts = list(by_print.values()) or [[]]
        parts[0] += unread
        groups += parts
    out = []
    for members in groups:
        own = [r for r in members if not (r.dir and (is_repeat_dir(r.dir) or is_seed_dir(r.dir)))]
        main = own[0] if own else members[0]
        seeds: dict = {}
        for r in [main] + [x for x in members if x is not main]:
            seeds.setdefault(r.params.get("seed"), []).append(r)
        by_seed = tuple((s, tuple(rs)) for s, rs in sorted(seeds.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)))
        out.append((main, [x for x in members if x is not main], by_seed))
    return out


def make_rows(runs, S, multi_host=False, problems=None) -> list:
    """The rows of results (Result, or result dicts as results.load_runs reads
    them), sorted, named and labelled: each row is built once and then only
    replaced, never changed."""
    runs = [r if isinstance(r, Result) else Result.from_dict(r) for r in runs]
    rows = []
    for main, extra, by_seed in _group(runs):
        if problems is None:
            rows.append(_row(main, extra, S, by_seed))
            continue
        rows.append(problems.run(S("what_run", run=run_id(main)), _row, main, extra, S, by_seed,
                                 default=lambda it, m=main: broken_row(m, it["reason"], S)))
    rows.sort(key=lambda w: (WORKLOADS.index(w.workload) if w.workload in WORKLOADS else 9,
                             w.device != "cpu", order_key(w.fw),
                             MODES.index(w.mode) if w.mode in MODES else 9, w.host or "",
                             version_key(w.version or "")))  # stable: --from order
    rows = name_versions(rows)  # "PaddlePaddle 3.2.2" where several versions ran (report/versions.py)
    rows = label_variants(rows)
    return [with_labels(w, multi_host) for w in rows]


def broken_row(r: Result, reason, S) -> Row:
    """A run the report could not read: shown as failed, with the reason."""
    error = {"type": "ReportError", "message": S("row_unreadable", reason=reason), "traceback": ""}
    shown = Result.from_dict({"_dir": r.dir, "_source": r.source, "_notebook": r.notebook, "error": error,
                              "framework": r.framework, "workload": r.workload, "mode": r.mode, "device": r.device,
                              "status": "failed"})
    return Row(shown, (), fw_name=framework_name(as_text(r.framework)))


def _row(r: Result, extra, S, by_seed=()) -> Row:
    return Row(r, tuple(extra), fw_name=framework_name(as_text(r.framework)),
               seeds=by_seed or ((r.params.get("seed"), (r, *extra)),), **_timing(r, extra, len(by_seed) > 1))


def run_rate(r: Result):
    """A run's samples/s as its recorder wrote it (speed.run_rate of its steady
    windows), or None where it holds no positive number."""
    v = fmt.num(r.samples_per_s)
    return v if v is not None and v > 0 else None


def _timing(r: Result, extra, seeded: bool = False) -> dict:
    """One estimator for every speed figure (frameval/speed.py): samples/s is
    the median over the row's counted runs (result.counts: repeats and seeds,
    never a check-failed one) of each run's rate, the statistic every interval
    resamples; seconds per steady epoch are a steady epoch's samples over that
    same rate, so the two never disagree. A range (slowest–fastest run) only
    over two runs or more. `steady_wall`: the measured steady epoch (its
    repeats' median), which only the compile cost reads beside the first epoch."""
    out = {"extra_failed": tuple(x for x in extra if x.status != "ok")}
    runs = [x for x in [r] + list(extra) if counts(x)] or [r]  # a check-failed row still shows its own figure
    rates = [v for v in (run_rate(x) for x in runs) if v is not None]
    n = speed.epoch_samples(r.epochs, r.timing.get("windows"), r.data.get("n_train"))
    walls = [] if seeded else [v for v in (fmt.num(x) for x in r.repeats) if v is not None]
    out["steady_wall"] = statistics.median(walls) if walls else fmt.num(r.steady_epoch_s)
    if len(rates) > 1:
        mid = statistics.median(rates)
        out.update(samples_per_s=mid, sps_lo=min(rates), sps_hi=max(rates), steady=speed.epoch_seconds(n, mid),
                   steady_lo=speed.epoch_seconds(n, max(rates)), steady_hi=speed.epoch_seconds(n, min(rates)),
                   steady_kind="repeats", n_repeats=len(rates), spread=div(max(rates) - min(rates), mid))
    else:
        sps = rates[0] if rates else None
        out.update(samples_per_s=sps, sps_lo=None, sps_hi=None, steady=speed.epoch_seconds(n, sps),
                   steady_lo=None, steady_hi=None, steady_kind="epochs", n_repeats=1, spread=None)
    out["noisy"] = out["spread"] is not None and out["spread"] > NOISY_SPREAD
    return out


# ------------------------------------------------------------------ labels
def with_labels(w: Row, multi_host) -> Row:
    """The row with its label (tables, findings) and its short form (chart axes)."""
    label = f"{w.fw_name} {w.mode}"
    if w.device != "cpu":
        label += f" ({w.device.upper()})"
    if multi_host and w.host:
        label += f" @{w.host}"
    if w.variant:
        label += f" [{w.variant}]"
    short = (f"{w.fw_name}\n{w.mode}" + (f"\n{w.device.upper()}" if w.device != "cpu" else "")
             + (f"\n{w.variant}" if w.variant else ""))
    return replace(w, label=label, short=short)


def _facts(w) -> dict:
    """What may tell two runs of the same framework and mode apart."""
    r = w.result
    out = {k: v for k, v in r.params.items() if k not in VARIANT_SKIP}
    for k, v in r.settings.items():
        out.setdefault(k, v)
    out["version"] = w.version
    out["n_train"] = r.data.get("n_train")
    out["threads"] = r.threads
    return out


def _short(t: str, n: int = 40) -> str:
    return t if len(t) <= n else t[:n - 1] + "…"


def _source_names(g) -> dict:
    names = {id(w): Path(w.result.source or "").name for w in g}
    if len(set(names.values())) < len(g):
        names = {id(w): w.result.source or "" for w in g}
    return names


def label_variants(rows) -> list:
    """The rows, where two of the same workload, framework, mode, device and
    machine are labelled by the parameters that differ (else by their result folder)."""
    groups: dict = {}
    for w in rows:
        groups.setdefault((w.workload, w.fw_name, w.mode, w.device, w.host or ""), []).append(w)
    named: dict = {}
    for g in groups.values():
        if len(g) < 2:
            continue
        facts = [_facts(w) for w in g]
        if any(len(w.seeds) > 1 for w in g):  # a row of several seeds is not told apart by one of them
            facts = [{k: v for k, v in f.items() if k != "seed"} for f in facts]
        keys = list(dict.fromkeys(k for f in facts for k in f))
        # a fact a row does not hold (a run that failed or was not offered has no settings read back)
        # tells nothing apart
        differ = [k for k in keys if len({fmt.value(f.get(k)) for f in facts if f.get(k) is not None}) > 1]
        sources = _source_names(g)
        parts = [[f"{k}={_short(fmt.value(f.get(k)))}" for k in differ] for f in facts]
        variants = [", ".join(p[:VARIANT_KEYS_SHOWN]) + (" …" if len(p) > VARIANT_KEYS_SHOWN else "") for p in parts]
        if not all(variants) or len(set(variants)) < len(g):
            variants = [(v + "; " if v else "") + (sources[id(w)] or w.id) for w, v in zip(g, variants)]
        seen: dict = {}
        for w, v, p in zip(g, variants, parts):
            n = seen[v] = seen.get(v, 0) + 1
            named[id(w)] = replace(w, variant=v + (f" #{n}" if n > 1 else ""), variant_all=", ".join(p))
    return [named.get(id(w), w) for w in rows]


def size_of(r: Result) -> tuple:
    """The work a run's windows were measured on: (training samples per epoch,
    batch size). Runs of two sizes are ranked apart, side by side."""
    return (fmt.num(r.data.get("n_train")), fmt.num(r.params.get("batch_size")))


def arithmetic(w) -> str:
    """The format a run computed in: "float32" (precision default or highest), or a
    mixed precision's ("bfloat16", "float16": nb/amp.py)."""
    return MIXED.get(str(w.result.params.get("precision") or "default"), "float32")


def emulated(w) -> bool:
    """A bfloat16 run on a CPU whose record names no bfloat16 units: its framework
    emulated the format in float32 arithmetic, so its speed says nothing of bfloat16 (#69)."""
    if w.device != "cpu" or arithmetic(w) != "bfloat16":
        return False
    isa = ((w.result.environment.get("machine") or {}).get("isa"))
    return isinstance(isa, list) and not any(f in isa for f in BF16_FLAGS)


def network(w) -> str:
    """The network a run trained where its parameters choose it (the LSTM workload's GRU,
    -p lstm.cell=gru: another function, another count); "" where the workload has one."""
    wl = WORKLOAD_BY_KEY.get(w.workload)
    if wl is None or wl.counts_for is None:
        return ""
    return "+".join(sorted(wl.counts_for(w.result.params)))


def rank_group(w) -> tuple:
    """The runs ranked against each other: one device, one size, one arithmetic
    (a bfloat16 run is set against its float32 twin in "Mixed precision", never ranked
    with float32 runs), one network (a GRU is set against its LSTM twin in "LSTM against
    GRU", never ranked with LSTM runs)."""
    return (w.device, w.size or (None, None), arithmetic(w), network(w))


def fastest_by_group(rows) -> dict:
    """{(device, size, arithmetic): the row with the most samples/s}. Speed is ranked by
    samples per second, never by seconds per epoch (runs may train different
    sample counts); a run whose numerical check failed is not a reference, nor is an
    emulated bfloat16 run."""
    best = {}
    for w in rows:
        if w.counted and w.samples_per_s is not None and not emulated(w):
            k = rank_group(w)
            if k not in best or w.samples_per_s > best[k].samples_per_s:
                best[k] = w
    return best


def best_of(w, best: dict):
    """The fastest row of w's own ranking group, or None."""
    return best.get(rank_group(w))


def speed_ratio(w, best):
    """Time per sample relative to the fastest run (1.00× = fastest), or None;
    None across devices or sizes, which are never ranked together."""
    if not w.ok or best is None or rank_group(w) != rank_group(best):
        return None
    return div(best.samples_per_s, w.samples_per_s)


def at_faster_mode(rows) -> list:
    """The rows to rank: where a framework ran both modes (same version,
    variant, machine, device and size), only its faster one."""
    def same(a, b):
        return a is not b and rank_group(a) == rank_group(b) and \
            all(getattr(a, k) == getattr(b, k) for k in ("fw", "version", "variant", "host", "workload"))
    out = []
    for w in rows:
        rivals = [x for x in rows if same(w, x) and x.mode != w.mode and x.counted and x.samples_per_s is not None]
        if w.samples_per_s is None or not any(x.samples_per_s > w.samples_per_s for x in rivals):
            out.append(w)
    return out


# ------------------------------------------------------------------ how far a ranking can be trusted
def window_rates(r: Result) -> list:
    """samples/s of each steady timing window (speed.steady; every epoch after
    the first, where an older result recorded no windows)."""
    return speed.rates(r.timing.get("windows") if isinstance(r.timing.get("windows"), list) else r.epochs)


def run_windows(w) -> list:
    """The row's runs (repeats folded in), each as its windows' samples/s."""
    return [rates for rates in (window_rates(x) for x in [w.result, *w.extra] if counts(x)) if rates]

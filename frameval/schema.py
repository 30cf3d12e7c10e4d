"""The files a run writes, in one place for their writers and their readers:
`result.json` (a run's record), `plan.json` (what was asked) and
`environments/<fw>.json` (where a framework's environment came from).

Writers build a record here and write `to_dict()`: the notebooks' recorder
(nb/record.py: `new_result`), the runner's failure record and corrupt-file
fallback (results.py: `failure_result`), the pipeline and the hand-runs folder
(`Plan`), the pipeline's environment files (`Environment`). Readers go through
`read_result` / `Plan.from_dict` / `Environment.from_dict`, which read every
older version without raising (a missing key gets its default, a key of the
wrong type its default too, an unknown key is kept); `frameval.result.Result`
is the report's typed view of a result on top of that.

Standard library only: the notebook kernels import it (numpy < 1.24, Python 3.10).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

# 1: before the check's second version (its "step" section), graph scope, threads
# and settings read back. 3: timing windows ("timing") and the machine's state
# over the run ("machine"). 4: one schema for every writer: a failed run's
# record and the corrupt-file fallback carry "schema" and every key a notebook
# writes (before, they held a few keys of their own); plan.json has the same
# keys whether the pipeline or the hand-runs folder wrote it. 5: evaluation
# points during training ("evaluation") and the time to the workload's target
# read from them ("time_to_target"); None in older records and where absent.
SCHEMA_VERSION = 5


def _typed(value, default):
    """`value` where it has the default's JSON type (any number for a number
    field, anything for a None default), else the default."""
    if default is None or value is None:
        return value
    if isinstance(default, bool):
        return value if isinstance(value, bool) else default
    if isinstance(default, (int, float)):
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else default
    return value if isinstance(value, type(default)) else default


class _Record:
    """from_dict (never raises; unknown keys kept in `extra`) and to_dict."""

    @classmethod
    def from_dict(cls, d):
        d = d if isinstance(d, dict) else {}
        known = {f.name for f in fields(cls)} - {"extra"}
        vals = {}
        for f in fields(cls):
            if f.name == "extra":
                continue
            default = f.default_factory() if callable(f.default_factory) else f.default
            value = d.get(f.name, default)
            accepts = f.metadata.get("accepts")  # a key whose type an older version wrote differently
            vals[f.name] = (value if isinstance(value, accepts) else default) if accepts else _typed(value, default)
        return cls(**vals, extra={k: v for k, v in d.items() if k not in known})

    def to_dict(self) -> dict:
        out = asdict(self)
        extra = out.pop("extra", {})
        return {**out, **extra}


# ------------------------------------------------------------------ result.json
@dataclass
class ResultRecord(_Record):
    """The keys every result.json has from its start (a notebook adds its
    workload's figures, the check, the timing ... as it runs: kept in `extra`)."""
    schema: int = SCHEMA_VERSION
    framework: str = ""
    framework_version: str | None = None
    workload: str = ""
    mode: str = ""
    device: str = "cpu"
    status: str = "running"
    error: dict | None = None
    params: dict = field(default_factory=dict)
    threads: int | None = None
    param_counts: dict = field(default_factory=dict)
    epochs: list = field(default_factory=list)
    compiled: bool | None = None
    compile_note: str = ""
    graph_scope: dict | None = None
    threads_effective: dict | None = None
    settings: dict = field(default_factory=dict)
    settings_source: dict = field(default_factory=dict)
    data: dict = field(default_factory=dict)
    data_placement: str | None = None
    notes: list = field(default_factory=list)
    workarounds: list = field(default_factory=list)
    first_epoch_s: float | None = None
    steady_epoch_s: float | None = None
    steady_min_s: float | None = None
    steady_max_s: float | None = None
    samples_per_s: float | None = None
    peak_rss_mb: float | None = None
    rss_after_import_mb: float | None = None
    memory: dict = field(default_factory=dict)
    peak_device_mb: float | None = None
    peak_device_driver_mb: float | None = None
    evaluation: dict | None = None
    time_to_target: dict | None = None
    environment: dict = field(default_factory=dict)
    started: str | None = None
    extra: dict = field(default_factory=dict)


def new_result(framework: str, workload: str, mode: str, device: str, params: dict, threads: int,
               environment: dict, started: str) -> dict:
    """A notebook's result.json at its start (nb/record.py's Recorder)."""
    return ResultRecord(framework=framework, workload=workload, mode=mode, device=device, params=params,
                        threads=threads, environment=environment, started=started).to_dict()


def failure_result(framework, workload, mode, device, params: dict, error: dict, partial: dict | None = None) -> dict:
    """A run that failed (or whose file could not be read), keeping whatever
    `partial` measured; the same keys as a notebook's record."""
    base = read_result(partial or {})
    base.update({"schema": SCHEMA_VERSION, "framework": framework, "workload": workload, "mode": mode,
                 "device": device, "status": "failed", "error": error,
                 "params": base.get("params") or dict(params or {})})
    return base


def read_result(d) -> dict:
    """Any version's result dict -> the keys of this version (defaults where
    missing or of the wrong type; every other key kept). Never raises. A
    record without a schema (older failure records) reads as version 1."""
    d = d if isinstance(d, dict) else {}
    out = ResultRecord.from_dict(d).to_dict()
    out["schema"] = d.get("schema") if isinstance(d.get("schema"), int) and not isinstance(d.get("schema"), bool) else 1
    if "status" not in d:  # an older record without one is not "running": the report decides from its fields
        out["status"] = None
    return out


# ------------------------------------------------------------------ plan.json
@dataclass
class Plan(_Record):
    """What was asked: written by the pipeline and by the hand-runs folder."""
    command: str = ""
    profile: str = ""
    frameworks: list = field(default_factory=list)
    datasets: list = field(default_factory=list)
    framework_pins: list = field(default_factory=list)
    workloads: list = field(default_factory=list)
    modes: list = field(default_factory=list)
    device: str = ""
    # the -p values as given; a dict before version 4 ({"epochs": 3}), kept as written
    overrides: list = field(default_factory=list, metadata={"accepts": (list, dict)})
    repeats: int = 1
    seeds: list = field(default_factory=list)  # --seeds (none: each notebook's own seed)
    profile_notes: list = field(default_factory=list)
    started: str = ""
    frameval_version: str | None = None
    git_commit: str | None = None
    runs: list = field(default_factory=list)
    hand_runs: bool = False
    extra: dict = field(default_factory=dict)


# ------------------------------------------------------------------ environments/<fw>.json
@dataclass
class Environment(_Record):
    """Where a framework's environment came from (the pipeline writes one per
    framework; the report's environment section and reproduce commands read it).
    What the environment reports of itself (versions, installer, the user's
    interpreter ...) rides in `extra`, flat in the file."""
    framework: str = ""
    fw_key: str = ""
    spec_name: str = ""
    spec_path: str = ""
    spec_text: str = ""
    key: str = ""
    backend: str = ""
    python: str = ""
    prefix: str = ""
    freeze: str = ""
    kernel: str = ""
    extra: dict = field(default_factory=dict)

"""One run's `result.json`, typed once: `Result`, its fields declared here and
nowhere else, with one reader and one writer of the file.

- Writers: the notebooks' recorder starts a record with `new_result` and writes
  it with `save` (frameval/nb/record.py); the runner's store
  (frameval/result/store.py) reads a record with `load`, adds what only it
  knows, and writes it back with `save`; a run that failed gets `failure_result`.
- Readers: `load(path)` (a corrupt or half-written file becomes a visible
  failed record, never a crash), then `Result.from_dict(d)` (or `Result.load`),
  the typed view the report and the comparison read.

Each field says how a reader reads it (`read`: any JSON value -> the field's
type, a wrong type becomes None, {} or []) and, for the keys every result.json
has from its start, the value a new record starts with (`start`). Notebooks of
an older schema wrote fewer keys, and a file may be hand-edited or cut short:
`validate` brings any version's dict to this version's keys (a missing key, or
one of the wrong type, gets its start value; unknown keys are kept), and
`from_dict` never raises. A number is kept as recorded: a finite int or float,
or the text of a non-finite one ("nan", "inf": JSON has none, so the recorder
writes them as text); `number()` reads it as a finite float or None. The
original dict stays in `Result.raw` for the keys not worth a field (a
workload's own figures: test_acc, val_rmse, model_bytes ...; read them with
`Result.metric`).

Standard library only (and the catalog and files.py, which are): the notebook
kernels import it (numpy + stdlib, Python 3.8+).
"""
from __future__ import annotations

import copy
import math
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Union

from ..catalog import WORKLOAD_BY_KEY, final_value
from ..files import atomic_write_json, read_json

# 1: before the check's second version (its "step" section), graph scope, threads
# and settings read back. 3: timing windows ("timing") and the machine's state
# over the run ("machine"). 4: one schema for every writer: a failed run's
# record and the corrupt-file fallback carry "schema" and every key a notebook
# writes (before, they held a few keys of their own); plan.json has the same
# keys whether the pipeline or the hand-runs folder wrote it. 5: evaluation
# points during training ("evaluation") and the time to the workload's target
# read from them ("time_to_target"); None in older records and where absent.
SCHEMA_VERSION = 5

# The statuses of a run that finished and measured; "check_failed": its numerical check failed.
COMPLETED = ("ok", "check_failed")
# A run its framework declined (frameworks/contract.py: NotOffered, e.g. an AMP with no bfloat16 on
# the device): a result, with the framework's own error as its evidence, never a silent float32 run.
NOT_OFFERED = "not_offered"
CORRUPT = "CorruptResult"  # the error type of a file that could not be read as a result
# Where results.load_runs found a result: in the dict it returns, never in the file.
LOCATED = ("_dir", "_source", "_notebook")


def counts(r) -> bool:
    """Whether a run's figures count: into its row's medians over repeats and
    seeds, into a ranking and into either side of `compare`. One rule for speed
    and quality alike: a run whose numerical check failed computed another
    function, so it is shown (flagged) but counted in neither (issue #49)."""
    return getattr(r, "status", None) == "ok"


# A number as recorded: int or float, the text of a non-finite one, or None.
Recorded = Union[int, float, str, None]


# ------------------------------------------------------------------ reading values
def number(v) -> float | None:
    """A recorded value as a finite float, or None: not measured (None), the
    text of a non-finite number ("nan", "inf": JSON has none, so the recorder
    writes them as text), a bool, or anything else that is not a number."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        x = float(v)
    except OverflowError:  # an integer beyond any float
        return None
    return x if math.isfinite(x) else None


def as_dict(v) -> dict:
    """A value that should be a JSON object: itself, or {} when it is not one."""
    return v if isinstance(v, dict) else {}


def as_list(v) -> list:
    """A value that should be a JSON array: itself, or [] when it is not one."""
    return v if isinstance(v, list) else []


def _recorded(v) -> Recorded:
    """A number field: a number, or text (a non-finite number as the recorder writes it)."""
    return v if isinstance(v, (int, float, str)) and not isinstance(v, bool) else None


def _text(v) -> str | None:
    """A text field; a number there (a version written as 2.1) is its text."""
    if isinstance(v, str):
        return v
    return str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _integer(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _dict_or_none(v) -> dict | None:
    """A record whose absence means something (no check ran, no graph scope recorded)."""
    return v if isinstance(v, dict) else None


def _flag(v) -> bool | None:
    return v if isinstance(v, bool) else None


def _true(v) -> bool:
    return v is True


def _field(read, start=MISSING, key: str = ""):
    """A field read from the result's `key` (default: the field's name) by `read`,
    which turns any JSON value into the field's type; its default is read(None).
    `start`: the value a new record starts with, for the keys every result.json
    has from its start (MISSING: a key a notebook or the runner adds later)."""
    return field(default_factory=lambda: read(None), metadata={"read": read, "key": key, "start": start})


# ------------------------------------------------------------------ the record
@dataclass(frozen=True)
class Result:
    """One result.json. The fields with a start value come first, in the order
    a new record writes them (the recorder's `new_result`); then the keys the
    notebook adds as it runs, `reused` (the runner), and dir, source, notebook
    (where store.load_runs found it, not in the file)."""
    # what ran (the keys of a new record, in the file's order)
    schema: int | None = _field(_integer, SCHEMA_VERSION)
    framework: str | None = _field(_text, "")
    framework_version: str | None = _field(_text, None)
    workload: str | None = _field(_text, "")
    mode: str | None = _field(_text, "")
    device: str | None = _field(_text, "cpu")
    status: str | None = _field(_text, "running")  # "ok", "check_failed", "failed", "not_offered" (the runner: also "timeout" ...)
    error: dict = _field(as_dict, None)         # {"type", "message", "traceback"}
    params: dict = _field(as_dict, {})          # the notebook's parameters
    threads: Recorded = _field(_recorded, None)  # the threads requested
    param_counts: dict = _field(as_dict, {})
    epochs: list = _field(as_list, [])          # [{"epoch", "samples", "seconds", <the workload's metrics>}]
    compiled: bool | None = _field(_flag, None)
    compile_note: str | None = _field(_text, "")
    graph_scope: dict | None = _field(_dict_or_none, None)        # {"forward", "backward", "update", "graphs", ...}
    threads_effective: dict | None = _field(_dict_or_none, None)  # {"intra", "inter", "how", "missing"}
    settings: dict = _field(as_dict, {})
    settings_source: dict = _field(as_dict, {})  # {setting: "read" (from the framework) or "declared"}
    data: dict = _field(as_dict, {})            # {"n_train", "source", "sha256" ...}
    data_placement: str | None = _field(_text, None)
    notes: list = _field(as_list, [])
    workarounds: list = _field(as_list, [])
    first_epoch_s: Recorded = _field(_recorded, None)
    steady_epoch_s: Recorded = _field(_recorded, None)
    steady_min_s: Recorded = _field(_recorded, None)
    steady_max_s: Recorded = _field(_recorded, None)
    samples_per_s: Recorded = _field(_recorded, None)
    peak_rss_mb: Recorded = _field(_recorded, None)
    rss_after_import_mb: Recorded = _field(_recorded, None)
    memory: dict = _field(as_dict, {})          # the levels: after_import_mb ... training_peak_mb, method
    peak_device_mb: Recorded = _field(_recorded, None)
    peak_device_driver_mb: Recorded = _field(_recorded, None)
    evaluation: dict | None = _field(_dict_or_none, None)      # evaluation points during training (schema 5)
    time_to_target: dict | None = _field(_dict_or_none, None)  # read from them (schema 5)
    environment: dict = _field(as_dict, {})     # {"python", "numpy", "machine": {...}, "gpu" ...}
    started: str | None = _field(_text, None)
    # what the notebook adds as it runs
    param_count_note: str | None = _field(_text)
    cpu_cores: Recorded = _field(_recorded)      # CPU use in the steady epochs: process CPU time over wall time (#70)
    serving: dict | None = _field(_dict_or_none)  # saved for deployment, loaded in a fresh process, served (nb/serving.py)
    resume: dict | None = _field(_dict_or_none)  # -p resume_check: checkpoint after epoch k, resumed in a second kernel (nb/resume.py)
    repeats: list = _field(as_list)             # steady epoch seconds of every repeat (the runner merges them)
    timing: dict = _field(as_dict)              # {"window", "windows": [{"epoch", "steps", "samples", "seconds"}],
    #                                             "steady_windows", "outlier_windows", "min_windows"}
    machine: dict = _field(as_dict)             # {"cores", "load_before", "load_after", "steal_s", "steal_fraction"}
    check: dict | None = _field(_dict_or_none)  # the numerical check (frameval/nb/check.py)
    check_amp: dict | None = _field(_dict_or_none)  # its second pass under the run's AMP (nb/amp.py), mixed runs only
    amp: dict = _field(as_dict)                 # {"precision", "format", "mechanism", "level", "float32"} (nb/amp.py)
    determinism: dict = _field(as_dict)         # {switch: value as the run had it} (frameval/nb/determinism.py)
    math_mode: dict = _field(as_dict)           # {"precision", "effective", "switches", "env"} (frameval/nb/precision.py)
    energy: dict = _field(as_dict)              # {"available", "idle_w", "epoch_j", "epoch_above_idle_j", ...} (GPU: NVML)
    grids: list = _field(as_list)               # the DCGAN's grid images, relative to `dir`
    series: dict = _field(as_dict)              # the LSTM's {"val_true", "val_pred"}
    # what the runner adds
    reused: bool = _field(_true)                # the runner reused an earlier run's result
    # where it was found (store.load_runs), not in the file
    dir: str | None = _field(_text, key="_dir")
    source: str | None = _field(_text, key="_source")
    notebook: str | None = _field(_text, key="_notebook")
    raw: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d) -> "Result":
        """The record of a result dict (anything else reads as an empty one); never raises."""
        d = d if isinstance(d, dict) else {}
        return cls(**{f.name: f.metadata["read"](d.get(f.metadata["key"] or f.name))
                      for f in fields(cls) if "read" in f.metadata}, raw=d)

    @classmethod
    def load(cls, path) -> "Result":
        """The result file at `path` (`load`: a corrupt one reads as a failed record)."""
        return cls.from_dict(load(path))

    def save(self, path) -> Path:
        """Write the record back (`save`), without where it was found."""
        return save(path, {k: v for k, v in self.raw.items() if k not in LOCATED})

    @property
    def host(self) -> str | None:
        """The machine's host name, as recorded."""
        h = as_dict(self.environment.get("machine")).get("hostname")
        return None if h is None or h == "" else str(h)

    def memory_parts(self) -> dict:
        """The run's resident memory in parts (#67), each None where not recorded:
        "import" (after the framework's import), "check" (what the numerical check and
        its compiles left resident: after the check over after the data), "training"
        (the training peak over the level just before training) and "reset" (whether
        that peak was read after a reset of the high-water mark; False: the process
        peak over that level, an upper bound). Older results are read by their method:
        before #67 a run without the reset stored its increment as training_peak_mb."""
        m = self.memory
        num = lambda k: m.get(k) if isinstance(m.get(k), (int, float)) and not isinstance(m.get(k), bool) else None  # noqa: E731
        before, peak = num("before_training_mb"), num("training_peak_mb")
        reset = m.get("method") == "clear_refs"
        training = num("training_increment_mb") if "training_increment_mb" in m else (
            num("increment_without_reset_mb") if "increment_without_reset_mb" in m else (
                (peak - before if peak is not None and before is not None else None) if reset else peak))
        after_data, after_check = num("after_data_mb"), num("after_check_mb")
        return {"import": num("after_import_mb"),
                "check": after_check - after_data if after_check is not None and after_data is not None else None,
                "training": training, "reset": reset}

    def metric(self, key: str):
        """A workload's figure (test_acc, val_rmse, gen_loss ...): the top-level
        value, else the last epoch's (catalog.final_value), as recorded."""
        return final_value(self.raw, key)

    def quality(self):
        """The workload's quality figure (the catalog's metric), or None."""
        wl = WORKLOAD_BY_KEY.get(self.workload)
        return wl.final(self.raw) if wl else None


# ------------------------------------------------------------------ the file as a dict
def _start_fields() -> list:
    """[(key, start value)] of the keys every result.json has from its start, in the file's order."""
    return [(f.name, f.metadata["start"]) for f in fields(Result) if f.metadata.get("start", MISSING) is not MISSING]


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


def new_result(framework: str, workload: str, mode: str, device: str, params: dict, threads: int,
               environment: dict, started: str) -> dict:
    """A notebook's result.json at its start (nb/record.py's Recorder): every start key."""
    out = copy.deepcopy(dict(_start_fields()))
    out.update(framework=framework, workload=workload, mode=mode, device=device, params=params,
               threads=threads, environment=environment, started=started)
    return out


def validate(d) -> dict:
    """Any version's result dict -> the keys of this version (start values
    where missing or of the wrong type; every other key kept), a copy. Never
    raises. A record without a schema (older failure records) reads as version 1."""
    d = d if isinstance(d, dict) else {}
    out = {k: _typed(d.get(k, start), start) for k, start in _start_fields()}
    out = copy.deepcopy({**out, **{k: v for k, v in d.items() if k not in out}})
    out["schema"] = d.get("schema") if isinstance(d.get("schema"), int) and not isinstance(d.get("schema"), bool) else 1
    if "status" not in d:  # an older record without one is not "running": the report decides from its fields
        out["status"] = None
    return out


def failure_result(framework, workload, mode, device, params: dict, error: dict, partial: dict | None = None) -> dict:
    """A run that failed (or whose file could not be read), keeping whatever
    `partial` measured; the same keys as a notebook's record."""
    base = validate(partial or {})
    base.update({"schema": SCHEMA_VERSION, "framework": framework, "workload": workload, "mode": mode,
                 "device": device, "status": NOT_OFFERED if error.get("type") == "NotOffered" else "failed",
                 "error": error,
                 "params": base.get("params") or dict(params or {})})
    return base


def load(path) -> dict:
    """One result.json as its dict; a corrupt one (not JSON, not a frameval
    result) is returned as a failed record, named from its run folder."""
    path = Path(path)
    try:
        r = read_json(path)
        if not isinstance(r, dict) or "framework" not in r or "workload" not in r:
            raise ValueError("not a frameval result (no framework/workload)")
        return r
    except (OSError, ValueError) as e:
        parts = path.parent.relative_to(path.parents[2]).parts if len(path.parents) > 2 else ("?", "?")
        fw = parts[0]
        wl, _, mode = parts[1].partition("-") if len(parts) > 1 else ("?", "", "?")
        return failure_result(fw, wl, mode.split("-")[0] or "?", None, {},
                              {"type": CORRUPT, "message": f"{path.name} unreadable: {e}", "traceback": ""})


def save(path, record: dict) -> Path:
    """Write a result dict to `path` atomically, flushed to disk (results must
    survive a machine that goes down): the one writer of result.json."""
    return atomic_write_json(path, record)

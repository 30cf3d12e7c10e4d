"""One run's `result.json`, as its readers (the report, the comparison) see it:
`Result.from_dict(d)`, a typed record.

The notebooks write the file (frameval/nb/record.py, `Recorder`); notebooks of
an older schema wrote fewer keys, and a file may be hand-edited or cut short.
So `from_dict` never raises: a field of the wrong type becomes None (or an
empty dict or list), and a corrupt file still becomes a failed entry in the
report, never a crash. A number is kept as recorded: a finite int or float, or
the text of a non-finite one ("nan", "inf": JSON has none, so the recorder
writes them as text), so that the report shows what was measured; `number()`
reads it as a finite float or None. The original dict stays in `Result.raw`
for the keys not worth a field (a workload's own figures: test_acc, val_rmse,
model_bytes ...; read them with `Result.metric`).

Standard library only (and the catalog, which is).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Union

from .catalog import WORKLOAD_BY_KEY, final_value

# The version every writer writes, and what each version changed: frameval/schema.py.
from .schema import SCHEMA_VERSION  # noqa: E402,F401 - the readers' name for it

# The statuses of a run that finished and measured; "check_failed": its numerical check failed.
COMPLETED = ("ok", "check_failed")


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


def _field(read, key: str = ""):
    """A field read from the result's `key` (default: the field's name) by `read`,
    which turns any JSON value into the field's type; its default is read(None)."""
    return field(default_factory=lambda: read(None), metadata={"read": read, "key": key})


# ------------------------------------------------------------------ the record
@dataclass(frozen=True)
class Result:
    """One result.json (frameval/nb/record.py writes every key here except
    `reused`, which the runner adds, and dir, source, notebook: where
    results.load_runs found it)."""
    # what ran
    schema: int | None = _field(_integer)
    framework: str | None = _field(_text)
    framework_version: str | None = _field(_text)
    workload: str | None = _field(_text)
    mode: str | None = _field(_text)
    device: str | None = _field(_text)
    status: str | None = _field(_text)          # "ok", "check_failed", "failed" (the runner: also "timeout" ...)
    error: dict = _field(as_dict)               # {"type", "message", "traceback"}
    params: dict = _field(as_dict)              # the notebook's parameters
    threads: Recorded = _field(_recorded)       # the threads requested
    settings: dict = _field(as_dict)
    settings_source: dict = _field(as_dict)     # {setting: "read" (from the framework) or "declared"}
    data: dict = _field(as_dict)                # {"n_train", "source", "sha256" ...}
    data_placement: str | None = _field(_text)
    environment: dict = _field(as_dict)         # {"python", "numpy", "machine": {...}, "gpu" ...}
    reused: bool = _field(_true)                # the runner reused an earlier run's result
    # the model and how it ran
    param_counts: dict = _field(as_dict)
    param_count_note: str | None = _field(_text)
    compiled: bool | None = _field(_flag)
    compile_note: str | None = _field(_text)
    graph_scope: dict | None = _field(_dict_or_none)        # {"forward", "backward", "update", "graphs", ...}
    threads_effective: dict | None = _field(_dict_or_none)  # {"intra", "inter", "how", "missing"}
    workarounds: list = _field(as_list)
    notes: list = _field(as_list)
    # time
    epochs: list = _field(as_list)              # [{"epoch", "samples", "seconds", <the workload's metrics>}]
    first_epoch_s: Recorded = _field(_recorded)
    steady_epoch_s: Recorded = _field(_recorded)
    steady_min_s: Recorded = _field(_recorded)
    steady_max_s: Recorded = _field(_recorded)
    samples_per_s: Recorded = _field(_recorded)
    repeats: list = _field(as_list)             # steady epoch seconds of every repeat (the runner merges them)
    timing: dict = _field(as_dict)              # {"window", "windows": [{"epoch", "steps", "samples", "seconds"}],
    #                                             "steady_windows", "outlier_windows", "min_windows"}
    machine: dict = _field(as_dict)             # {"cores", "load_before", "load_after", "steal_s", "steal_fraction"}
    # memory
    peak_rss_mb: Recorded = _field(_recorded)
    rss_after_import_mb: Recorded = _field(_recorded)
    peak_device_mb: Recorded = _field(_recorded)
    peak_device_driver_mb: Recorded = _field(_recorded)
    memory: dict = _field(as_dict)              # the levels: after_import_mb ... training_peak_mb, method
    # the numerical check, the pictures
    check: dict | None = _field(_dict_or_none)
    determinism: dict = _field(as_dict)         # {switch: value as the run had it} (frameval/nb/determinism.py)
    math_mode: dict = _field(as_dict)           # {"precision", "effective", "switches", "env"} (frameval/nb/precision.py)
    grids: list = _field(as_list)               # the DCGAN's grid images, relative to `dir`
    series: dict = _field(as_dict)              # the LSTM's {"val_true", "val_pred"}
    # where it was found (results.load_runs), not in the file
    dir: str | None = _field(_text, "_dir")
    source: str | None = _field(_text, "_source")
    notebook: str | None = _field(_text, "_notebook")
    raw: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d) -> "Result":
        """The record of a result dict (anything else reads as an empty one); never raises."""
        d = d if isinstance(d, dict) else {}
        return cls(**{f.name: f.metadata["read"](d.get(f.metadata["key"] or f.name))
                      for f in fields(cls) if "read" in f.metadata}, raw=d)

    @property
    def host(self) -> str | None:
        """The machine's host name, as recorded."""
        h = as_dict(self.environment.get("machine")).get("hostname")
        return None if h is None or h == "" else str(h)

    def metric(self, key: str):
        """A workload's figure (test_acc, val_rmse, gen_loss ...): the top-level
        value, else the last epoch's (catalog.final_value), as recorded."""
        return final_value(self.raw, key)

    def quality(self):
        """The workload's quality figure (the catalog's metric), or None."""
        wl = WORKLOAD_BY_KEY.get(self.workload)
        return wl.final(self.raw) if wl else None

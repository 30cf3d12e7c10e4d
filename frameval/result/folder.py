"""The output folder's other records, read as tolerantly as a result
(frameval/result/__init__.py): `plan.json` (what was asked) and
`environments/<fw>.json` (where a framework's environment came from).

Writers build a record here and write `to_dict()`: the pipeline and the
hand-runs folder (`Plan`; nb/record.py), the pipeline's environment files
(`Environment`). Readers go through `Plan.from_dict` / `Environment.from_dict`,
which read every older version without raising (a missing key gets its
default, a key of the wrong type its default too, an unknown key is kept).

Standard library only: the notebook kernels import it (numpy + stdlib, Python 3.8+).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from . import _typed


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

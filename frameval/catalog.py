"""The one catalog: what the matrix is made of. Framework records (display
name, aliases, pip packages, kernel name, notes page: each read from its folder
under frameworks/) and Workload records
(parameters, quality metric and its direction, the spec's parameter counts),
the modes, devices, the numerical check's parts, and the profiles that size a run. Every table that names a
framework or a workload reads from here.

Standard library only: the runner reads it before its own environment exists,
and `frameval.nb` reads it inside the framework environments.

A profile only overrides notebook parameters; the notebooks' own defaults are
the spec's full sizes, so `full` overrides nothing.
"""
from __future__ import annotations

from . import frameworks as _frameworks
from . import workloads as _workloads
from .workloads import base as _base
from .workloads import datasets as _datasets


# The workload records live one per module in frameval/workloads/ (issue #36);
# these names stay for the modules that read the catalog.
Quality, Workload, final_value = _base.Quality, _base.Workload, _base.final_value


# One folder per framework under frameval/frameworks/ (issue #51), in the
# registry's order: the seeds' six, then JAX (Flax + optax), the seventh.
Framework = _frameworks.Framework
FRAMEWORK_RECORDS = _frameworks.records()
BY_KEY = {f.key: f for f in FRAMEWORK_RECORDS}
FRAMEWORKS = tuple(f.key for f in FRAMEWORK_RECORDS)
# The LeNet notebooks that train through the framework's high-level API when
# `api = "high"` (docs/high-level-api.md): every framework that has one.
HIGH_API_NOTEBOOKS = tuple(f.key for f in FRAMEWORK_RECORDS if f.high_api)
APIS = ("basic", "high")
DISPLAY_NAMES = {f.key: f.display for f in FRAMEWORK_RECORDS}
ALIASES = {a: f.key for f in FRAMEWORK_RECORDS for a in f.aliases}

MODES = ("graph", "eager")
# -p precision=: the framework's float32 defaults, or full float32 throughout (frameval/nb/precision.py);
# or mixed precision (#69, frameval/nb/amp.py): float32 weights and optimizer state, compute in bfloat16
# or float16 through the framework's own AMP
PRECISIONS = ("default", "highest", "bf16", "fp16")
MIXED = {"bf16": "bfloat16", "fp16": "float16"}
DEVICES = ("cpu", "gpu")
# What a device can take whatever the framework: float16 AMP is a GPU's (its loss scaling and
# tensor cores); no framework here has a float16 AMP for the CPU.
DEVICE_PRECISIONS = {"cpu": ("default", "highest", "bf16"), "gpu": PRECISIONS}

# The parameters every notebook of a workload declares (frameval/workloads/base.py).
COMMON_PARAMS = _base.COMMON_PARAMS
WORKLOAD_RECORDS = tuple(_workloads.REGISTRY[k] for k in _workloads.BUILT_IN)
# The registry itself (the same dict): a workload registered later is found too.
WORKLOAD_BY_KEY = _workloads.REGISTRY

# The sizes of the data sets the workloads train on, known before any cache is
# prepared (the runner checks parameter combinations against them before it
# builds anything; a test compares them with the prepared caches).
MNIST_SIZES = _datasets.MNIST_SIZES
SERIES_POINTS = _datasets.SERIES_POINTS
SERIES_TRAIN_FRACTION = _datasets.SERIES_TRAIN_FRACTION

# The parts of the numerical check (result["check"], written by
# frameval/nb/check.py), in the order the check prints them and the report shows them.
CHECK_SECTIONS = ("forward", "losses", "grads", "update", "running")
# The check before its second version (one optimizer step where "update" now
# takes k) wrote "step"; the report still reads it in results of that time.
LEGACY_CHECK_SECTIONS = ("step",)
# What a reader of any result looks for, in the report's column order.
CHECK_SECTIONS_READ = CHECK_SECTIONS[:3] + LEGACY_CHECK_SECTIONS + CHECK_SECTIONS[3:]
WORKLOADS = tuple(w.key for w in WORKLOAD_RECORDS)
# The default matrix's workloads (--workloads left out, or "default"); "all" adds
# those a record keeps out of it (its `default=False`: the GPT).
DEFAULT_WORKLOADS = tuple(w.key for w in WORKLOAD_RECORDS if w.default)
WORKLOAD_PARAMS = {w.key: w.params for w in WORKLOAD_RECORDS}
SPEC_PARAM_COUNTS = {w.key: w.param_counts for w in WORKLOAD_RECORDS}

# Quick: the whole default matrix (7 frameworks x 3 workloads, graph mode) in
# under ten minutes on a 2-core CPU, with equal work in every framework (the
# same samples, batch and epochs) and quality figures that mean something:
# LeNet on all 4,000 embedded training digits for 5 epochs (>= 95% test
# accuracy), the LSTM for 15 epochs (validation R^2 0.93; 0.96 at 20). The
# DCGAN trains 2 epochs of 160 samples in 5 steps of 32: the first epoch carries
# the compile, the second's five steps are its five steady timing windows (every
# speed figure rests on at least five; at 2 steps of 64 it rested on one epoch
# of 2). MegEngine, the slowest here, took ~13 s a step of 64 on 2 cores.
# Enough to time it, far from enough to
# draw digits (that takes about an epoch of full MNIST: the full profile, on a
# GPU). Measured idle with all seven: 9 min 47 s with the DCGAN at 3 epochs and
# the LSTM at 20, too close to the target; these sizes leave a margin.
# Each workload's sizes per profile live in its module (frameval/workloads/).
PROFILES = {prof: {w.key: {**{k: v for k, v in _base.COMMON_PROFILES[prof].items() if k in w.params},
                            **w.profiles.get(prof, {})} for w in WORKLOAD_RECORDS}
            for prof in ("quick", "full")}
# The default --timeout per profile. A quick run takes seconds to minutes, so
# 30 minutes only ever catches a hang. A full run's length spans a factor of
# 40 between frameworks: TensorFlow's full DCGAN (50 epochs of 160 s) is about
# 2 h 15 min on this 2-core CPU and MegEngine's would be days, so the full
# profile has no default limit (None); --timeout sets one. A 6-epoch DCGAN
# killed at 30 minutes, after 4 epochs, is how this was found.
PROFILE_TIMEOUT_S = {"quick": 1800.0, "full": None}


def not_offered(framework: str, params: dict) -> str | None:
    """The line for a precision or mode the framework's record does not declare on the
    run's device (Framework.offers, #68), or None. The runner says it before anything
    runs (plan.py); a notebook opened by hand stops at its parameters with it."""
    rec = BY_KEY.get(framework)
    device = params.get("device") or "cpu"
    p = params.get("precision")
    if p in PRECISIONS and p not in DEVICE_PRECISIONS.get(device, PRECISIONS):
        return (f"precision={p}: the {device.upper()} does not take it in any framework (mixed float16 needs a GPU; "
                f"the {device.upper()} takes {', '.join(DEVICE_PRECISIONS[device])})")
    for axis in ("precision", "mode"):
        v = params.get(axis)
        if rec is None or v is None:
            continue
        has = rec.offered(axis, device)
        if v not in has:
            offers = ", ".join(has) if has else "nothing"
            return (f"{axis}={v}: {rec.display} does not offer it on the {device.upper()} (it declares {offers}: "
                    f"frameval/frameworks/{framework}/__init__.py, offers)")
    return None


def canonical_framework(name: str) -> str:
    return ALIASES.get(name.lower(), name.lower())


def framework_name(fw: str) -> str:
    """The display name, or the key itself for a framework the catalog lacks."""
    return DISPLAY_NAMES.get(fw, fw)


def order_key(fw: str) -> tuple:
    """Report order: the registry's frameworks in their order, then any other."""
    return (FRAMEWORKS.index(fw) if fw in FRAMEWORKS else len(FRAMEWORKS), fw)

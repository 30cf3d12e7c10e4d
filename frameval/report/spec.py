"""The facts the report audits against (from docs/workloads.md). The lists,
names, packages and the spec's parameter counts live in `frameval/catalog.py`;
this module adds only what the audit needs besides (settings, count aliases)."""
from __future__ import annotations

from ..catalog import FRAMEWORKS as _DEFAULT
from ..catalog import LSTM_TWO_BIAS_COUNT, MODES, OPT_IN_FRAMEWORKS, WORKLOADS  # noqa: F401 - the report's names
from ..catalog import SPEC_PARAM_COUNTS as PARAM_COUNTS
from ..catalog import framework_name, order_key  # noqa: F401 - the report's names

# Report order: the default matrix's frameworks, then the opt-in ones.
FRAMEWORKS = _DEFAULT + OPT_IN_FRAMEWORKS
# Counts that differ from the spec for a structural reason, not a mismatch.
STRUCTURAL = {("lstm", "lstm", LSTM_TWO_BIAS_COUNT): "two_bias"}
# Where a network's result key is spelled differently by a notebook.
PARAM_ALIASES = {"generator": ("generator", "gen", "g", "netg"), "discriminator": ("discriminator", "disc", "d", "netd"),
                 "lenet": ("lenet", "model", "total"), "lstm": ("lstm", "model", "total")}

# Full-run values from the spec (shown in the audit's "spec" row).
SPEC_SETTINGS = {
    "lenet": {"batch_size": 64, "lr": 1e-3, "optimizer": "Adam", "betas": [0.9, 0.999], "adam_eps": 1e-8,
              "dtype": "float32", "epochs": 5},
    "dcgan": {"batch_size": 256, "lr": 1e-4, "optimizer": "Adam", "betas": [0.9, 0.999], "adam_eps": 1e-8,
              "dtype": "float32", "epochs": 50, "leaky_relu": 0.2, "bn_momentum": 0.9, "bn_eps": 1e-5,
              "dropout": 0.3, "noise_dim": 100},
    "lstm": {"batch_size": 32, "lr": 1e-3, "optimizer": "Adam", "betas": [0.9, 0.999], "adam_eps": 1e-8,
             "dtype": "float32", "epochs": 20, "window": 20, "hidden": 32},
}


def match_counts(workload: str, counts: dict) -> dict:
    """{spec network: recorded count or None} for a result's `param_counts`."""
    spec = PARAM_COUNTS.get(workload, {})
    counts = {str(k).lower(): v for k, v in (counts or {}).items()}
    out = {}
    for net in spec:
        val = None
        for alias in PARAM_ALIASES.get(net, (net,)):
            if alias in counts:
                val = counts[alias]
                break
        if val is None and len(spec) == 1 and len(counts) == 1:
            val = next(iter(counts.values()))
        out[net] = val
    return out


def audit_count(workload: str, net: str, value) -> str:
    """'ok', 'structural' (explained), 'mismatch' or 'missing'."""
    expected = PARAM_COUNTS.get(workload, {}).get(net)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value or value in (float("inf"), float("-inf")):
        return "missing"
    if int(value) == expected:
        return "ok"
    if (workload, net, int(value)) in STRUCTURAL:
        return "structural"
    return "mismatch"

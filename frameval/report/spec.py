"""The facts the report audits against (from docs/workloads.md), read from
the workload records (frameval/workloads/: the spec's parameter counts, its
settings, count aliases, structural differences) and the catalog (lists,
names, packages)."""
from __future__ import annotations

from .. import workloads
from ..catalog import MODES, WORKLOADS  # noqa: F401 - the report's names
from ..catalog import framework_name, order_key  # noqa: F401 - the report's names


def spec_settings(workload: str) -> dict:
    """Full-run values from the spec (the audit's "spec" row), from the workload's record."""
    wl = workloads.find(workload)
    return dict(wl.spec_settings) if wl else {}


def spec_counts(workload: str, params: dict | None = None) -> dict:
    """The spec's trainable parameters per network for a run's parameters (the LSTM's cell picks its network)."""
    wl = workloads.find(workload)
    if wl is None:
        return {}
    return dict(wl.counts_for(params or {}) if wl.counts_for else wl.param_counts)


def all_counts(workload: str, params_list) -> dict:
    """The spec's counts of every network the runs' parameters name, in their order."""
    out: dict = {}
    for p in params_list:
        for k, v in spec_counts(workload, p).items():
            out.setdefault(k, v)
    return out or spec_counts(workload)


def match_counts(workload: str, counts: dict, params: dict | None = None) -> dict:
    """{spec network: recorded count or None} for a result's `param_counts`."""
    spec, wl = spec_counts(workload, params), workloads.find(workload)
    counts = {str(k).lower(): v for k, v in (counts or {}).items()}
    out = {}
    for net in spec:
        val = None
        network = wl.network(net) if wl else None  # where a notebook spells its key differently
        for alias in (network.aliases if network and network.aliases else (net,)):
            if alias in counts:
                val = counts[alias]
                break
        if val is None and len(spec) == 1 and len(counts) == 1:
            val = next(iter(counts.values()))
        out[net] = val
    return out


def audit_count(workload: str, net: str, value, params: dict | None = None) -> str:
    """'ok', 'structural' (explained), 'mismatch' or 'missing'."""
    expected, wl = spec_counts(workload, params).get(net), workloads.find(workload)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value or value in (float("inf"), float("-inf")):
        return "missing"
    if int(value) == expected:
        return "ok"
    if wl is not None and (net, int(value)) in wl.structural_counts:  # e.g. the LSTM's two bias vectors
        return "structural"
    return "mismatch"

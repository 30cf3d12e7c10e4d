"""The scope box at the top of the report (#67): what this report covers and
what it leaves out, each left-out part with the command that adds it.

Read from the rows and the output folders alone: the modes, devices and
precisions the runs used; the workloads run and those not; seeds and
repeats; the profile; and the sections that need their own records (the
layer timing's layers.json, the behaviour cases' behaviour.json, the
high-level API's runs). Nothing here ranks or judges; a reader sees before
any figure what the figures do not speak for.
"""
from __future__ import annotations

from .. import behaviour, layers, workloads
from ..catalog import FRAMEWORK_RECORDS, MIXED, MODES
from ..plan import SERVE_CALLS


def _profiles(plans) -> set:
    return {str(p.get("profile") or "") for p in plans if isinstance(p, dict)} - {""}


def scope_items(rows, sources, plans, S) -> dict:
    """{"covers": [text], "leaves": [(text, command)]} for the report's rows, source folders and plans."""
    modes = sorted({w.mode for w in rows})
    devices = sorted({w.device for w in rows})
    precisions = sorted({str(w.result.params.get("precision") or "default") for w in rows})
    wls = [wl for wl in workloads.REGISTRY if any(w.workload == wl for w in rows)]
    seeds = max((len(w.seeds) for w in rows), default=0)
    repeats = max((w.n_repeats for w in rows), default=0)
    covers = [S("scope_covers", n=len(rows), workloads=", ".join(workloads.get(wl).display for wl in wls),
                modes=", ".join(modes), devices=", ".join(d.upper() for d in devices),
                precisions=", ".join(precisions), seeds=seeds, repeats=repeats,
                profiles=", ".join(sorted(_profiles(plans))) or "?")]
    leaves = []
    if set(MODES) - set(modes):
        leaves.append((S("scope_no_mode", modes=", ".join(sorted(set(MODES) - set(modes)))), "--mode both"))
    if "gpu" not in devices:
        leaves.append((S("scope_no_gpu"), "--device gpu"))
    if not any(str(w.result.params.get("precision") or "default") in MIXED for w in rows):
        leaves.append((S("scope_no_mixed"), "-p precision=default,bf16"))
    if not any("fp16" in f.offered("precision", d) for f in FRAMEWORK_RECORDS for d in ("cpu", "gpu")):
        leaves.append((S("scope_no_fp16"), ""))
    missing = [workloads.get(k).display for k in workloads.REGISTRY if k not in wls]
    if missing:
        leaves.append((S("scope_no_workloads", names=", ".join(missing)), "--workloads all"))
    if seeds < 2:
        leaves.append((S("scope_one_seed"), "--seeds 5"))
    if not any(layers.read(s) for s in sources):
        leaves.append((S("scope_no_layers"), "--layers"))
    if not any(behaviour.read(s) for s in sources):
        leaves.append((S("scope_no_behaviour"), "--behaviour"))
    if not any((w.result.params.get("api") or "basic") != "basic" for w in rows):
        leaves.append((S("scope_no_high_api"), "-p lenet.api=basic,high"))
    if "full" not in _profiles(plans):
        leaves.append((S("scope_quick"), "--profile full"))
    calls = [((w.result.serving or {}).get("calls") or 0) for w in rows if (w.result.serving or {}).get("status") == "ok"]
    if not any((w.result.serving or {}).get("status") not in (None, "off") for w in rows):
        leaves.append((S("scope_no_serve"), "--serve"))
    elif calls and min(calls) < SERVE_CALLS:
        leaves.append((S("scope_serve_calls"), "--serve"))
    if not any((w.result.resume or {}).get("status") for w in rows):
        leaves.append((S("scope_no_resume"), "-p resume_check=true"))
    leaves.append((S("scope_resume_workloads"), ""))  # the DCGAN's and the GPT's notebooks do not checkpoint yet
    return {"covers": covers, "leaves": leaves}

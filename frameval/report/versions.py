"""Two or more versions of one framework in one report: each row is named by
its version ("PaddlePaddle 3.2.2", "PaddlePaddle 3.3.1") in every table, and
the "Version comparison" section compares each later version with the
earliest, per workload and mode (the verdict rules are in frameval/stats.py, the
table in report/comparison.py)."""
from __future__ import annotations

from dataclasses import replace

from .. import speed, stats
from ..versionkey import version_key
from . import fmt
from .comparison import comparison_table, notes
from .spec import MODES, WORKLOADS, framework_name, order_key


def multi_version(rows) -> set:
    """The frameworks that ran in more than one version on one device of one
    machine (a CUDA build on a GPU box beside a CPU build elsewhere is not a
    version comparison)."""
    seen: dict = {}
    for w in rows:
        if w.version:
            seen.setdefault((w.fw, w.device, w.host or ""), set()).add(w.version)
    return {k[0] for k, vs in seen.items() if len(vs) > 1}


def name_versions(rows) -> list:
    """The rows, with the version in the framework's name where several versions ran."""
    multi = multi_version(rows)
    return [replace(w, fw_name=f"{framework_name(w.fw)} {w.version}") if w.fw in multi and w.version else w
            for w in rows]


def _runs(ws) -> list:
    """Every repeat's Result of these rows, the first repeat first."""
    return [r for w in ws for r in [w.result, *w.extra]]


def version_lines(rows) -> list:
    """[{"framework", "workload", "mode", "device", "a", "b", "runs_a", "runs_b"}]:
    each later version against the earliest, per workload, mode, device and machine."""
    groups: dict = {}
    multi = multi_version(rows)
    for w in rows:
        if w.fw in multi and w.version:
            k = (w.workload, w.fw, w.mode, w.device, w.host or "")
            groups.setdefault(k, {}).setdefault(w.version, []).append(w)
    lines = []
    for (wl, fw, mode, dev, host), by_v in groups.items():
        vs = sorted(by_v, key=version_key)
        for v in vs[1:]:
            lines.append({"framework": framework_name(fw) + (f" @{host}" if host and len({k[4] for k in groups}) > 1 else ""),
                          "fw": fw, "workload": wl, "mode": mode, "device": dev, "a": vs[0], "b": v,
                          "runs_a": _runs(by_v[vs[0]]), "runs_b": _runs(by_v[v])})
    lines.sort(key=lambda x: (WORKLOADS.index(x["workload"]) if x["workload"] in WORKLOADS else 9, order_key(x["fw"]),
                              x["device"], MODES.index(x["mode"]) if x["mode"] in MODES else 9, version_key(x["b"])))
    return lines


def version_section(rows, S, threshold=0.10):
    """The "Version comparison" section, or None where no framework ran in two versions."""
    lines = version_lines(rows)
    if not lines:
        return None
    table = comparison_table(lines, S, threshold, "table-versions", S("col_cmp_base"), S("col_cmp_new"))
    return {"table": table, "notes": notes(table["lines"], S, threshold) + tests_differ(lines, table["lines"], S, threshold),
            "intro": S("versions_intro", pct=f"{threshold * 100:g}%")}


def _windows(runs) -> list:
    return [rs for rs in (speed.rates(r.timing.get("windows")) for r in runs if r.status == "ok") if rs]


def tests_differ(lines, computed, S, threshold) -> list:
    """Where the ranking's interval calls one version slower and this table does
    not: why the two tests differ. They never point opposite ways: both rest on
    speed.side_rate (the median of the runs' medians), so their directions agree."""
    out = []
    for ln, c in zip(lines, computed):
        a, b = _windows(ln["runs_a"]), _windows(ln["runs_b"])
        if not a or not b or c["verdict"] in ("faster", "slower"):
            continue
        fast, slow, fv, sv = (a, b, ln["a"], ln["b"]) if speed.side_rate(a) >= speed.side_rate(b) else (b, a, ln["b"], ln["a"])
        iv = speed.ratio_interval(fast, slow)
        if iv and iv["verdict"] == "slower":
            out.append(S("cmp_note_tests_differ", framework=ln["framework"], workload=S("wl_" + ln["workload"]),
                         mode=ln["mode"], slow=sv, fast=fv, ratio=fmt.ratio(iv["ratio"]),
                         interval=fmt.interval(iv["lo"], iv["hi"]), pct=f"{threshold * 100:g}%",
                         p=f"{stats.P_THRESHOLD:g}", needed=stats.repeats_needed()))
    return out

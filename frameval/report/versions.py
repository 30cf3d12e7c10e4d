"""Two or more versions of one framework in one report: each row is named by
its version ("PaddlePaddle 3.2.2", "PaddlePaddle 3.3.1") in every table, and
the "Version comparison" section compares each later version with the
earliest, per workload and mode (the verdict rules are in frameval/stats.py, the
table in report/comparison.py)."""
from __future__ import annotations

from ..versionkey import version_key
from .comparison import comparison_table, notes
from .spec import MODES, WORKLOADS, framework_name, order_key


def multi_version(rows) -> set:
    """The frameworks that ran in more than one version on one device of one
    machine (a CUDA build on a GPU box beside a CPU build elsewhere is not a
    version comparison)."""
    seen: dict = {}
    for w in rows:
        if w.get("version"):
            seen.setdefault((w["fw"], w["device"], w["host"] or ""), set()).add(w["version"])
    return {k[0] for k, vs in seen.items() if len(vs) > 1}


def name_versions(rows) -> None:
    """Put the version into the framework's name where several versions ran."""
    multi = multi_version(rows)
    for w in rows:
        if w["fw"] in multi and w.get("version"):
            w["fw_name"] = f"{framework_name(w['fw'])} {w['version']}"


def _runs(ws) -> list:
    """Every repeat's Result of these rows, the first repeat first."""
    return [r for w in ws for r in [w.result, *w.extra]]


def version_lines(rows) -> list:
    """[{"framework", "workload", "mode", "device", "a", "b", "runs_a", "runs_b"}]:
    each later version against the earliest, per workload, mode, device and machine."""
    groups: dict = {}
    multi = multi_version(rows)
    for w in rows:
        if w["fw"] in multi and w.get("version"):
            k = (w["workload"], w["fw"], w["mode"], w["device"], w["host"] or "")
            groups.setdefault(k, {}).setdefault(w["version"], []).append(w)
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
    return {"table": table, "notes": notes(table["lines"], S, threshold),
            "intro": S("versions_intro", pct=f"{threshold * 100:g}%")}

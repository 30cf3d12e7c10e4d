"""The high-level training API against the basic loop (#40): where a framework ran
LeNet through its high-level API (`api=high`: Keras' Model.fit, paddle.Model.fit)
beside the loop written out (`api=basic`) with every other parameter equal, the
API's steady samples/s over the loop's, with the 95% interval of
speed.ratio_interval (the one speed estimate, as graph against eager), and the
lines of code the API takes. Frameworks without one are named, never left blank."""
from __future__ import annotations

from .. import speed
from ..catalog import BY_KEY, FRAMEWORKS, HIGH_API_NOTEBOOKS, WORKLOAD_BY_KEY, framework_name
from ..paths import notebook_path
from . import fmt
from .cells import cell, header
from .model import run_windows
from .modes import verdict

SAME = ("fw", "version", "workload", "mode", "device", "host")
NOT_COMPARED = ("api", "out_dir")  # the parameters a pair may differ in


def api_of(w) -> str:
    """A row's api parameter; a result from before the parameter existed ran the basic loop."""
    return str(w.result.params.get("api") or "basic")


def _params(w) -> dict:
    return {k: v for k, v in w.result.params.items() if k not in NOT_COMPARED}


def api_pairs(rows) -> list:
    """[(high row, basic row)]: both ok, same framework, version, workload, mode,
    device and machine, and every parameter but `api` equal."""
    out = []
    for h in rows:
        if api_of(h) != "high" or not h.ok or not h.samples_per_s:
            continue
        for b in rows:
            if (api_of(b) == "basic" and b.ok and b.samples_per_s and all(getattr(b, k) == getattr(h, k) for k in SAME)
                    and _params(b) == _params(h)):
                out.append((h, b))
    return out


def api_line(h, b, lines: dict) -> dict:
    """The API's speed over the basic loop's (above 1: the API is faster), its interval, its lines."""
    return {"h": h, "b": b, "speed": h.samples_per_s / b.samples_per_s,
            "interval": speed.ratio_interval(run_windows(h), run_windows(b)),
            "api_lines": lines.get((h.fw, h.workload), {}).get("api"),
            "basic_lines": lines.get((h.fw, h.workload), {}).get("basic")}


def takes_api(w) -> bool:
    """Whether the row's workload has the `api` parameter (its record says so)."""
    wl = WORKLOAD_BY_KEY.get(w.workload)
    return wl is not None and "api" in wl.params


def code_lines(repo, runs) -> dict:
    """{(fw, workload): {"api": lines of the notebook's high_api cell, "basic": lines of
    its model and train cells}} (blank and comment lines not counted)."""
    from ..notebook import NotebookError, count_code_lines, read
    out = {}
    for fw, wl in runs:
        try:
            nb = read(notebook_path(fw, wl, repo))
        except (NotebookError, OSError, ValueError):
            continue
        out[fw, wl] = {"api": count_code_lines(nb, ("high_api",)) or None, "basic": count_code_lines(nb)}
    return out


def without_api(rows, paired, S) -> list:
    """One sentence per framework without a row in the table: it has no high-level API,
    or it has one and ran LeNet here, but not through it beside its basic loop."""
    out, ran = [], {w.fw for w in rows if takes_api(w)}
    for fw in FRAMEWORKS:
        has = BY_KEY[fw].high_api if fw in HIGH_API_NOTEBOOKS else ""
        if not has:
            out.append(S("api_none", framework=framework_name(fw)))
        elif fw in ran and fw not in paired:
            out.append(S("api_not_run", framework=framework_name(fw), api=has))
    return out


def api_section(rows, S, repo) -> dict | None:
    """The "High-level API against the basic loop" section, or None where no run used api=high."""
    if not any(api_of(w) == "high" for w in rows):
        return None
    lines = code_lines(repo, sorted({(h.fw, h.workload) for h in rows if api_of(h) == "high"}))
    found = [api_line(h, b, lines) for h, b in api_pairs(rows)]
    heads = [header(S("col_framework")), header(S("col_api")), header(S("col_mode")),
             header(S("col_api_speed"), True), header(S("col_api_verdict")),
             header(S("col_api_sps"), True), header(S("col_basic_sps"), True),
             header(S("col_api_lines"), True), header(S("col_basic_lines"), True)]
    body = [_table_row(ln, S) for ln in found]
    return {"table": {"id": "table-api", "headers": heads, "rows": body, "sortable": True},
            "intro": S("api_intro"), "lines": found,
            "notes": [S(note) for note in dict.fromkeys(_data_note(ln["h"].fw) for ln in found) if note]
            + without_api(rows, {ln["h"].fw for ln in found}, S),
            "unpaired": S("api_unpaired") if not found else ""}


def _data_note(fw: str) -> str:
    """Where the API cannot be given the data as the basic loop has it, the strings key
    of the note that says so (the framework's record: high_api_note)."""
    return BY_KEY[fw].high_api_note if fw in BY_KEY else ""


def _table_row(ln, S) -> list:
    h, iv = ln["h"], ln["interval"]
    called = S("api_" + verdict(iv)) if iv else fmt.NA
    text = fmt.ratio(ln["speed"]) + (f" ({fmt.interval(iv['lo'], iv['hi'])})" if iv else "")
    n = lambda v: cell(fmt.NA if v is None else str(v), v, "na" if v is None else "")
    return [cell(h.fw_name + (f" {h.version}" if h.version else ""), h.fw),
            cell(BY_KEY[h.fw].high_api if h.fw in BY_KEY else fmt.NA, None),
            cell(h.mode, h.mode), cell(text, ln["speed"]),
            cell(called, None, "ok" if verdict(iv) == "faster" else ""),
            cell(fmt.rate(h.samples_per_s), h.samples_per_s), cell(fmt.rate(ln["b"].samples_per_s), ln["b"].samples_per_s),
            n(ln["api_lines"]), n(ln["basic_lines"])]

"""The per-workload tables (comparison, memory detail, graph-scope notes), the
code-size table and the errors summary. Speed is ranked by samples/s; seconds
per epoch are shown, never ranked on."""
from __future__ import annotations

import os
import statistics
from pathlib import Path

from .. import energy, speed
from ..catalog import WORKLOAD_BY_KEY
from ..paths import notebook_path, notebook_rel
from ..result import NOT_OFFERED, Result, counts
from . import determinism, fmt, labels
from .cells import cell, drop_na_columns, header
from .check import check_summary
from .defects import mark_substitute
from .labels import SCOPE_PARTS
from .called import PROVISIONAL_MARK, QUALITY_DIFF, QUALITY_FORMAT, noise_where, quality_called  # noqa: F401 (read from here too)
from .model import at_faster_mode, best_of, fastest_by_group, speed_ratio
from .analysis import analyse
from .peak import gflops_cell
from .spec import audit_count, framework_name, match_counts

TRACEBACK_LINES = 15
MESSAGE_CHARS = 2000
MEMORY_KEYS = (("after_import_mb", "col_mem_import"), ("after_data_mb", "col_mem_data"),
               ("after_check_mb", "col_mem_check"), ("before_training_mb", "col_mem_before"),
               ("training_peak_mb", "col_mem_training"), ("process_peak_mb", "col_mem_process"))


# ------------------------------------------------------------------ workload table
def _sig4(v):
    return fmt.sig(v, 4)


# How a workload record's further figures are written (workloads.base.Figure.format).
FORMATS = {"sig4": _sig4, "sig3": lambda v: fmt.sig(v, 3), "millis": fmt.millis, "kib": fmt.kib,
           "percent": fmt.percent, "sig": fmt.sig}


def quality_columns(workload, S):
    """[(header, getter(Result) -> value, formatter, higher_is_better or None)]:
    the workload's quality figure (the catalog's), then the figures beside it."""
    wl = WORKLOAD_BY_KEY.get(workload)
    if wl is None:
        return []
    q = wl.quality
    cols = [(S(q.label), Result.quality, QUALITY_FORMAT.get(q.key, fmt.sig), q.higher_is_better)]
    return cols + [(S(f.label), (lambda r, d=f.derive: d(r.raw)) if f.derive else (lambda r, key=f.key: r.metric(key)),
                    FORMATS.get(f.format, fmt.sig), f.higher_is_better) for f in wl.figures]


def _columns(rows, multi_host):
    return {"variant": any(w.variant for w in rows), "device": len({w.device for w in rows}) > 1,
            "host": multi_host, "repeats": any(w.extra for w in rows)}


def _heads(S, opt, qcols):
    heads = [header(S("col_framework")), header(S("col_version")), header(S("col_mode"))]
    if opt["variant"]:
        heads.append(header(S("col_variant"), False, S("tip_variant")))
    if opt["device"]:
        heads.append(header(S("col_device")))
    if opt["host"]:
        heads.append(header(S("col_host")))
    heads += [header(S("col_status")), header(S("col_first_epoch"), True, S("tip_first_epoch")),
              header(S("col_steady"), True, S("tip_steady")),
              header(S("col_samples_per_s"), True, S("tip_samples_per_s")),
              header(S("col_vs_fastest"), True, S("tip_vs_fastest")),
              header(S("col_gflops"), True, S("tip_gflops_col")),
              header(S("col_cpu_cores"), True, S("tip_cpu_cores")),
              header(S("col_peak_rss"), True, S("tip_peak_rss")), header(S("col_mem_check_part"), True, S("tip_mem_check_part")),
              header(S("col_rss_import"), True),
              header(S("col_peak_device"), True, S("tip_peak_device")),
              header(S("col_energy"), True, S("tip_energy")),
              header(S("col_graph_scope"), False, S("tip_graph_scope")), header(S("col_params"), True)]
    heads += [header(q[0], True) for q in qcols]
    if opt["repeats"]:  # the same seed twice: only where repeats exist (determinism.py)
        heads.append(header(S("col_determinism"), True, S("tip_determinism")))
    return heads + [header(S("col_code_lines"), True, S("tip_code_lines"))]


def workload_table(workload, rows, S, multi_host, code_lines, problems=None, an=None):
    opt = _columns(rows, multi_host)
    qcols = quality_columns(workload, S)
    heads = _heads(S, opt, qcols)
    an = an or analyse(rows)
    # Bold only where the summary calls a ranking: the quality figure where it
    # names a best (never beside "a range, not a ranking"), no other column.
    called = quality_called(workload, rows, an)
    qbest = []
    for i, (_, get, _, hib) in enumerate(qcols):
        vals = [v for v in (fmt.num(get(w.result)) for w in rows if w.counted) if v is not None]
        qbest.append(None if i > 0 or not called or hib is None or not vals else (max(vals) if hib else min(vals)))
    ctx = {"workload": workload, "S": S, "opt": opt, "best": fastest_by_group(rows), "an": an, "qcols": qcols,
           "qbest": qbest, "code": code_lines, "ranked": at_faster_mode(rows)}
    body = []
    for w in rows:
        if problems is None:
            body.append(_line(w, ctx))
            continue
        body.append(problems.run(S("what_row", run=w.label or w.id, table=S("wl_" + workload)), _line, w, ctx,
                                 default=lambda it, w=w: _broken_line(w, it["text"], len(heads))))
    return drop_na_columns({"id": f"table-{workload}", "headers": heads, "rows": body, "sortable": True,
                            "row_ids": [w.id for w in rows]})


def _broken_line(w, text, n):
    return [cell(w.fw_name or w.fw, w.fw), cell(text, None, "flag")] + [cell("", None, "na")] * (n - 2)


def _line(w, c):
    S, r = c["S"], w.result
    cells = [cell(w.fw_name, w.fw), cell(w.version or fmt.NA, w.version), cell(w.mode, w.mode)]
    if c["opt"]["variant"]:
        cells.append(cell(w.variant or "—", w.variant or None, "", w.variant_all))
    if c["opt"]["device"]:
        cells.append(cell(w.device.upper(), w.device))
    if c["opt"]["host"]:
        cells.append(cell(w.host or fmt.NA, w.host))
    cells += [status_cell(w, S), cell(fmt.seconds(r.first_epoch_s), fmt.num(r.first_epoch_s), "na" if fmt.is_na(r.first_epoch_s) else ""),
              steady_cell(w, S), mark_substitute(_sps_cell(w), w, S)]
    best = best_of(w, c["best"])
    rivals = [x for x in c["ranked"] if x is not best and x.counted and speed_ratio(x, best) is not None]
    cells.append(ratio_cell(w, best, S, c["an"], ranked=bool(rivals)))
    cells.append(gflops_cell(c["an"].peak(w), S))
    cells.append(cores_cell(w, S))
    parts = r.memory_parts()  # one meaning a column (#67): import, check and training as parts
    cells.append(_mb_cell(parts["training"], S("tip_peak_rss_method", method=r.memory.get("method"))
                          if r.memory.get("method") else S("tip_peak_rss_old"), bound=not parts["reset"]))
    cells.append(_mb_cell(parts["check"]))
    cells.append(_mb_cell(r.rss_after_import_mb))
    cells.append(_device_mem_cell(w, S))
    cells.append(_energy_cell(r, S))
    cells.append(scope_cell(w, S))
    cells.append(params_cell(c["workload"], w, S))
    for i, ((_, get, f, _), qb) in enumerate(zip(c["qcols"], c["qbest"])):
        q = c["an"].quality(w)
        if i == 0 and q.n > 1:  # over seeds: the mean, its 95% interval (three seeds on), no "best" mark
            text = f(q.mean) + (f" ({f(q.lo)}–{f(q.hi)})" if q.lo is not None else "")
            cells.append(cell(text, q.mean, "", S("tip_quality_seeds", n=q.n)))
            continue
        spread = _figure_over_runs(w, get) if i > 0 else None
        if spread is not None:  # several runs (seeds, repeats): the median, the range as samples/s has it
            mid, lo, hi, n = spread
            cells.append(cell(f"{f(mid)} ({f(lo)}–{f(hi)})", mid, "", S("tip_figure_runs", n=n)))
            continue
        v = get(r)
        cls = "na" if v is None else ("best" if w.counted and qb is not None and fmt.num(v) == qb else "")
        cells.append(cell(f(v), fmt.num(v), cls))
    if c["opt"]["repeats"]:
        cells.append(determinism.column_cell(w, S))
    n = c["code"].get((w.fw, c["workload"]))
    cells.append(cell(fmt.integer(n) if n is not None else fmt.NA, n, "na" if n is None else ""))
    return cells


def _figure_over_runs(w, get):
    """(median, lowest, highest, n) of a further figure over a row's runs (every seed's
    counted repeats), or None with fewer than two values: one run shows its own."""
    vals = sorted(v for _, rs in (w.seeds or ()) for r in rs if counts(r) and (v := fmt.num(get(r))) is not None)
    if len(vals) < 2:
        return None
    return statistics.median(vals), vals[0], vals[-1], len(vals)


def ratio_cell(w, best, S, an, ranked=True):
    """Time per sample against the fastest, with its 95% interval and verdict
    (an.interval: report/analysis.py), marked provisional where the between-run
    noise was measured on another machine; the fastest in bold only where `ranked`:
    it has a counted rival, so the summary calls a ranking (not "only X has a speed")."""
    ratio, iv = speed_ratio(w, best), an.interval(w)
    if ratio is None:
        return cell(fmt.NA, None, "na")
    if w is best or not iv:
        return cell(fmt.ratio(ratio), ratio, "best" if w is best and ranked else "")
    verdict = S("verdict_" + iv["verdict"], floor=f"{speed.MIN_WINDOW_S * 1e3:g}") + (
        f" {PROVISIONAL_MARK}" if an.provisional(w, best) else "")
    return cell(f"{fmt.ratio(ratio)} ({fmt.interval(iv['lo'], iv['hi'])}) {verdict}", ratio,
                "" if iv["verdict"] == "slower" else "same", S("tip_interval", runs=iv["runs"][1], windows=iv["windows"][1])
                + (" " + S("tip_interval_widened", where=noise_where([w, best], S, an)) if iv["widened"] else ""))


def _sps_cell(w):
    v = w.samples_per_s
    if v is None:
        raw = w.result.samples_per_s
        return cell(fmt.rate(raw) if raw is not None else fmt.NA, None, "na")
    t = fmt.rate(v)
    if w.steady_kind == "repeats" and w.sps_lo is not None and w.sps_hi is not None:
        t += f" ({fmt.rate(w.sps_lo)}–{fmt.rate(w.sps_hi)})"
    return cell(t, v)


def _mb_cell(v, title="", bound=False):
    """MB; `bound`: an upper bound (the process peak over a level, read without the reset): "≤"."""
    return cell(("≤ " if bound and not fmt.is_na(v) else "") + fmt.mb(v), fmt.num(v), "na" if fmt.is_na(v) else "", title)


def _device_mem_cell(w, S):
    dev, drv = w.result.peak_device_mb, w.result.peak_device_driver_mb
    if fmt.num(dev) is None and fmt.num(drv) is None:
        return cell(fmt.NA, None, "na", S("tip_not_measurable"))
    t = fmt.mb(dev) + (f" ({S('driver')} {fmt.mb(drv)})" if fmt.num(drv) is not None else "")
    return cell(t, fmt.num(dev) if fmt.num(dev) is not None else fmt.num(drv))


def _energy_cell(r, S):
    """A steady epoch's energy above the idle draw (J), from the GPU's counter;
    the whole epoch's and the idle draw in its title. n/a where not measured
    (a CPU run, no counter): the column is then dropped as every n/a column is."""
    e = r.energy
    if e.get("available"):  # from the epochs' readings, so an older record gets today's rule too
        e = {**e, **energy.summary(r.epochs, e.get("idle_w"))}
    v = fmt.num(e.get("epoch_above_idle_j")) if e.get("available") and not e.get("why_none") else None
    if v is None:
        return cell(fmt.NA, None, "na", e.get("why_none") or e.get("why") or S("tip_not_measurable"))
    return cell(fmt.sig(v), v, "", S("tip_energy_cell", total=fmt.sig(e.get("epoch_j")), idle=fmt.sig(e.get("idle_w")),
                                      mj=fmt.sig(e.get("above_idle_mj_per_sample"))))


def status_cell(w, S):
    tags, cls = [], ""
    if w.status == NOT_OFFERED:  # declined by its framework, its own error the evidence (#69): no failure
        tags.append(S("status_not_offered"))
        cls = "na"
    elif not w.ok:
        tags.append(S("status_failed"))
        cls = "flag"
    elif w.check_failed:
        tags.append(S("status_check_failed"))
        cls = "flag"
    else:
        tags.append(S("status_ok"))
    if w.result.reused:
        tags.append(S("status_reused"))
    if w.noisy:
        tags.append(S("status_noisy"))
        cls = cls or "warn"
    titles = []
    for text, tcls, title in _state_tags(w, S):
        tags.append(text)
        cls = cls or tcls
        titles.append(title)
    if w.extra_failed:
        tags.append(S("status_repeat_failed", n=len(w.extra_failed)))
        cls = cls or "warn"
    return cell(" · ".join(tags), w.status, cls, "; ".join(t for t in titles if t))


def _state_tags(w, S) -> list:
    """[(text, class, tooltip)]: how much of the step graph mode compiled, when
    it was not the whole step without a break (compiled=False said "not
    compiled" even of a step compiled whole into two graphs); a busy machine;
    outlier timing windows. Each only where the result records it."""
    out = []
    got = labels.scope_label(w.result, w.mode, S) if w.ok and w.result.compiled is not True else None
    if got:
        gs = w.result.graph_scope or {}
        tip = " — ".join(str(x) for x in (gs.get("how"), gs.get("why")) if x) if gs else S("tip_label_scope_not_recorded")
        out.append((got[0], got[1], tip))
    busy = labels.busy_text(w.result, S)
    if busy:
        out.append((busy, "warn", S("tip_busy")))
    outliers = labels.outlier_text(w.result, S)
    if outliers:
        out.append((outliers, "warn", S("tip_outliers", x=f"{labels.OUTLIER_FACTOR:g}")))
    return out


def steady_cell(w, S):
    if w.steady is None:
        raw = w.result.steady_epoch_s
        return cell(fmt.seconds(raw) if raw is not None else fmt.NA, None, "na")
    t = fmt.seconds(w.steady)
    if w.steady_lo is not None and w.steady_hi is not None:
        t += f" ({fmt.seconds(w.steady_lo)}–{fmt.seconds(w.steady_hi)})"
    title, cls = "", ""
    if w.steady_kind == "repeats":
        t += " " + S("n_repeats", n=w.n_repeats)
        title = S("tip_repeats", spread=f"{w.spread * 100:.0f}%" if w.spread is not None else fmt.NA)
        if w.noisy:
            cls = "warn"
    return cell(t, w.steady, cls, title)


def cores_cell(w, S):
    """CPU use in training, in cores (the process's CPU time over wall time, steady epochs)."""
    v = fmt.num(w.result.cpu_cores)
    if v is None:
        return cell(fmt.NA, None, "na", S("tip_cpu_cores_na"))
    threads = (w.result.threads_effective or {}).get("intra")
    return cell(f"{v:.2f}", v, "", S("tip_cpu_cores_run", threads=threads if threads else fmt.NA))


def params_cell(workload, w, S):
    counts = w.result.param_counts
    if not counts:
        return cell(fmt.NA, None, "na")
    params = w.result.params
    states = [audit_count(workload, net, v, params) for net, v in match_counts(workload, counts, params).items()]
    t = " + ".join(fmt.integer(v) for v in counts.values())
    cls = "flag" if "mismatch" in states else ("warn" if "structural" in states else "")
    title = S("tip_params_mismatch") if cls == "flag" else (S("two_bias") if cls == "warn" else "")
    return cell(t, w.params_total, cls, title)


# ------------------------------------------------------------------ graph scope
def scope_text(w, S) -> tuple:
    """(text, class, tooltip) of what the training step's graph holds."""
    gs = w.result.graph_scope
    if w.mode != "graph" and not (gs and any(gs.get(k) is True for k in SCOPE_PARTS)):
        return "—", "", S("eager")
    if not gs:
        return fmt.NA, "na", S("tip_scope_not_recorded")
    inside = [S("scope_" + k) for k in SCOPE_PARTS if gs.get(k) is True]
    outside = [S("scope_" + k) for k in SCOPE_PARTS if gs.get(k) is not True]
    if not inside:
        t, cls = S("scope_none"), "flag"
    elif len(inside) == 1 and outside:
        t, cls = S("scope_only", part=inside[0]), "warn"
    else:
        t, cls = "+".join(inside), "warn" if outside else "ok"
    if outside and inside:
        t += " " + S("scope_outside", parts="+".join(outside))
    counts = []
    if fmt.num(gs.get("graphs")) is not None:
        counts.append(S("scope_graphs", n=fmt.integer(gs["graphs"])))
    if fmt.num(gs.get("graph_breaks")) is not None:
        counts.append(S("scope_breaks", n=fmt.integer(gs["graph_breaks"])))
        if fmt.num(gs["graph_breaks"]) and cls == "ok":
            cls = "warn"
    if counts:
        t += " · " + ", ".join(counts)
    tip = " — ".join(str(x) for x in (gs.get("how"), gs.get("why")) if x)
    return t, cls, tip


def scope_cell(w, S):
    t, cls, tip = scope_text(w, S)
    return cell(t, t if t not in ("—", fmt.NA) else None, cls, tip)


def scope_notes(rows) -> list:
    """[(label, how, why)] for the footnotes under a table (Markdown has no tooltips)."""
    out = []
    for w in rows:
        gs = w.result.graph_scope or {}
        if w.mode == "graph" and (gs.get("how") or gs.get("why")):
            out.append((w.label, str(gs.get("how") or ""), str(gs.get("why") or "")))
    return out


# ------------------------------------------------------------------ memory detail
def memory_table(workload, rows, S):
    """The memory levels the notebooks recorded (import, data, check, training), or None."""
    mrows = [w for w in rows if w.result.memory or w.result.data_placement]
    if not mrows:
        return None
    heads = ([header(S("col_run"))] + [header(S(k), True) for _, k in MEMORY_KEYS]
             + [header(S("col_mem_method")), header(S("col_data_placement"))])
    body = []
    for w in mrows:
        m = w.result.memory
        line = [cell(w.label, w.id)]
        for key, _ in MEMORY_KEYS:
            line.append(_mb_cell(m.get(key)))
        line.append(cell(m.get("method") or fmt.NA, None, "" if m.get("method") else "na"))
        dp = w.result.data_placement
        line.append(cell(dp if dp not in (None, "") else fmt.NA, None, "" if dp else "na"))
        body.append(line)
    return {"id": f"table-memory-{workload}", "headers": heads, "rows": body, "sortable": True,
            "row_ids": [w.id for w in mrows]}


# ------------------------------------------------------------------ code size
def code_size_table(frameworks, workloads, repo: Path, out_dir: Path, S, rows=()):
    """Code lines of each notebook of the workloads that ran. Each count links to
    the notebook a run executed, inside the report folder (it travels with it);
    a source notebook outside the folder is named, never linked (#67)."""
    from ..notebook import NotebookError, count_code_lines, read
    ran = {}
    for w in rows:
        nb_file = Path(w.result.notebook) if w.result.notebook else None
        if nb_file and nb_file.is_file() and Path(out_dir).resolve() in nb_file.resolve().parents:
            ran.setdefault((w.fw, w.workload), nb_file)
    counts, heads = {}, [header(S("col_framework"))] + [header(S("wl_" + wl), True) for wl in workloads] + [header(S("col_total"), True)]
    body = []
    for fw in frameworks:
        line = [cell(framework_name(fw), fw)]
        total = 0
        for wl in workloads:
            p = notebook_path(fw, wl, repo)
            try:
                n = count_code_lines(read(p))
            except (NotebookError, OSError, ValueError):
                line.append(cell(fmt.NA, None, "na"))
                continue
            counts[(fw, wl)] = n
            total += n
            got = ran.get((fw, wl))
            link = {"link": os.path.relpath(got, out_dir), "link_text": notebook_rel(fw, wl)} if got else {}
            line.append(cell(f"{n}", n, "", notebook_rel(fw, wl)) | link)
        line.append(cell(str(total), total))
        body.append(line)
    return {"id": "table-code", "headers": heads, "rows": body, "sortable": True}, counts


# ------------------------------------------------------------------ errors
def _link(r: Result, out_dir):
    if r.notebook:
        return os.path.relpath(r.notebook, out_dir)
    return os.path.relpath(r.dir, out_dir) if r.dir else ""


def error_entries(rows, out_dir: Path, S):
    """Failed runs (and failed repeats), then runs whose numerical check failed."""
    out = []
    todo = [(w, r, False) for w in rows for r in ([w.result] if not w.ok else []) + list(w.extra_failed)]
    todo += [(w, w.result, True) for w in rows if w.check_failed]
    for w, r, is_check in todo:
        err = r.error
        tb = str(err.get("traceback") or "").rstrip().splitlines()
        if is_check:
            msg = "; ".join(check_summary(r.check, S)) or S("check_failed_no_detail")
        else:
            msg = str(err.get("message") or S("no_message"))
        if len(msg) > MESSAGE_CHARS:
            msg = msg[:MESSAGE_CHARS] + " …"
        out.append({"framework": w.fw_name, "fw": w.fw, "workload": w.workload,
                    "workload_name": S("wl_" + w.workload) if ("wl_" + w.workload) in S.raw else w.workload,
                    "mode": w.mode, "device": w.device, "host": w.host, "label": w.label,
                    "kind": "check" if is_check else "run",
                    "type": S("status_check_failed") if is_check else str(err.get("type") or S("unknown_error")),
                    "message": msg, "traceback": "" if is_check else "\n".join(tb[-TRACEBACK_LINES:]),
                    "notebook": _link(r, out_dir), "notebook_exists": bool(r.notebook),
                    "repeat": r is not w.result,
                    "anchor": fmt.anchor(f"err-{w.fw}-{w.workload}-{w.mode}-{w.device}-{len(out)}")})
    return out

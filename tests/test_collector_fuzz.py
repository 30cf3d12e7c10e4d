"""Property-based tests of the collector (issue 19, "the report is never lost"):
Hypothesis writes sets of result files, the report is built in-process, and

- report.md and report.html are always written and the collector never raises;
- no part of the report fails to draw (any "could not draw" is a bug);
- every figure shown in a comparison table equals its result file;
- nothing from the inputs is rendered unescaped (HTML tags, Markdown tables).

Generated: one epoch (no steady epoch) or none; NaN and infinite values (as
result.json stores them: "nan", "inf") and JSON-invalid ones; missing optional
metrics; one run; all runs failed; repeats where one failed; two machines and
two result folders (merged, duplicate rows); huge and tiny numbers; Unicode,
Markdown and <script> in titles, notes and error texts; results from an older
version with fewer keys.
"""
from __future__ import annotations

import json
import os
import math
import re
import shutil
import statistics
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

import hypothesis  # noqa: E402,F401 - in the runner environment (environment.yml)
import jinja2  # noqa: E402,F401
import matplotlib  # noqa: E402,F401
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from conftest import training_mb  # noqa: E402
from frameval import report, speed  # noqa: E402
from frameval.report import fmt  # noqa: E402
from frameval.report.i18n import Strings  # noqa: E402

GRID = REPO / "tests" / "fixtures" / "report" / "cpu" / "runs" / "torch" / "dcgan-graph" / "grids" / "epoch_001.png"
MARK = "<frameval-x>"   # a tag no template writes: it must never reach a page as a tag
NASTY = [MARK, '<script>alert("x")</script>', "<img src=x onerror=alert(1)>", "| a | b |", "a\\|b\\",
         "**bold** _i_ [link](javascript:alert(1))", "`code` ``` fence", "中文标题 · 深度学习", "\u202eRTL\u202c",
         "line1\nline2\r\n", "&amp; &lt;tag&gt;", "{n} {workload} {}", "</td></tr></table>", "\"q\" 'q'",
         "# heading", "> quote", "![img](http://example.com/x.png)", "<!-- c -->", "-->", "${x}", "\x00\x07"]
from frameval.catalog import WORKLOADS  # noqa: E402
METRICS = {"lenet": ("train_loss", "train_acc", "test_loss", "test_acc"), "dcgan": ("gen_loss", "disc_loss"),
           "lstm": ("train_mse", "val_mse"), "gpt": ("train_loss", "val_loss", "exact_match")}
OPTIONAL = ("samples_per_s", "peak_rss_mb", "rss_after_import_mb", "peak_device_mb", "peak_device_driver_mb",
            "memory", "graph_scope", "threads_effective", "settings_source", "check", "data_placement", "settings",
            "param_counts", "environment", "notes", "compile_note", "compiled", "params", "data", "first_epoch_s",
            "steady_epoch_s", "steady_min_s", "steady_max_s", "repeats", "epochs", "mode", "device", "status",
            "framework_version", "test_acc", "val_r2", "series", "grids", "threads")

text = st.one_of(st.sampled_from(NASTY), st.text(max_size=24))
finite = st.one_of(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False),
                   st.sampled_from([0.0, 1e-300, 5e-324, 1e300, 1.7976931348623157e308, -1e300, 3, 10 ** 30]))
number = st.one_of(finite, finite, st.sampled_from(["nan", "inf", "-inf", None, "n/a"]))
positive = st.one_of(st.floats(min_value=1e-9, max_value=1e6), st.sampled_from([1e-300, 1e300, 1e308, 0.0]))
timing = st.one_of(positive, positive, st.sampled_from(["nan", "inf", None]))


@st.composite
def check(draw):
    sec = lambda: st.dictionaries(st.sampled_from(["conv1.weight", "fc.bias", "<b>w</b>", "bn0.running_mean"]),
                                  number, max_size=3)  # noqa: E731
    c = {k: draw(sec()) for k in draw(st.lists(st.sampled_from(["forward", "losses", "grads", "step", "update", "running"]),
                                                unique=True))}
    c.update(ok=draw(st.sampled_from([True, False, None])), problems=draw(st.lists(text, max_size=2)),
             diagnosis=draw(st.lists(text, max_size=1)), missing=draw(st.lists(text, max_size=2)),
             tolerances=draw(st.sampled_from([{}, {"forward": 1e-4, "step": 1e-3, "grads": 1e-3, "update": 1e-3,
                                                    "running": 1e-4, "losses": 1e-4}])),
             max_forward_err=draw(number), max_step_err=draw(number), steps=draw(st.sampled_from([None, 1, 5])),
             batch_size=draw(st.sampled_from([None, 16])))
    return c


@st.composite
def run(draw, host):
    wl = draw(st.sampled_from(WORKLOADS))
    n = draw(st.integers(0, 3))
    status = draw(st.sampled_from(["ok", "ok", "failed", "check_failed"]))
    epochs = [dict({"epoch": i + 1, "samples": draw(st.sampled_from([256, 1024, None])), "seconds": draw(timing)},
                   **{m: draw(number) for m in METRICS[wl] if draw(st.booleans()) or i == n - 1}) for i in range(n)]
    r = {"schema": draw(st.sampled_from([1, 2])), "framework": draw(st.sampled_from(["torch", "tensorflow", "mxnet", "jax", MARK])),
         "framework_version": draw(st.one_of(st.sampled_from(["2.13.0+cpu", "1.9.1"]), text)), "workload": wl,
         "mode": draw(st.sampled_from(["eager", "graph"])), "device": draw(st.sampled_from(["cpu", "cpu", "gpu"])),
         "status": status, "epochs": epochs, "first_epoch_s": draw(timing), "steady_epoch_s": draw(timing) if n > 1 else None,
         "steady_min_s": draw(timing), "steady_max_s": draw(timing), "samples_per_s": draw(timing) if n > 1 else None,
         "peak_rss_mb": draw(number), "rss_after_import_mb": draw(number), "peak_device_mb": draw(number),
         "peak_device_driver_mb": draw(number), "threads": draw(st.sampled_from([None, 1, 2, 8])),
         "params": {"epochs": n, "batch_size": draw(st.sampled_from([16, 64])), "max_train_samples": draw(st.sampled_from([256, 4000])),
                    "note": draw(text)},
         "settings": {"lr": draw(number), "optimizer": draw(text), "betas": [0.9, draw(number)]},
         "settings_source": {"lr": draw(st.sampled_from(["read", "declared"])), "optimizer": "declared"},
         "param_counts": draw(st.sampled_from([{"lenet": 61706}, {"generator": 2280896, "discriminator": 1e300}, {"lstm": "nan"}, {}])),
         "compiled": draw(st.sampled_from([True, False, None])), "compile_note": draw(text),
         "graph_scope": draw(st.sampled_from([None, 1])) and {"forward": draw(st.booleans()), "backward": draw(st.booleans()),
                                                            "update": draw(st.booleans()), "graphs": draw(st.sampled_from([None, 0, 2])),
                                                            "graph_breaks": draw(st.sampled_from([None, 0, 3])),
                                                            "how": draw(text), "why": draw(text)},
         "threads_effective": draw(st.sampled_from([None, 1])) and {"intra": draw(st.sampled_from([None, 1, 2])),
                                                                  "inter": draw(st.sampled_from([None, 1])),
                                                                  "how": draw(text), "missing": draw(st.lists(text, max_size=1))},
         "memory": draw(st.sampled_from([{}, 1])) and {"method": draw(text), "after_import_mb": draw(number),
                                                     "after_data_mb": draw(number), "training_peak_mb": draw(number)},
         "data_placement": draw(st.one_of(st.none(), text)), "notes": draw(st.lists(text, max_size=2)),
         "data": {"n_train": draw(st.sampled_from([256, 4000])), "source": draw(text)},
         "environment": {"python": "3.11", "machine": {"hostname": host, "cpu": draw(text), "cores": draw(number)},
                         "gpu": draw(st.one_of(st.none(), text))}}
    if status == "failed":
        r["error"] = {"type": draw(text), "message": draw(text), "traceback": draw(text)}
    if draw(st.booleans()):
        r["check"] = draw(check())
    if wl == "lenet":
        r["test_acc"] = draw(number)
    if wl == "lstm":
        r.update(val_r2=draw(number), val_rmse=draw(number), predict_ms=draw(number),
                 series={"val_true": draw(st.lists(number, max_size=6)), "val_pred": draw(st.lists(number, max_size=6))})
    if wl == "dcgan":
        r["grids"] = [f"grids/epoch_{i + 1:03d}.png" for i in range(n)]
    if wl == "gpt":  # the ten answers as the notebooks write them, with any text in them
        r.update(exact_match=draw(number), gen_tokens_per_s=draw(number),
                 shown_answers=draw(st.lists(st.lists(st.tuples(text, st.booleans(), text), max_size=3), max_size=2)))
    if draw(st.booleans()):
        r["repeats"] = draw(st.lists(timing, max_size=3))
    for k in draw(st.lists(st.sampled_from(OPTIONAL), max_size=6, unique=True)):  # an older version: fewer keys
        r.pop(k, None)
    return r


@st.composite
def result_sets(draw):
    """[(source index, folder name, result, failed repeat?)] and the report's title and notes."""
    two_sources = draw(st.booleans())
    hosts = draw(st.sampled_from([["alpha"], ["alpha", "beta"], ["alpha", "<b>β</b>"]]))
    runs = []
    for i in range(draw(st.integers(1, 4))):
        r = draw(run(draw(st.sampled_from(hosts))))
        src = draw(st.integers(0, 1)) if two_sources else 0
        folder = f"{r.get('workload')}-{r.get('mode', 'graph')}" + ("-gpu" if r.get("device") == "gpu" else "")
        runs.append((src, f"fw{i % 3}", folder, r, draw(st.booleans())))
    return {"runs": runs, "title": draw(text), "notes": draw(text), "lang": draw(st.sampled_from(["en", "zh"]))}


def write_sets(root: Path, data) -> list:
    sources = [root / "a", root / "b"]
    written = {}
    for src, fw, folder, r, failed_repeat in data["runs"]:
        d = sources[src] / "runs" / fw / folder
        if d in written:  # one result per folder, as the runner writes them
            continue
        d.mkdir(parents=True)
        (d / "result.json").write_text(json.dumps(r), encoding="utf-8")
        for g in r.get("grids") or []:
            (d / g).parent.mkdir(exist_ok=True)
            shutil.copy(GRID, d / g)
        if failed_repeat and r.get("repeats") is not None:
            (d / "r2").mkdir()
            (d / "r2" / "result.json").write_text(json.dumps(dict(r, status="failed", repeats=None,
                                                                  error={"type": "RepeatError", "message": MARK})))
        written[d] = r
    return [s for s in sources if s.exists()], written


# ------------------------------------------------------------------ checks
ALLOWED_TAGS = {"html", "head", "meta", "title", "style", "body", "div", "nav", "strong", "ol", "li", "a", "main", "h1",
                "h2", "h3", "section", "table", "thead", "tr", "th", "tbody", "td", "p", "ul", "figure", "img",
                "figcaption", "details", "summary", "pre", "code", "em", "footer", "script",
                # what the author's Markdown notes may become (mistune, raw HTML escaped): "> quote" is a blockquote
                "blockquote", "br", "hr", "del", "h4", "h5", "h6"}


class Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.bad_attrs, self.scripts = set(), [], 0
        self.rows, self.cell, self.run = [], None, None

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.scripts += tag == "script"
        for k, v in attrs:
            v = str(v).strip().lower()
            if k.startswith("on") or (k == "href" and v.startswith(("javascript:", "data:", "vbscript:"))) \
                    or (k == "src" and not v.startswith("data:image/")):
                self.bad_attrs.append((tag, k, v))
        a = dict(attrs)
        if tag == "tr":
            self.run = a.get("data-run")
            self.rows.append({"run": self.run, "cells": []})
        elif tag == "td" and self.rows:
            self.cell = {"t": "", "v": a.get("data-v")}

    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None:
            self.rows[-1]["cells"].append(self.cell)
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell["t"] += data


def table_rows(html, table_id):
    """{data-run: {header: cell}} of one table."""
    start = html.find(f'<table id="{table_id}"')
    if start < 0:
        return {}
    part = html[start:html.index("</table>", start)]
    heads = [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<th[^>]*>(.*?)</th>", part)]
    p = Page()
    p.feed(part)
    import html as h
    heads = [h.unescape(x) for x in heads]
    return {row["run"]: dict(zip(heads, row["cells"])) for row in p.rows if row["run"]}


class _Row(dict):
    """A table row by header; a column n/a in every row is left out of the table (issue #49)."""

    def __missing__(self, header):
        return {"v": None, "t": fmt.NA, "dropped": True}


def expect(c, value):
    """The cell shows the file's value: the number itself, or n/a / the recorded text;
    a column left out (n/a in every row): the file holds no number there either."""
    x = fmt.num(value)
    if c.get("dropped"):
        assert x is None, (c, value)
        return
    if x is None:
        assert c["v"] is None, (c, value)
        assert c["t"].startswith(fmt.NA if value in (None, "") else str(value)), (c, value)
    else:
        assert c["v"] is not None and float(c["v"]) == pytest.approx(x, rel=1e-12, abs=0), (c, value)


def _rate(r):
    x = fmt.num(r.get("samples_per_s"))
    return x if x is not None and x > 0 else None


def _expected_speed(d, r, written):
    """(samples/s, seconds per steady epoch) by the report's one estimator
    (frameval/speed.py, issue #49): the median over the folder's counted runs
    (status ok) of each run's rate, else the run's own; a steady epoch's
    samples over it."""
    from frameval.result.store import run_base
    runs = [x for e, x in written.items() if str(run_base(str(e))) == str(run_base(str(d)))]
    rates = [v for v in (_rate(x) for x in runs if x.get("status") == "ok") if v is not None] or \
        [v for v in [_rate(r)] if v is not None]
    sps = statistics.median(rates) if rates else None
    n = speed.epoch_samples(r.get("epochs") if isinstance(r.get("epochs"), list) else [],
                            (r.get("timing") or {}).get("windows") if isinstance(r.get("timing"), dict) else None,
                            (r.get("data") or {}).get("n_train") if isinstance(r.get("data"), dict) else None)
    return sps, speed.epoch_seconds(n, sps)


def check_figures(html, written, sources, S):
    seen = 0
    for d, r in written.items():
        wl = r.get("workload")
        src = next(s for s in sources if str(d).startswith(str(s) + "/"))
        rid = f"{src.name}/{d.relative_to(src / 'runs').as_posix()}"
        row = table_rows(html, f"table-{wl}").get(rid)
        assert row is not None, (rid, wl)
        seen += 1
        row = _Row(row)
        expect(row[S("col_first_epoch")], r.get("first_epoch_s"))
        expect(row[S("col_peak_rss")], training_mb(r))  # what training added (#67)
        expect(row[S("col_rss_import")], r.get("rss_after_import_mb"))
        if r.get("status") in ("ok", "check_failed"):
            sps, steady = _expected_speed(d, r, written)
            for h, want in ((S("col_samples_per_s"), sps), (S("col_steady"), steady)):
                got = row[h]["v"]
                assert (got is None) == (want is None) or (row[h].get("dropped") and want is None), (h, row[h], want)
                if want is not None:
                    assert float(got) == pytest.approx(want, rel=1e-9), (h, row[h], want)
        if wl == "lenet":
            acc = r.get("test_acc") if r.get("test_acc") is not None else next(
                (e.get("test_acc") for e in reversed(r.get("epochs") or []) if "test_acc" in e), None)
            expect(row[S("col_test_acc")], acc)
        if wl == "gpt":
            em = r.get("exact_match") if r.get("exact_match") is not None else next(
                (e.get("exact_match") for e in reversed(r.get("epochs") or []) if "exact_match" in e), None)
            expect(row[S("col_exact_match")], em)
        if wl == "lstm":
            expect(row[S("col_val_r2")], r.get("val_r2"))
        if wl == "dcgan":
            expect(row[S("col_gen_loss")], next((e.get("gen_loss") for e in reversed(r.get("epochs") or [])
                                                 if "gen_loss" in e), None))
        status = row[S("col_status")]["t"]
        if r.get("status") == "check_failed":
            assert S("status_check_failed") in status
        elif r.get("status") != "ok":
            assert S("status_failed") in status
    assert seen == len(written)


def check_escaped_html(html):
    p = Page()
    p.feed(html)
    assert p.tags <= ALLOWED_TAGS, p.tags - ALLOWED_TAGS
    assert p.scripts == 1 and not p.bad_attrs, p.bad_attrs
    assert MARK not in html


def _prose(md):
    return re.sub(r"(?ms)^(`{3,})[^\n]*\n.*?^\1[ \t]*$", "", md)


def check_escaped_md(md):
    prose = _prose(md)
    tags = {t.lower() for t in re.findall(r"<\s*/?\s*([A-Za-z][\w-]*)", prose)}
    assert tags <= {"a", "details", "summary", "br"}, tags
    assert "](javascript" not in prose.replace("\\]", "")
    # every row of a Markdown table has as many cell separators as its header
    for block in re.split(r"\n(?!\|)", prose):
        lines = [x for x in block.split("\n") if x.startswith("|")]
        counts = {len(re.findall(r"(?<!\\)\|", x)) for x in lines}
        assert len(counts) <= 1, lines


# ------------------------------------------------------------------ the property
@pytest.fixture(autouse=True)
def quick_charts(monkeypatch):
    """Charts are drawn in full (every artist, so a value an axis cannot hold
    still fails) but saved small: the run stays well under a minute."""
    from frameval.report import charts

    def save(self, fig, name):
        fname = f"{self.prefix}{name}.png"
        try:
            fig.savefig(self.assets / fname, dpi=12)
        finally:
            charts.plt.close(fig)
        return fname
    monkeypatch.setattr(charts.Charts, "_save", save)


# The same 25 examples every run (derandomize), so that CI's verdict on a change
# does not depend on the draw; FRAMEVAL_FUZZ_EXPLORE=1 draws new ones (a failure
# prints the example to add to the fixed set, with its blob).
@settings(max_examples=25, deadline=None, database=None, print_blob=True,
          derandomize=not os.environ.get("FRAMEVAL_FUZZ_EXPLORE"),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
@given(result_sets())
def test_collector_always_writes_a_faithful_escaped_report(data):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sources, written = write_sets(root, data)
        notes = root / "notes.md"
        notes.write_text(data["notes"], encoding="utf-8")
        info = report.build(sources, root / "out", lang=data["lang"], title=data["title"], author=data["title"],
                            notes_file=str(notes), name="report")
        html = Path(info["html"]).read_text(encoding="utf-8")
        md = Path(info["md"]).read_text(encoding="utf-8")
        assert info["problems"] == [], info["problems"]
        report.finish(info)
        check_escaped_html(html)
        check_escaped_md(md)
        check_figures(html, written, sources, Strings(data["lang"]))
        for f in (root / "out" / "assets").iterdir():
            assert f.stat().st_size > 0


def test_one_epoch_dcgan_and_all_runs_failed(tmp_path):
    """The examples of the issue, spelled out: a DCGAN of one epoch (one grid, no
    steady epoch) and a folder where every run failed."""
    d = tmp_path / "a" / "runs" / "torch" / "dcgan-graph"
    (d / "grids").mkdir(parents=True)
    shutil.copy(GRID, d / "grids" / "epoch_001.png")
    (d / "result.json").write_text(json.dumps({"framework": "torch", "workload": "dcgan", "mode": "graph", "status": "ok",
                                               "epochs": [{"epoch": 1, "seconds": 3.0, "gen_loss": 0.7, "disc_loss": 1.4}],
                                               "first_epoch_s": 3.0, "steady_epoch_s": None,
                                               "grids": ["grids/epoch_001.png"]}))
    f = tmp_path / "a" / "runs" / "mxnet" / "lstm-graph"
    f.mkdir(parents=True)
    (f / "result.json").write_text(json.dumps({"framework": "mxnet", "workload": "lstm", "mode": "graph", "status": "failed",
                                               "error": {"type": "MXNetError", "message": MARK}}))
    info = report.build([tmp_path / "a"], tmp_path / "out")
    assert info["problems"] == []
    html = Path(info["html"]).read_text(encoding="utf-8")
    assert html.count('src="data:image/gif;base64,') == 1
    check_escaped_html(html)
    check_escaped_md(Path(info["md"]).read_text(encoding="utf-8"))
    assert math.isfinite(info["runs"]) and info["runs"] == 2 and info["failed"] == 1

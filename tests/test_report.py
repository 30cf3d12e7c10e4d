"""The report against a fixture of result files (tests/fixtures/report/, made by
tests/fixtures/make_report_fixture.py): a failed run whose message holds a
<script>, a DCGAN parameter mismatch, the two-bias LSTM, a failed numerical
check, a run with status check_failed, repeats, a reused result, a second
machine, the newer fields (graph scope, threads in effect, declared settings,
memory levels) and a merged report of two sizes of the same run. Then the
collector notebook through papermill, and the HTML in headless Chromium; a part
that fails to draw (issue 19). The fuzz tests are in test_collector_fuzz.py."""
from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

import jinja2  # noqa: E402,F401
import matplotlib  # noqa: E402,F401

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from frameval.commands.test import TEST_OUTPUT  # noqa: E402

from frameval import report  # noqa: E402
from frameval.report import fmt  # noqa: E402
from frameval import workloads  # noqa: E402
from frameval.report import i18n  # noqa: E402
from frameval.report.i18n import Strings  # noqa: E402
from conftest import training_mb  # noqa: E402

FIX = REPO / "tests" / "fixtures" / "report"
SOURCES = [FIX / "cpu", FIX / "gpu"]
TORCH_LENET = FIX / "cpu" / "runs" / "torch" / "lenet-graph"
TITLE = "Bench <script>alert('title')</script> & co"
XSS = '<script>alert("pwned")</script>'
NOTES = "# Notes\n\nThe author's **own** words. <script>alert('notes')</script>\n\n![remote](http://example.com/x.png)\n"
# Kept for a person to look at after `run_all.py test` (not the system temp folder).
SHOTS = TEST_OUTPUT / "screenshots"
SCREENSHOT = SHOTS / "frameval-report-screenshot.png"
CJK = re.compile(r"[\u4e00-\u9fff]")


def results():
    out = {}
    for f in sorted(f for src in SOURCES for f in src.glob("runs/*/*/result.json")):
        r = json.loads(f.read_text())
        out[(r["framework"], r["workload"], r["mode"], r["device"])] = r
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    notes = out / "notes.md"
    notes.write_text(NOTES)
    res = {}
    for lang in ("en", "zh"):
        info = report.build(SOURCES, out, lang=lang, title=TITLE, author="A. Reviewer", notes_file=str(notes),
                            name=f"report-{lang}", command=f"python3 run_all.py --lang {lang}")
        res[lang] = {"info": info, "html": Path(info["html"]).read_text(encoding="utf-8"),
                     "md": Path(info["md"]).read_text(encoding="utf-8")}
    res["out"] = out
    return res


# ------------------------------------------------------------------ HTML tables
class Tables(HTMLParser):
    """{table id: {"headers": [...], "rows": [[{"text", "v", "cls"}]]}}"""

    def __init__(self):
        super().__init__()
        self.tables, self.cur, self.cell, self.in_head = {}, None, None, False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.cur = self.tables.setdefault(a.get("id") or f"t{len(self.tables)}", {"headers": [], "rows": []})
        elif self.cur is not None and tag == "thead":
            self.in_head = True
        elif self.cur is not None and tag == "tr" and not self.in_head:
            self.cur["rows"].append([])
        elif self.cur is not None and tag in ("td", "th"):
            self.cell = {"text": "", "v": a.get("data-v"), "cls": a.get("class") or "", "href": None}
        elif self.cell is not None and tag == "a":
            self.cell["href"] = a.get("href")

    def handle_endtag(self, tag):
        if tag == "table":
            self.cur = None
        elif tag == "thead":
            self.in_head = False
        elif tag in ("td", "th") and self.cell is not None and self.cur is not None:
            if self.in_head:
                self.cur["headers"].append(self.cell["text"].strip())
            else:
                if not self.cur["rows"]:
                    self.cur["rows"].append([])
                self.cur["rows"][-1].append(self.cell)
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell["text"] += data


def tables(html):
    p = Tables()
    p.feed(html)
    return p.tables


def col(table, header):
    return table["headers"].index(header)


def strip_fences(md):
    return re.sub(r"(?ms)^(`{3,})[^\n]*\n.*?^\1\s*$", "", md)


# ------------------------------------------------------------------ tests
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_section_appears(built, lang):
    S = Strings(lang)
    html, md = built[lang]["html"], built[lang]["md"]
    for sid in ("metadata", "summary", "environment", "wl-lenet", "wl-dcgan", "wl-lstm", "audit", "check", "code",
                "errors", "reproduce", "author-notes"):
        assert f'id="{sid}"' in html, sid
    for key in ("h_metadata", "h_summary", "h_environment", "wl_lenet", "wl_dcgan", "wl_lstm", "h_audit", "h_check",
                "h_code", "h_errors", "h_reproduce", "h_notes", "h_machines", "h_env_frameworks", "h_freeze",
                "h_findings_speed", "h_findings_memory", "h_findings_quality", "h_findings_other",
                "h_gifs", "h_grids", "h_prediction", "h_specs"):
        heading = fmt.md(S(key))
        assert re.search(rf"^#+ {re.escape(heading)}\s*$", md, re.M), (key, heading)
    # order (issue 49: the verdict first; method, audit, check and environment after the results):
    # verdict, metadata, summary, workloads, audit, check, environment, code size, errors, reproduce
    pos = [html.index(f'<section id="{s}"') for s in ("verdict", "metadata", "summary", "wl-lenet", "wl-dcgan", "wl-lstm",
                                                      "audit", "check", "environment", "code", "errors", "reproduce")]
    assert pos == sorted(pos)
    # table of contents, collapsible freeze, metadata fields
    assert '<nav class="toc"' in html and "<details>" in html
    for key in ("meta_title", "meta_author", "meta_date", "meta_frameval", "meta_frameworks", "meta_device"):
        assert S(key) in html
    assert "04a8c91deadb" in html and "PyTorch 2.13.0+cpu" in html and "TensorFlow 2.16.2" in html
    assert 'href="packages/torch.txt"' in html  # the freeze, beside the report (tests/test_report_layout.py)
    assert "python3 run_all.py --lang " + lang in html  # the reproduce command


def test_strings_complete_in_both_languages():
    # the shared words and every workload folder's own (frameval/workloads/<wl>/strings/)
    en, zh = i18n._load("en", str(i18n.TEMPLATES)), i18n._load("zh", str(i18n.TEMPLATES))
    assert set(en) == set(zh)
    for folder in workloads.folders():
        own = {lang: json.loads((folder / "strings" / f"{lang}.json").read_text()) for lang in i18n.LANGS}
        assert set(own["en"]) == set(own["zh"]) and f"wl_{folder.name}" in own["en"], folder.name
    untranslated = [k for k in en if CJK.search(en[k])]
    assert not untranslated
    # every heading of the Chinese report is Chinese
    for k in ("h_metadata", "h_summary", "h_environment", "h_audit", "h_check", "h_code", "h_errors", "h_reproduce"):
        assert CJK.search(zh[k]), k
    # placeholders agree
    ph = re.compile(r"\{(\w+)\}")
    for k in en:
        assert set(ph.findall(en[k])) == set(ph.findall(zh[k])), k


def test_a_workload_may_not_redefine_a_shared_word(tmp_path, monkeypatch):
    (tmp_path / "strings").mkdir()
    (tmp_path / "strings" / "en.json").write_text(json.dumps({"col_framework": "Framework", "wl_lenet": "mine"}))
    i18n._load.cache_clear()
    try:
        with pytest.raises(ValueError, match="lenet/strings/en.json redefines wl_lenet"):
            i18n._load("en", str(tmp_path))
    finally:
        i18n._load.cache_clear()


def test_figures_equal_the_results(built):
    res = results()
    S = Strings("en")
    t = tables(built["en"]["html"])
    names = {"PyTorch": "torch", "TensorFlow": "tensorflow", "MXNet": "mxnet"}
    checked = 0
    for wl in ("lenet", "dcgan", "lstm"):
        tab = t[f"table-{wl}"]
        for row in tab["rows"]:
            fw = names[row[col(tab, S("col_framework"))]["text"]]
            mode = row[col(tab, S("col_mode"))]["text"]
            dev = row[col(tab, S("col_device"))]["v"] if S("col_device") in tab["headers"] else "cpu"
            r = res[(fw, wl, mode, dev)]

            def v(header):
                c = row[col(tab, header)]
                return None if c["v"] is None else float(c["v"])

            # one estimator (issue #49): a steady epoch's samples over the row's samples/s, the median
            # over its runs' rates (tests/test_report_figures.py recomputes every one at the printed precision)
            runs = [r] + [json.loads(f.read_text()) for src in SOURCES
                          for f in sorted(src.glob(f"runs/{fw}/{wl}-{mode}/r*/result.json"))
                          if dev == "cpu" and src.name == "cpu"]
            rates = [x["samples_per_s"] for x in runs if x["status"] == "ok" and x.get("samples_per_s")] \
                or ([r["samples_per_s"]] if r.get("samples_per_s") else [])
            n = statistics.median(e["samples"] for e in r["epochs"][1:]) if len(r.get("epochs") or []) > 1 else None
            steady = n / statistics.median(rates) if rates and n else None
            assert v(S("col_first_epoch")) == r["first_epoch_s"]
            assert v(S("col_steady")) == pytest.approx(steady)
            if S("col_peak_rss") in tab["headers"]:  # what training added (#67): n/a in every row leaves it out
                assert v(S("col_peak_rss")) == training_mb(r)
            assert v(S("col_rss_import")) == r["rss_after_import_mb"]
            assert v(S("col_params")) == sum(r["param_counts"].values())
            if r["status"] in ("ok", "check_failed"):
                assert v(S("col_samples_per_s")) == pytest.approx(statistics.median(rates))
            if steady is not None:
                assert fmt.seconds(steady) in row[col(tab, S("col_steady"))]["text"]
            if wl == "lenet":
                assert v(S("col_test_acc")) == r["test_acc"]
                assert row[col(tab, S("col_test_acc"))]["text"] == fmt.percent(r["test_acc"])
            if wl == "dcgan":
                assert v(S("col_gen_loss")) == r["epochs"][-1]["gen_loss"]
                assert v(S("col_fid")) == r.get("fid")  # TensorFlow's older result has none: n/a, not 0
                if "fid" not in r:
                    assert row[col(tab, S("col_fid"))]["text"] == S("na")
                assert v(S("col_disc_loss")) == r["epochs"][-1]["disc_loss"]
            if wl == "lstm" and r["status"] == "ok":
                for h, k in (("col_val_r2", "val_r2"), ("col_val_rmse", "val_rmse"), ("col_predict_ms", "predict_ms"),
                             ("col_model_size", "model_bytes"), ("col_load_ms", "load_ms")):
                    assert v(S(h)) == r[k], k
            checked += 1
    assert checked == len(res)
    # the ratio to the fastest: LeNet on the CPU, TensorFlow is fastest
    tab = t["table-lenet"]
    ratios = {(row[0]["text"], row[2]["text"], row[3]["text"]): row[col(tab, S("col_vs_fastest"))] for row in tab["rows"]}
    assert ratios[("TensorFlow", "graph", "CPU")]["text"] == "1.00×"
    torch_eager = res[("torch", "lenet", "eager", "cpu")]["steady_epoch_s"]
    tf = res[("tensorflow", "lenet", "graph", "cpu")]["steady_epoch_s"]
    assert float(ratios[("PyTorch", "eager", "CPU")]["v"]) == pytest.approx(torch_eager / tf)
    # the Markdown carries the same figures
    md = built["en"]["md"]
    for (fw, wl, mode, dev), r in res.items():
        if r.get("first_epoch_s") is not None:
            assert fmt.seconds(r["first_epoch_s"]) in md


def test_not_measured_is_na_never_zero(built):
    S = Strings("en")
    t = tables(built["en"]["html"])
    tab = t["table-lstm"]
    assert S("col_peak_device") not in tab["headers"]  # n/a in every row (CPU runs): left out
    # these old LSTM results record no levels (torch's 415 MB is a whole process's peak): what training
    # added is n/a in every row, never the level and never 0, so the column is left out too
    assert S("col_peak_rss") not in tab["headers"]
    for row in tab["rows"]:
        name = row[0]["text"]
        if name == "MXNet" and S("col_peak_rss") in tab["headers"]:  # peak RSS was not recorded
            assert row[col(tab, S("col_peak_rss"))]["text"] == "n/a"
        if name == "TensorFlow":  # the failed run
            assert row[col(tab, S("col_steady"))]["text"] == "n/a"
            assert row[col(tab, S("col_val_r2"))]["text"] == "n/a"
    gpu = [r for r in t["table-lenet"]["rows"] if r[3]["text"] == "GPU"][0]
    assert float(gpu[col(t["table-lenet"], S("col_peak_device"))]["v"]) == 123.4
    assert fmt.mb(None) == "n/a" and fmt.seconds("nan") == "nan" and fmt.mb(0.0) == "0"


def test_parameter_mismatch_is_flagged(built):
    S = Strings("en")
    t = tables(built["en"]["html"])
    audit = t["audit-dcgan"]
    gen = [r for r in audit["rows"] if r[0]["text"] == S("audit_params", net="generator")][0]
    tf = gen[audit["headers"].index("TensorFlow graph @alpha")]
    assert tf["cls"] == "flag" and "2,330,944" in tf["text"]
    assert gen[-1]["cls"] == "flag"
    torch = gen[audit["headers"].index("PyTorch graph @alpha")]
    assert torch["cls"] == "ok"
    # a setting that differs between frameworks is flagged too
    slope = [r for r in audit["rows"] if r[0]["text"] == S("set_leaky_relu")][0]
    # only the value that differs from the spec's 0.2 is marked (issue #49: every flag informative)
    assert slope[-1]["cls"] == "flag" and [c["cls"] for c in slope[2:-1]] == ["", "flag"]
    # the workload table marks the count; the summary states it
    dc = t["table-dcgan"]
    cell = [r for r in dc["rows"] if r[0]["text"] == "TensorFlow"][0][col(dc, S("col_params"))]
    assert cell["cls"] == "flag"
    html = built["en"]["html"]
    assert re.search(r'<li class="flag">[^<]*2,330,944[^<]*2,280,896', html)
    assert "⚠️ **✗ 2,330,944**" in built["en"]["md"]
    # the two-bias LSTM is explained, not flagged
    lstm = t["audit-lstm"]
    row = [r for r in lstm["rows"] if r[0]["text"] == S("audit_params", net="lstm")][0]
    mx = row[lstm["headers"].index("MXNet graph @alpha")]
    assert mx["cls"] == "warn" and "4,513" in mx["text"]
    assert row[-1]["cls"] == "ok"
    assert S("two_bias").split(":")[0] in html
    # an older result that says compiled=False without a graph scope: what was
    # compiled is not known, so it is said so, not flagged as "not compiled"
    comp = [r for r in lstm["rows"] if r[0]["text"] == S("audit_compiled")][0]
    cell = comp[lstm["headers"].index("PyTorch graph @alpha")]
    assert cell["text"] == S("label_scope_not_recorded") and cell["cls"] == "na"


def test_failure_in_errors_summary(built):
    S = Strings("en")
    html, md, out = built["en"]["html"], built["en"]["md"], built["out"]
    errors = html[html.index('<section id="errors">'):html.index('<section id="reproduce">')]
    assert "TensorFlow" in errors and S("wl_lstm") in errors and "graph" in errors
    assert "InvalidArgumentError" in errors
    assert "Graph execution error: &lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt; shapes [32,20] vs [32,1]" in errors
    assert "tensorflow.errors.InvalidArgumentError" in errors  # the traceback's last lines
    href = re.search(r'<a href="([^"]+output\.ipynb)"', errors).group(1)
    assert (out / href).resolve() == (FIX / "cpu/runs/tensorflow/lstm-graph/output.ipynb").resolve()
    # the summary says what failed
    assert re.search(r'<li class="flag">[^<]*TensorFlow graph @alpha / LSTM[^<]*InvalidArgumentError', html)
    mderr = md[md.index('<a name="errors">'):md.index('<a name="reproduce">')]
    assert "InvalidArgumentError" in mderr and 'alert("pwned")' in mderr and "output.ipynb" in mderr
    zh = built["zh"]["html"]
    assert "报错汇总" in zh and "InvalidArgumentError" in zh


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_script_in_title_or_error_is_escaped(built, lang):
    html, md = built[lang]["html"], built[lang]["md"]
    assert html.count("<script") == 1  # the report's own sorting script, under a CSP hash
    assert "<title>Bench &lt;script&gt;alert(&#39;title&#39;)&lt;/script&gt; &amp; co</title>" in html
    assert "&lt;script&gt;alert(&#34;pwned&#34;)" in html
    assert re.search(r"&lt;script&gt;alert\((&#39;|')notes", html)  # the author's notes: Markdown, HTML escaped
    assert 'src="http' not in html and "href=\"javascript" not in html
    assert "script-src 'sha256-" in html
    prose = strip_fences(md)
    assert "<script" not in prose.lower()
    assert "# Bench &lt;script&gt;alert('title')&lt;/script&gt; &amp; co" in md
    # inside a fenced block the message is shown verbatim (GitHub renders it as text)
    assert 'Graph execution error: <script>alert("pwned")</script>' in md


def test_same_function_section(built):
    S = Strings("en")
    t = tables(built["en"]["html"])["table-check"]
    rows = {(r[0]["text"], r[1]["text"]): r for r in t["rows"]}
    lenet = col(t, S("wl_lenet"))
    assert rows[("TensorFlow @alpha", "graph")][lenet]["cls"] == "flag"
    assert rows[("TensorFlow @alpha", "graph")][lenet]["text"].startswith("✗")
    assert rows[("PyTorch @alpha", "graph")][lenet]["text"].startswith("✓")
    assert re.search(r'<li class="flag">[^<]*numerical check ✗[^<]*TensorFlow graph @alpha', built["en"]["html"])


def test_repeats_reused_and_machines(built):
    S = Strings("en")
    t = tables(built["en"]["html"])
    lstm = t["table-lstm"]
    eager = [r for r in lstm["rows"] if r[0]["text"] == "PyTorch" and r[2]["text"] == "eager"][0]
    assert S("status_noisy") in eager[col(lstm, S("col_status"))]["text"]
    assert "[n=3]" in eager[col(lstm, S("col_steady"))]["text"] and "2.00–2.60" in eager[col(lstm, S("col_steady"))]["text"]
    lenet = t["table-lenet"]
    tf = [r for r in lenet["rows"] if r[0]["text"] == "TensorFlow"][0]
    assert S("status_reused") in tf[col(lenet, S("col_status"))]["text"]
    assert S("col_host") in lenet["headers"]
    assert {r[col(lenet, S("col_host"))]["text"] for r in lenet["rows"]} == {"alpha", "gpubox"}
    machines = t["table-machines"]
    assert {r[0]["text"] for r in machines["rows"]} == {"alpha", "gpubox"}
    # repeats exist, so the "Same seed twice" column does: torch's two LeNet runs have equal losses, epoch by epoch
    runs = [json.loads((d / "result.json").read_text()) for d in (TORCH_LENET, TORCH_LENET / "r2")]
    assert [e["train_loss"] for e in runs[0]["epochs"]] == [e["train_loss"] for e in runs[1]["epochs"]]
    torch = [r for r in lenet["rows"] if r[0]["text"] == "PyTorch" and r[2]["text"] == "graph"][0]
    assert torch[col(lenet, S("col_determinism"))]["text"] == S("det_identical", n=1)
    assert all(r[col(lenet, S("col_determinism"))]["text"] == "n/a" for r in lenet["rows"] if r is not torch)


def test_media_code_size_and_charts(built):
    import imageio.v3 as iio
    out = built["out"]
    gifs = sorted((out / "assets").glob("report-en-dcgan-*.gif"))
    assert len(gifs) == 2
    frames = iio.imread(gifs[0], index=None)
    assert frames.shape[0] == 2  # one frame per epoch
    assert len(list((out / "assets").glob("report-en-dcgan-*-final.png"))) == 2
    assert (out / "assets" / "report-en-lstm-prediction.png").exists()
    md = built["en"]["md"]
    for img in re.findall(r"!\[[^\]]*\]\((assets/[^)]+)\)", md):
        assert (out / img).is_file(), img
    html = built["en"]["html"]
    assert html.count('src="data:image/gif;base64,') == 2
    # every chart made it into the HTML as a data URI
    assert len(re.findall(r"<img src=\"data:image/", html)) == len(re.findall(r"!\[[^\]]*\]\(assets/", md))
    # code size comes from the repository's notebooks (cells tagged model/train)
    from frameval.notebook import count_code_lines, read
    code = tables(html)["table-code"]
    torch = [r for r in code["rows"] if r[0]["text"] == "PyTorch"][0]
    n = count_code_lines(read(REPO / "notebooks" / "torch" / "lenet.ipynb"))
    assert torch[1]["text"] == str(n)
    # a count links to the notebook its run executed, inside the report folder (it travels with the
    # report), never to the clone's source notebook, a path outside the folder (#67)
    href = torch[1]["href"]
    assert href is None or ((out / href).resolve().is_file() and out.resolve() in (out / href).resolve().parents), href
    assert built["en"]["info"]["missing_glyphs"] == []


def test_chinese_charts_have_their_glyphs(built):
    info = built["zh"]["info"]
    assert info["font"], "no CJK font for the charts (mplfonts is in environment.yml)"
    assert info["missing_glyphs"] == []
    assert not any("CJK" in w or "中文字体" in w for w in info["warnings"])
    html = built["zh"]["html"]
    assert '<html lang="zh-CN">' in html
    assert "公平性审查" in html and "最快的是" in html


def test_no_results_still_writes_a_report(tmp_path):
    info = report.build([tmp_path / "empty"], tmp_path / "out", lang="zh")
    html = Path(info["html"]).read_text(encoding="utf-8")
    assert info["runs"] == 0 and info["warnings"]
    assert 'id="summary"' in html and 'id="reproduce"' in html


def test_collect_notebook(tmp_path):
    from frameval.notebook import has_outputs, parameters, read
    nb = read(REPO / "notebooks" / "collect.ipynb")
    assert not has_outputs(nb)
    assert parameters(nb) == {"sources": [], "out_dir": "", "lang": "en", "title": "", "author": "",
                              "notes_file": "", "name": "report", "command": "", "threshold": 0.10}
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    params = {"sources": [str(s) for s in SOURCES], "out_dir": str(tmp_path), "lang": "zh", "name": "col",
              "title": TITLE}
    pfile = tmp_path / "params.json"
    pfile.write_text(json.dumps(params))
    env = dict(os.environ, FRAMEVAL_REPO=str(REPO),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")])))
    p = subprocess.run([sys.executable, "-m", "papermill", str(REPO / "notebooks" / "collect.ipynb"),
                        str(tmp_path / "collect.ipynb"), "-f", str(pfile), "-k", "python3", "--cwd", str(tmp_path),
                        "--no-progress-bar"], capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    html = (tmp_path / "col.html").read_text(encoding="utf-8")
    assert "公平性审查" in html and (tmp_path / "col.md").exists() and (tmp_path / "assets").is_dir()


# ------------------------------------------------------------------ the browser
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_browser_renders_report(built, lang, tmp_path):
    """The system browser is installed by `run_all.py test` before pytest
    starts (frameval/testtools.py); missing, it is a failure, not a skip."""
    from frameval.testtools import INSTALL, chromium_path
    assert chromium_path(), f"no chromium to open the report in; install it: {INSTALL}"
    from report_page import inspect
    info = inspect(Path(built[lang]["info"]["html"]), tmp_path / "shots")
    imgs = info["images"]
    assert imgs and all(i["w"] > 0 and i["h"] > 0 for i in imgs), [i for i in imgs if not i["w"]]
    assert info["external_requests"] == [], info["external_requests"]
    assert all(u.startswith(("file://", "data:")) for u in info["requests"])
    assert not info["failed_loads"], info["failed_loads"]
    assert info["sort_works"] is True  # the inline script ran under the page's CSP
    assert info["phone_fits"] is True  # no sideways scrolling of the page at phone width
    assert info["sections"][:3] == ["verdict", "metadata", "summary"]  # issue 49: the verdict first
    text = info["text"]
    if lang == "zh":
        assert len(CJK.findall(text)) > 500
        assert "报告信息" in text and "摘要" in text and "报错汇总" in text
    assert "<script>alert(\"pwned\")</script>" in text  # shown as text, not run
    shot = Path(info["screenshots"]["desktop"])
    assert shot.stat().st_size > 10_000
    if lang == "zh":
        SHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, SCREENSHOT)
        shutil.copy(info["screenshots"]["phone"], SCREENSHOT.with_name("frameval-report-screenshot-phone.png"))


def test_chinese_page_draws_its_text_without_a_cjk_font(built, tmp_path):
    """A reader with no CJK font at all (Chromium given Latin fonts only) sees
    every Chinese character of the zh page drawn, not a box: the page embeds
    what it needs. Each character is drawn in its element's font and compared
    with a character no font has (tests/report_page.py, GLYPH_CHECK)."""
    from frameval.testtools import INSTALL, chromium_path
    assert chromium_path(), f"no chromium to open the report in; install it: {INSTALL}"
    from report_page import inspect
    info = inspect(Path(built["zh"]["info"]["html"]), tmp_path / "shots", fonts="bare")
    SHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(info["screenshots"]["desktop"], SCREENSHOT.with_name("frameval-report-screenshot-bare.png"))
    glyphs = info["glyphs"]
    assert len(glyphs["checked"]) > 300, glyphs
    missing = glyphs["missing"]
    assert not missing, f"{len(missing)} of {len(glyphs['checked'])} characters drawn as boxes: {missing[:80]}"
    assert info["external_requests"] == [] and not info["failed_loads"], info["failed_loads"]


def test_the_browser_checks_can_fail(tmp_path):
    """The browser's two refusals work: a page that reaches for the network
    has that request listed (and refused), and Chinese text with no font that
    has it is found drawn as boxes by the bare-font check."""
    page = tmp_path / "bad.html"
    page.write_text('<!doctype html><html><head><meta charset="utf-8"></head><body>'
                    '<p style="font-family: sans-serif">中文字</p>'
                    '<img src="http://example.invalid/x.png" alt="x"></body></html>', encoding="utf-8")
    from report_page import inspect
    info = inspect(page, fonts="bare")
    assert info["external_requests"] == ["http://example.invalid/x.png"], info["requests"]
    assert set(info["glyphs"]["missing"]) == set("中文字"), info["glyphs"]


def test_check_cell_names_the_failing_tensors():
    from frameval.report.check import check_cell
    S = Strings("en")
    chk = {"forward": {"fake": 6e-7}, "losses": {"d_loss": 5e-8}, "step": {"generator.bn0.bias": 0.123,
                                                                          "generator.fc.weight": 3.6e-4},
           "tolerances": {"forward": 1e-4, "step": 1e-3, "losses": 1e-4}, "problems": [], "missing": [],
           "ok": False, "max_forward_err": 6e-7, "max_step_err": 0.123}
    c = check_cell(chk, S)
    assert c["cls"] == "flag" and "generator.bn0.bias 1.2e-01" in c["t"] and "fc.weight" not in c["t"]
    assert check_cell(dict(chk, ok=None, missing=["step"]), S)["cls"] == "warn"
    assert check_cell(None, S)["t"] == "n/a"


# ------------------------------------------------------------------ the report is never lost (issue 19)
def test_single_epoch_gif(tmp_path):
    """One DCGAN epoch: one grid, a still GIF (a list of durations made Pillow raise)."""
    import imageio.v3 as iio
    from frameval.report.charts import make_gif
    grid = FIX / "cpu/runs/torch/dcgan-graph/grids/epoch_001.png"
    gif = make_gif([grid], tmp_path / "one.gif")
    assert gif and iio.imread(gif, index=None).shape[0] == 1


def _section(html, start, end):
    return html[html.index(start):html.index(end)]


@pytest.mark.parametrize("fault, what", [("GIF", "the training GIF of PyTorch graph @alpha"),
                                         ("the table “Fairness audit · DCGAN", "the table “Fairness audit · DCGAN"),
                                         ("the section “LSTM", "the section “LSTM (CO2 time series)”"),
                                         ("the chart “LeNet-5 (MNIST classification): metrics", "the chart “LeNet-5")])
def test_a_part_that_fails_is_shown_and_the_rest_written(tmp_path, monkeypatch, fault, what):
    monkeypatch.setenv("FRAMEVAL_REPORT_FAULT", fault)
    info = report.build(SOURCES, tmp_path, lang="en", title=TITLE)
    html = Path(info["html"]).read_text(encoding="utf-8")
    md = Path(info["md"]).read_text(encoding="utf-8")
    assert info["problems"] and all(p.startswith("could not draw " + what[:20]) for p in info["problems"]), info["problems"]
    reason = "RuntimeError: injected failure (FRAMEVAL_REPORT_FAULT="
    for text, esc in ((html, lambda t: t), (md, fmt.md)):
        assert text.count(esc("could not draw " + what[:20])) >= 2  # in place, and in the errors summary
        assert esc(reason) in text
    # named in the first lines and in the errors summary, in both files
    assert '<div class="flagbox alerts"' in html.split('<section id="metadata">')[0]
    assert f"{len(info['problems'])} part(s) of this report could not be drawn" in md.split('<a name="metadata">')[0]
    assert "could not draw" in _section(html, '<section id="errors">', '<section id="reproduce">')
    assert "could not draw" in _section(md, '<a name="errors">', '<a name="reproduce">')
    # the rest is there
    for sid in ("metadata", "summary", "environment", "audit", "check", "code", "errors", "reproduce"):
        assert f'id="{sid}"' in html
    assert html.count("<script") == 1 and "<script" not in strip_fences(md).lower()
    with pytest.raises(report.ReportIncomplete, match="could not draw"):
        report.finish(info)


def test_whole_report_failure_still_writes_a_page(tmp_path, monkeypatch):
    monkeypatch.setenv("FRAMEVAL_REPORT_FAULT", "报告")
    info = report.build(SOURCES, tmp_path, lang="zh", title=TITLE)
    html = Path(info["html"]).read_text(encoding="utf-8")
    assert "无法绘制报告" in html and "&lt;script&gt;" in html and "<script" not in html
    assert "无法绘制报告" in Path(info["md"]).read_text(encoding="utf-8")


def test_report_that_cannot_be_written_says_why_in_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(report.ReportError) as e:
        report.build(SOURCES, blocker / "out", lang="en")
    msg = str(e.value)
    assert msg.startswith("no report written: cannot create") and "\n" not in msg


def test_finish_passes_a_complete_report(built):
    report.finish(built["en"]["info"])
    assert built["en"]["info"]["problems"] == [] and built["zh"]["info"]["problems"] == []


def test_collect_notebook_exit_names_what_failed(tmp_path):
    """The collector writes the report, then exits non-zero naming the part it could not draw."""
    pfile = tmp_path / "params.json"
    pfile.write_text(json.dumps({"sources": [str(s) for s in SOURCES], "out_dir": str(tmp_path), "name": "col"}))
    env = dict(os.environ, FRAMEVAL_REPO=str(REPO), FRAMEVAL_REPORT_FAULT="GIF",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")])))
    p = subprocess.run([sys.executable, "-m", "papermill", str(REPO / "notebooks" / "collect.ipynb"),
                        str(tmp_path / "collect.ipynb"), "-f", str(pfile), "-k", "python3", "--cwd", str(tmp_path),
                        "--no-progress-bar"], capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode != 0
    last = [x for x in p.stderr.splitlines() if x.strip()][-1]
    assert last.startswith("ReportIncomplete: report written") and "could not draw the training GIF of PyTorch graph" in last, p.stderr[-2000:]
    assert "could not draw the training GIF" in (tmp_path / "col.html").read_text(encoding="utf-8")
    assert (tmp_path / "col.md").exists()


# ------------------------------------------------------------------ comparisons that hold up (issue 12)
def test_speed_is_ranked_by_samples_per_s(built):
    """Every "vs fastest" is the best samples/s over this run's, per device; a run
    whose check failed is shown but never the reference."""
    S = Strings("en")
    res = results()
    t = tables(built["en"]["html"])
    for wl in ("lenet", "dcgan", "lstm"):
        tab = t[f"table-{wl}"]
        rows = []
        for row in tab["rows"]:
            fw = {"PyTorch": "torch", "TensorFlow": "tensorflow", "MXNet": "mxnet"}[row[0]["text"]]
            dev = row[col(tab, S("col_device"))]["v"] if S("col_device") in tab["headers"] else "cpu"
            r = res[(fw, wl, row[2]["text"], dev)]
            # the run's own recorded rate: a repeat folds in by its own result's rate (none here), never by
            # rescaling this run's rate with the repeats' median epoch (speed.py: one estimate)
            sps = r.get("samples_per_s")
            rows.append((row, r, dev, sps))
        for row, r, dev, sps in rows:
            best = max((s for _, x, d, s in rows if d == dev and x["status"] == "ok" and s), default=None)
            c = row[col(tab, S("col_vs_fastest"))]
            if r["status"] == "failed" or not sps:
                assert c["text"] == "n/a"
            else:
                assert float(c["v"]) == pytest.approx(best / sps), (wl, r["framework"])
    lenet = t["table-lenet"]
    mx = [r for r in lenet["rows"] if r[0]["text"] == "MXNet"][0]
    assert float(mx[col(lenet, S("col_vs_fastest"))]["v"]) < 1  # faster, but its check failed: not the reference
    html = built["en"]["html"]
    assert "the fastest is TensorFlow graph @alpha, 316 samples/s (0.810 s per steady epoch)" in html
    assert "report-en-lenet-speed.png" not in html and S("chart_speed", workload=S("wl_lenet")) in html


def test_merged_runs_of_the_same_framework_are_told_apart(tmp_path):
    """Two PyTorch LeNet graph runs, 1,024 samples x 3 epochs and 4,000 x 5, at the
    same samples/s: labelled by what differs, ranked apart by size."""
    S = Strings("en")
    a, b = FIX / "merge_a", FIX / "merge_b"
    ra = json.loads((a / "runs/torch/lenet-graph/result.json").read_text())
    rb = json.loads((b / "runs/torch/lenet-graph/result.json").read_text())
    assert ra["samples_per_s"] == pytest.approx(rb["samples_per_s"]) and ra["steady_epoch_s"] != rb["steady_epoch_s"]
    info = report.build([a, b], tmp_path, lang="en")
    html, md = Path(info["html"]).read_text(encoding="utf-8"), Path(info["md"]).read_text(encoding="utf-8")
    tab = tables(html)["table-lenet"]
    assert S("col_variant") in tab["headers"]
    variants = [r[col(tab, S("col_variant"))]["text"] for r in tab["rows"]]
    assert variants == ["epochs=3, max_train_samples=1024, n_train=1024", "epochs=5, max_train_samples=4000, n_train=4000"]
    ratios = [r[col(tab, S("col_vs_fastest"))]["text"] for r in tab["rows"]]
    # two sizes are two rankings (the windows measured different work): each run is
    # the fastest of its own, and the summary names each ranking by its size
    assert ratios == ["1.00×", "1.00×"]
    assert [float(r[col(tab, S("col_steady"))]["v"]) for r in tab["rows"]] == [ra["steady_epoch_s"], rb["steady_epoch_s"]]
    audit = tables(html)["audit-lenet"]
    assert len(set(audit["headers"])) == len(audit["headers"])  # every run's column is named apart
    check = tables(html)["table-check"]
    assert len(check["rows"]) == 2 and check["rows"][0][0]["text"] != check["rows"][1][0]["text"]
    for n in ("1,024", "4,000"):
        assert S("size_suffix", n=n, batch="64") in html
    assert fmt.md("epochs=3, max_train_samples=1024") in md
    # the same run from two folders with nothing else different: told apart by the folder
    shutil.copytree(a, tmp_path / "copy")
    info = report.build([a, tmp_path / "copy"], tmp_path / "same", lang="en")
    tab = tables(Path(info["html"]).read_text(encoding="utf-8"))["table-lenet"]
    assert [r[col(tab, S("col_variant"))]["text"] for r in tab["rows"]] == ["merge_a", "copy"] and info["problems"] == []


def test_graph_scope_column_and_audit(built):
    S = Strings("en")
    t = tables(built["en"]["html"])
    dc = t["table-dcgan"]
    torch = [r for r in dc["rows"] if r[0]["text"] == "PyTorch"][0][col(dc, S("col_graph_scope"))]
    assert torch["text"] == "fwd+bwd (update eager) · 2 graph(s), 0 break(s)" and torch["cls"] == "warn"
    tf = [r for r in dc["rows"] if r[0]["text"] == "TensorFlow"][0][col(dc, S("col_graph_scope"))]
    assert tf["text"] == "n/a"  # an older result: not recorded, not guessed
    lenet = t["table-lenet"]
    cells = {(r[0]["text"], r[2]["text"]): r[col(lenet, S("col_graph_scope"))] for r in lenet["rows"] if r[3]["text"] == "CPU"}
    assert cells[("PyTorch", "eager")]["text"] == "—"
    assert cells[("PyTorch", "graph")]["text"].startswith("fwd+bwd+update") and cells[("PyTorch", "graph")]["cls"] == "ok"
    audit = t["audit-dcgan"]
    row = [r for r in audit["rows"] if r[0]["text"] == S("audit_graph_scope")][0]
    assert row[-1]["cls"] == "warn" and row[audit["headers"].index("PyTorch graph @alpha")]["text"].startswith("fwd+bwd (")
    html, md = built["en"]["html"], built["en"]["md"]
    why = "opt.step() runs eagerly: Adam on two models in one graph broke the graph"
    assert f'title="torch.compile of G and D forward — {why}"' in html  # the tooltip
    assert fmt.md(why) in md  # the footnote
    assert S("scope_forward") in built["en"]["md"] and "前向+反向" in built["zh"]["html"]


def test_check_failed_run_is_said_first_and_detailed(built):
    S = Strings("en")
    html, md = built["en"]["html"], built["en"]["md"]
    first_md = md.split('<a name="metadata">')[0]
    assert "failed the numerical check" in first_md and "MXNet graph @alpha / LeNet-5" in first_md
    assert "MXNet graph @alpha / LeNet-5" in html.split('<section id="metadata">')[0]
    t = tables(html)
    lenet = t["table-lenet"]
    mx = [r for r in lenet["rows"] if r[0]["text"] == "MXNet"][0]
    assert mx[col(lenet, S("col_status"))]["text"] == S("status_check_failed") and mx[col(lenet, S("col_status"))]["cls"] == "flag"
    chk = {(r[0]["text"], r[1]["text"]): r for r in t["table-check"]["rows"]}
    assert chk[("MXNet @alpha", "graph")][col(t["table-check"], S("wl_lenet"))]["text"].startswith("✗")
    errors = html[html.index('<section id="errors">'):html.index('<section id="reproduce">')]
    assert "MXNet · " + S("wl_lenet") + " · graph — <code>check failed</code>" in errors
    assert "grads conv2.weight 4.2e-02 &gt; 1e-03" in errors
    # grads / update / running in "Same function?", each equal to the result file
    r = json.loads((FIX / "cpu/runs/mxnet/lenet-graph/result.json").read_text())["check"]
    det = t["table-check-detail"]
    row = [x for x in det["rows"] if x[0]["text"] == "MXNet graph @alpha"][0]
    for part in ("grads", "update", "running"):
        c = row[col(det, S("chk_" + part))]
        assert float(c["v"]) == max(r[part].values()) and c["cls"] == "flag", part
    assert row[col(det, S("col_chk_steps"))]["v"] == "5.0" and row[-1]["text"] == "✗"
    assert built["en"]["info"]["check_failed"] == 1


def test_memory_detail_equals_the_results(built):
    S = Strings("en")
    html = built["en"]["html"]
    t = tables(html)["table-memory-lenet"]
    heads = {k: S(h) for k, h in (("after_import_mb", "col_mem_import"), ("after_data_mb", "col_mem_data"),
                                  ("after_check_mb", "col_mem_check"), ("before_training_mb", "col_mem_before"),
                                  ("training_peak_mb", "col_mem_training"), ("process_peak_mb", "col_mem_process"))}
    res = results()
    for row in t["rows"]:
        fw, mode = {"PyTorch eager @alpha": ("torch", "eager"), "PyTorch graph @alpha": ("torch", "graph"),
                    "TensorFlow graph @alpha": ("tensorflow", "graph"), "MXNet graph @alpha": ("mxnet", "graph")}[row[0]["text"]]
        r = res[(fw, "lenet", mode, "cpu")]
        for k, h in heads.items():
            c = row[col(t, h)]
            assert (c["v"] is None and k not in r["memory"]) or float(c["v"]) == r["memory"][k], (fw, k)
        assert row[col(t, S("col_data_placement"))]["text"] == r["data_placement"]
        assert row[col(t, S("col_mem_method"))]["text"] == r["memory"]["method"]
    assert "device copy" in html and "peak minus level before training" in built["en"]["md"]
    assert "table-memory-lstm" not in html  # no run recorded the levels: no empty table


def test_threads_in_effect_and_declared_settings(built):
    S = Strings("en")
    t = tables(built["en"]["html"])
    audit = t["audit-lenet"]
    row = [r for r in audit["rows"] if r[0]["text"] == S("audit_threads_effective")][0]
    tf = row[audit["headers"].index("TensorFlow graph @alpha")]
    torch = row[audit["headers"].index("PyTorch eager @alpha")]
    assert tf["text"] == "1 / 2" and torch["text"] == "2 / 1" and tf["cls"] == "flag" and row[-1]["cls"] == "flag"
    gpu = row[audit["headers"].index("PyTorch graph (GPU) @gpubox")]
    assert gpu["text"] == "n/a"  # older result
    html = built["en"]["html"]
    assert "TensorFlow graph @alpha: 2 threads requested, 1 in effect" in html
    lr = [r for r in audit["rows"] if r[0]["text"] == S("set_lr")][0]
    assert lr[audit["headers"].index("TensorFlow graph @alpha")]["text"] == "0.001 " + S("declared_mark")
    assert lr[audit["headers"].index("PyTorch eager @alpha")]["text"] == "0.001"
    assert lr[-1]["cls"] == "warn" and lr[-1]["text"].startswith("= ") and "TensorFlow graph @alpha" in lr[-1]["text"]
    assert not lr[-1]["text"].startswith("✓")
    # a setting no run declared, all read back: ✓
    opt_rows = [r for r in t["audit-dcgan"]["rows"] if r[0]["text"] == S("set_lr")][0]
    assert opt_rows[-1]["text"] == "✓"


def test_author_notes_in_markdown_keep_markdown_but_no_html_or_script_links():
    from frameval.report.render import notes_markdown
    out = str(notes_markdown("**b** <b>x</b> [a](javascript:alert(1)) [ok](https://x.org)\n[r]: vbscript:x\n"
                             "```html\n<b>kept in a fence</b>\n```\n"))
    assert "**b** &lt;b>x&lt;/b>" in out and "(javascript:" not in out and "vbscript:" not in out
    assert "[ok](https://x.org)" in out and "<b>kept in a fence</b>" in out

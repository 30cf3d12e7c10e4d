"""The real notebooks in the real framework kernels, through the whole pipeline
(papermill -> result.json -> collector), on tiny sizes: the numbers they
produce are checked against the spec."""
import json
import math

import pytest

from frameval.catalog import DEFAULT_WORKLOADS, FRAMEWORKS, MODES, SPEC_PARAM_COUNTS
from frameval.workloads.lstm import TWO_BIAS_COUNT as LSTM_TWO_BIAS_COUNT

CASES = [(fw, wl, m) for fw in FRAMEWORKS for wl in DEFAULT_WORKLOADS for m in MODES]  # the matrix; JAX: tests/test_jax.py; the GPT: tests/test_gpt.py
LOSS_KEYS = {"lenet": ("train_loss", "test_loss"), "dcgan": ("gen_loss", "disc_loss"), "lstm": ("train_mse", "val_mse")}


def result(matrix, fw, wl, mode):
    r = matrix["results"].get((fw, wl, mode))
    assert r is not None, f"no result for {fw}/{wl}-{mode}\n{matrix['proc'].stdout[-3000:]}"
    assert r["status"] == "ok", f"{fw}/{wl}-{mode} failed: {r.get('error')}"
    return r


def check_v2(r, mode):
    """The contract of docs/notebooks.md: the check on the training step passes,
    graph scope, training-only memory, threads and settings read back."""
    chk = r["check"]
    assert chk["ok"] is True, {k: chk.get(k) for k in ("problems", "missing", "max_grad_err", "max_update_err")}
    assert chk["steps"] >= 3 and chk["batch_size"] == r["params"]["batch_size"]
    assert chk["grads"] and all(v is not None for v in chk["grads"].values())
    scope = r["graph_scope"]
    assert scope is not None and isinstance(scope["why"], str)
    parts = [scope[k] for k in ("forward", "backward", "update")]
    if mode == "eager":
        assert not any(parts)
    else:
        assert scope["forward"], "graph mode must at least compile the forward pass"
        assert r["compiled"] == (all(parts) and not scope["graph_breaks"])
        assert all(parts) or scope["why"], "what stays outside the graph must say why"
    mem = r["memory"]
    assert mem["method"] == "clear_refs" and mem["training_peak_mb"] == r["peak_rss_mb"]
    assert mem["after_import_mb"] <= mem["after_check_mb"] and r["peak_rss_mb"] <= mem["process_peak_mb"]
    eff = r["threads_effective"]
    assert eff is not None and (isinstance(eff["intra"], int) or eff["missing"])
    # read back from the optimizer: float32 frameworks hold 1e-3 as 0.0010000000475
    assert r["settings_source"]["lr"] == "read" and math.isclose(r["settings"]["lr"], r["params"]["lr"], rel_tol=1e-6)


@pytest.mark.parametrize("fw, wl, mode", CASES)
def test_run_matches_spec(matrix, fw, wl, mode):
    r = result(matrix, fw, wl, mode)
    counts = r["param_counts"]
    if wl == "lstm":
        # Every notebook trains the spec's one bias: a framework's second bias vector is frozen at
        # zero and not counted. LSTM_TWO_BIAS_COUNT would mean both trained (Adam moving their sum
        # twice as fast), and a check with lstm_biases=2 would have followed that other training.
        assert counts["lstm"] == SPEC_PARAM_COUNTS["lstm"]["lstm"] != LSTM_TWO_BIAS_COUNT, counts
        assert r["check"]["lstm_biases"] == 1 and r["settings"]["lstm_biases"] == 1
    else:
        assert counts == SPEC_PARAM_COUNTS[wl]
    assert len(r["epochs"]) == 2
    for e in r["epochs"]:
        for k in LOSS_KEYS[wl]:
            assert isinstance(e[k], float) and math.isfinite(e[k]), (k, e[k])
        assert e["seconds"] > 0
    assert r["first_epoch_s"] == r["epochs"][0]["seconds"]
    assert r["steady_epoch_s"] == r["epochs"][1]["seconds"]
    assert r["samples_per_s"] > 0 and r["peak_rss_mb"] > r["rss_after_import_mb"] > 0
    assert r["peak_device_mb"] is None  # CPU: not available, never 0
    assert r["threads"] >= 1 and r["framework_version"]
    assert r["mode"] == mode and isinstance(r["compiled"], bool)
    if mode == "eager":
        assert r["compiled"] is False
    assert r["data"]["sha256"] and r["data"]["source"] and r["data_placement"]
    check_v2(r, mode)
    # Precision (#47): the math mode read back from the framework; on the CPU the
    # full-float32 check changes no switch, so the check's figures are the training's arithmetic.
    mm = r["math_mode"]
    assert mm["effective"] == "float32" and mm["precision"] == "default", mm
    assert None not in mm["switches"].values() and r["check"]["precision"]["set_for_check"] == [], r["check"]
    # Where the time went (#50): every phase recorded, and together they are the runner's wall time
    from frameval import phases
    ph = phases.run_phases(r)
    assert None not in ph.values(), ph
    assert sum(v for k, v in ph.items() if not k.startswith("_")) == pytest.approx(r["wall_s"], abs=0.5), ph
    if wl == "lenet":
        assert r["epochs"][0]["test_acc"] > 0.1, "first-epoch accuracy not above chance"
    if wl == "dcgan":
        assert len(r["grids"]) == 2
        # the quality figure: the distance of fid.N fixed-noise images from the real test digits
        from frameval.workloads.dcgan import fid
        assert isinstance(r["fid"], float) and math.isfinite(r["fid"]) and r["fid"] > 0, r.get("fid")
        assert r["fid_samples"] == fid.N
        run_dir = matrix["out"] / "runs" / fw / f"{wl}-{mode}"
        assert all((run_dir / g).stat().st_size > 100 for g in r["grids"])
    if wl == "lstm":
        for k in ("val_r2", "val_rmse", "predict_ms", "model_bytes", "load_ms"):
            assert isinstance(r[k], (int, float)) and math.isfinite(r[k]), k
        assert r["model_bytes"] > 0 and len(r["series"]["val_pred"]) == len(r["series"]["val_true"])
        # the persistence baseline (next = the window's last value) beside the model's R² (#49)
        from frameval.workloads.lstm.quality import r2
        assert len(r["series"]["val_persistence"]) == len(r["series"]["val_true"])
        assert r["persistence_r2"] == pytest.approx(r2(r["series"]["val_true"], r["series"]["val_persistence"]), abs=1e-4)


def test_pipeline_exit_and_report(matrix):
    out, p = matrix["out"], matrix["proc"]
    failed = [k for k, r in matrix["results"].items() if r["status"] != "ok"]
    assert p.returncode == (1 if failed else 0), p.stdout[-2000:] + p.stderr[-2000:]
    assert len(matrix["results"]) == len(CASES)
    assert (out / "report.md").exists() and (out / "report.html").exists()
    # the command's last line: its total and its largest part; its phases in timing.json and the report
    assert "frameval: done in " in p.stdout.strip().splitlines()[-1] and "the largest part: runs" in p.stdout
    from frameval import phases
    assert set(phases.read(out)["phases"]) == set(phases.COMMAND_PHASES)
    md = (out / "report.md").read_text()
    assert "## Where the time went" in md and "| model, compile and the numerical check |" in md
    html = (out / "report.html").read_text()
    import re
    assert not re.search(r'src="https?://|<link[^>]+href="https?://|@import', html), "report.html is not self-contained"


def test_the_probe_is_measured_or_reused_as_asked(matrix):
    """Under `run_all.py test` every command takes the suite's one probe
    (FRAMEVAL_PROBE_FROM), and says so in its log, machine.json and report;
    run alone, the matrix measures its own."""
    import os
    from pathlib import Path
    from frameval.probe import PROBE_FROM_VAR
    machine = json.loads((matrix["out"] / "machine.json").read_text())
    md = (matrix["out"] / "report.md").read_text()
    if os.environ.get(PROBE_FROM_VAR):
        src = str(Path(os.environ[PROBE_FROM_VAR]).resolve())
        assert machine["reused_from"] == src and f"this machine's peak, reused from {src}" in matrix["proc"].stdout
        assert f"taken from an earlier probe on this CPU ({src}, --probe-from)" in md
        assert machine["peak_gflops_all"] == json.loads(Path(src).read_text())["peak_gflops_all"]
    else:
        assert "reused_from" not in machine and "the probe took" in matrix["proc"].stdout
        assert "taken from an earlier probe" not in md


def test_report_figures_equal_results(matrix):
    from frameval.report import fmt
    md = (matrix["out"] / "report.md").read_text()
    for (fw, wl, mode), r in matrix["results"].items():
        if r["status"] == "ok":
            # the one estimator (#49): a steady epoch's samples over the run's samples/s
            from frameval import speed
            from frameval.report.model import run_rate
            from frameval.result import Result
            n = speed.epoch_samples(r["epochs"], (r.get("timing") or {}).get("windows"), (r.get("data") or {}).get("n_train"))
            assert fmt.seconds(speed.epoch_seconds(n, run_rate(Result.from_dict(r)))) in md, (fw, wl, mode)
            assert fmt.integer(sum(r["param_counts"].values())) in md or fmt.integer(list(r["param_counts"].values())[0]) in md


def test_report_shows_each_dcgan_distance(matrix):
    """The DCGAN table's distance column equals each result's `fid` at the
    precision shown (report/tables.py's format), row by row."""
    from frameval.report.i18n import Strings
    from frameval.report.tables import QUALITY_FORMAT
    md, head = (matrix["out"] / "report.md").read_text(), Strings("en")("col_fid")
    header = next(ln for ln in md.splitlines() if ln.startswith("|") and head in ln)
    cells = [c.strip() for c in header.strip("|").split("|")]
    rows = md.split(header, 1)[1].splitlines()[2:]
    table = [[c.strip() for c in ln.strip("|").split("|")] for ln in rows[:next(
        (i for i, ln in enumerate(rows) if not ln.startswith("|")), len(rows))]]
    shown = sorted(row[cells.index(head)].strip("*") for row in table)  # the best is in bold
    expected = sorted(QUALITY_FORMAT["fid"](r["fid"]) for (fw, wl, mode), r in matrix["results"].items()
                      if wl == "dcgan" and r["status"] == "ok")
    assert shown == expected and len(expected) == sum(1 for k in matrix["results"] if k[1] == "dcgan")


def test_dcgan_gif_and_grids_in_html(matrix):
    html = (matrix["out"] / "report.html").read_text()
    assert "data:image/gif;base64," in html and "data:image/png;base64," in html


def test_unchanged_rerun_executes_nothing(matrix):
    from conftest import run_all, SERVED, TINY
    p = run_all("--mode", "both", "--out", str(matrix["out"]), *TINY, *SERVED, "--frameworks", "torch")
    import re
    assert not re.findall(r"\] \S+: running", p.stdout) and len(re.findall(r"\] \S+: reused", p.stdout)) == 6, p.stdout


def test_one_epoch_run_ends_with_a_report(tmp_path):
    """Issue 19's case at real size for one framework: one epoch everywhere (no
    steady epoch, one-frame GIF) still ends in a complete report, exit 0."""
    from conftest import run_all
    p = run_all("--frameworks", "torch", "--workloads", "lenet,dcgan,lstm", "--mode", "eager", "-p", "epochs=1",
                "-p", "max_train_samples=128", "-p", "dcgan.batch_size=32", "--out", str(tmp_path), timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    md = (tmp_path / "report.md").read_text()
    assert (tmp_path / "report.html").stat().st_size > 10000 and "could not draw" not in md


def test_executed_notebooks_show_charts_not_markup(matrix):
    """A teacher opening an executed notebook sees charts, never SVG or HTML source as text."""
    bad = []
    for f in sorted((matrix["out"] / "runs").glob("*/*/output.ipynb")):
        for cell in json.loads(f.read_text())["cells"]:
            for out in cell.get("outputs", []):
                text = "".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/plain", ""))
                if "<svg" in text or "<div" in text:
                    bad.append(f"{f.parent.name} ({f.parent.parent.name}): {text[:80]!r}")
    assert not bad, "\n".join(bad)

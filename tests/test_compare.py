"""The verdict that survives noise (frameval/stats.py, `run_all.py compare`),
on synthetic result folders written in the result.json schema the notebooks
write: a known 30% slowdown over 8 repeats is called slower, 3% noise is no
significant change, 3 repeats cannot call a change, a changed check is flagged.
The real two-version run is in tests/test_versions.py."""
import json
import random
from pathlib import Path

import pytest

from conftest import run_all
from frameval import stats
from frameval.report.folders import compare_folders
from frameval.report.build import build

SAMPLES = 3968  # LeNet's embedded training set, 62 batches of 64


def result(version, sps, *, workload="lenet", mode="graph", device="cpu", acc=0.95, rss=580.0, grad_err=1e-7):
    """One run's result.json as a notebook writes it (frameval.nb.record), the fields the report reads."""
    steady = SAMPLES / sps
    return {
        "schema": 2, "framework": "paddle", "framework_version": version, "workload": workload, "mode": mode,
        "device": device, "status": "ok", "error": None,
        "params": {"mode": mode, "device": device, "epochs": 2, "batch_size": 64, "lr": 0.001, "seed": 0},
        "threads": 2, "param_counts": {"lenet": 61706},
        "epochs": [{"epoch": 1, "samples": SAMPLES, "seconds": steady * 1.2, "train_loss": 1.2, "test_acc": acc - 0.02},
                   {"epoch": 2, "samples": SAMPLES, "seconds": steady, "train_loss": 0.4, "test_acc": acc}],
        "first_epoch_s": steady * 1.2, "steady_epoch_s": steady, "steady_min_s": steady, "steady_max_s": steady,
        "samples_per_s": sps, "peak_rss_mb": rss, "rss_after_import_mb": 330.0, "peak_device_mb": None,
        "environment": {"python": "3.11.7", "numpy": "2.4.6", "machine": {"hostname": "vm", "cores": 2}},
        "check": {"reference": "numpy float64 (frameval.nb.reference)", "ok": grad_err < 1e-4, "steps": 3,
                  "batch_size": 64, "tolerances": {"forward": 1e-4, "losses": 1e-4, "grads": 1e-4, "step": 1e-4},
                  "forward": {"logits": 2e-7}, "losses": {"loss": 1e-7}, "grads": {"conv1.w": grad_err},
                  "step": {"conv1.w": 3e-7}},
        "test_acc": acc, "test_loss": 0.16,
    }


def write_folder(root: Path, fw_dir: str, per_repeat: list) -> Path:
    """runs/<fw_dir>/lenet-graph/result.json and r2/ ... r<k>/, as the runner lays repeats out."""
    base = root / "runs" / fw_dir / "lenet-graph"
    for k, r in enumerate(per_repeat, 1):
        d = base if k == 1 else base / f"r{k}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "result.json").write_text(json.dumps(r))
    first = json.loads((base / "result.json").read_text())
    first["repeats"] = [r["steady_epoch_s"] for r in per_repeat]  # as Pipeline.merge_repeats writes it
    (base / "result.json").write_text(json.dumps(first))
    return root


def noisy(rng, centre, spread, n):
    return [centre * (1 + rng.uniform(-spread, spread)) for _ in range(n)]


def test_verdict_rules():
    rng = random.Random(16)
    a = noisy(rng, 1500, 0.02, 8)
    assert stats.verdict(a, [x * 0.7 for x in a])["verdict"] == "slower"
    assert stats.verdict(a, [x * 1.4 for x in a])["verdict"] == "faster"
    assert stats.verdict(a, noisy(rng, 1500 * 1.03, 0.02, 8))["verdict"] == "same"
    few = stats.verdict(a[:5], [x * 0.7 for x in a[:5]])
    assert few["verdict"] == "too_few" and few["p"] is None and few["needed"] == 7
    assert stats.verdict([1500.0], [1000.0])["verdict"] == "too_few"  # never called from single runs
    # beyond the threshold but not significant: overlapping repeats
    wide = stats.verdict([1000, 1600, 1100, 1500, 1200, 1400, 1300, 1450], [1000, 1500, 900, 1300, 1000, 1350, 1100, 1200])
    assert wide["p"] > stats.P_THRESHOLD and wide["verdict"] == "same"
    assert stats.min_p(5, 5) > stats.P_THRESHOLD > stats.min_p(7, 7)


def test_30_percent_slowdown_is_slower_3_percent_is_not(tmp_path):
    rng = random.Random(7)
    base = noisy(rng, 1500, 0.02, 8)
    a = write_folder(tmp_path / "a", "paddle", [result("3.3.1", s) for s in base])
    slow = write_folder(tmp_path / "slow", "paddle", [result("3.3.1", s * 0.7, rss=700.0) for s in noisy(rng, 1500, 0.02, 8)])
    same = write_folder(tmp_path / "same", "paddle", [result("3.3.1", s) for s in noisy(rng, 1500 * 1.03, 0.02, 8)])
    got = compare_folders(a, slow)
    (pair,) = got["data"]["pairs"]
    assert pair["verdict"] == "slower" and pair["p"] < stats.P_THRESHOLD and pair["n_a"] == pair["n_b"] == 8
    assert pair["ratio"] == pytest.approx(0.7, abs=0.05) and pair["mem_ratio"] == pytest.approx(700 / 580)
    assert "| slower |" in got["markdown"]
    (pair,) = compare_folders(a, same)["data"]["pairs"]
    assert pair["verdict"] == "same" and pair["ratio"] == pytest.approx(1.03, abs=0.03)
    assert "no significant change" in compare_folders(a, same)["markdown"]


def test_compare_command(tmp_path):
    rng = random.Random(3)
    a = write_folder(tmp_path / "a", "paddle", [result("3.2.2", s) for s in noisy(rng, 1500, 0.02, 3)])
    b = write_folder(tmp_path / "b", "paddle", [result("3.3.1", s, grad_err=5e-3) for s in noisy(rng, 1000, 0.02, 3)])
    (a / "runs" / "torch" / "lenet-graph").mkdir(parents=True)  # only in A
    (a / "runs" / "torch" / "lenet-graph" / "result.json").write_text(
        json.dumps(dict(result("2.13.0", 2000.0), framework="torch")))
    p = run_all("compare", str(a), str(b), "--out", str(tmp_path / "cmp"), timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "3 vs 3 repeats cannot reach p < 0.002" in p.stdout and "--repeats 7" in p.stdout
    assert "different function" in p.stdout
    assert "Only in A" in p.stdout and "torch/lenet-graph" in p.stdout
    data = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert data["pairs"][0]["verdict"] == "too_few" and data["only_in_a"] == ["torch/lenet-graph"]
    # bad input: one line, exit 2, nothing built
    for args in ([str(a), str(tmp_path)], [str(a), str(tmp_path / "missing")], [str(a), str(b), "--threshold", "0"]):
        p = run_all("compare", *args, timeout=60)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and p.stderr.startswith("frameval: error: "), p.stderr


def test_report_section_from_two_versions(tmp_path):
    """Two versions in one folder: named by version in every table, the section's ratios from the files."""
    rng = random.Random(5)
    old, new = noisy(rng, 1500, 0.02, 8), noisy(rng, 1000, 0.02, 8)
    src = write_folder(tmp_path / "out", "paddle@3.2.2", [result("3.2.2", s) for s in old])
    write_folder(src, "paddle", [result("3.3.1", s, acc=0.96) for s in new])
    for lang in ("en", "zh"):
        info = build([str(src)], tmp_path / lang, lang=lang, threshold=0.10)
        assert not info["problems"], info["problems"]
        md = Path(info["md"]).read_text()
        assert ("## Version comparison" if lang == "en" else "## 版本对比") in md
        assert "PaddlePaddle 3.2.2" in md and "PaddlePaddle 3.3.1" in md
        assert ("slower" if lang == "en" else "更慢") in md
    import statistics
    section = md.split('<a name="versions"></a>')[1].split("<a name=")[0]
    (line,) = [ln for ln in section.splitlines() if ln.startswith("| PaddlePaddle |")]
    want = statistics.median(new) / statistics.median(old)
    assert f"{want:.2f}×" in line
    assert f"{0.96 / 0.95:.2f}×" in line
    # the summary and the alerts at the top say it too, with the table's ratio
    info = build([str(src)], tmp_path / "en2", lang="en", threshold=0.10)
    slower = [f for f in info["findings"] if f.startswith("A later framework version is slower")]
    assert slower and f"PaddlePaddle 3.2.2 → 3.3.1, LeNet-5 (MNIST classification), graph: {want:.2f}×" in slower[0], info["findings"]
    md = Path(info["md"]).read_text()
    assert md.index("A later framework version is slower") < md.index("## Version comparison")
    html = Path(info["html"]).read_text()
    alerts = html.split('id="alerts"')[1].split("</div>")[0]
    assert "A later framework version is slower" in alerts


def test_version_summary_without_a_verdict(tmp_path):
    """Too few repeats: the summary says no change was called and how many repeats would do; no alert."""
    src = write_folder(tmp_path / "out", "paddle@3.2.2", [result("3.2.2", s) for s in (1500, 1510)])
    write_folder(src, "paddle", [result("3.3.1", s) for s in (1000, 1010)])
    info = build([str(src)], tmp_path / "en", lang="en", threshold=0.10)
    (line,) = [f for f in info["findings"] if f.startswith("Version comparison:")]
    assert "1 of them have too few repeats" in line and "--repeats 7" in line
    html = Path(info["html"]).read_text()
    assert 'id="alerts"' not in html or "Version comparison" not in html.split('id="alerts"')[1].split("</div>")[0]

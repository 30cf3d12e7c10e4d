"""Mixed precision in all seven frameworks (#69), through the real pipeline: LeNet at
float32 and at bfloat16, eager, tiny, in every framework's real environment. Every
mixed run is ok with both checks, or not offered with its framework's own error and a
reproduction under defects/; never a float32 run under a bfloat16 name. The report's
"Mixed precision against float32" section pairs each with its float32 twin, and its
speed-ups are the result files' samples/s over each other."""
import json
import re

import pytest

from conftest import REPO, run_all
from frameval import catalog
from frameval.cpu import BF16_FLAGS

TINY = ["-p", "epochs=2", "-p", "max_train_samples=256", "-p", "batch_size=32"]


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    out = tmp_path_factory.mktemp("mixed")
    p = run_all("--workloads", "lenet", "--mode", "eager", "-p", "precision=default,bf16", "--out", str(out), *TINY,
                "--timeout", "900")
    (out / "runner-stdout.txt").write_text(p.stdout + "\n---- stderr ----\n" + p.stderr)
    results = {}
    for f in sorted((out / "runs").glob("*/*/result.json")):
        r = json.loads(f.read_text())
        results[(r["framework"], r["params"].get("precision"))] = r
    return {"out": out, "proc": p, "results": results}


def test_every_framework_is_mixed_or_declines_with_evidence(mixed):
    res = mixed["results"]
    assert mixed["proc"].returncode == 0, mixed["proc"].stdout[-3000:] + mixed["proc"].stderr[-2000:]
    for fw in catalog.FRAMEWORKS:
        f32, b16 = res[(fw, "default")], res[(fw, "bf16")]
        assert f32["status"] == "ok" and f32["check"]["ok"] is True, (fw, f32.get("error"))
        if b16["status"] == "not_offered":
            why = b16["error"]["message"]
            assert len(why) > 20, (fw, why)
            assert list((REPO / "defects" / fw).glob("*bf16*.py")) or list((REPO / "defects" / fw).glob("*amp*.py")), \
                f"{fw}: not offered at bfloat16 without a reproduction under defects/{fw}/"
            continue
        assert b16["status"] == "ok", (fw, b16.get("error"))
        assert b16["check"]["ok"] is True and b16["check_amp"]["ok"] is True, (fw, b16["check_amp"].get("outside"))
        assert b16["amp"]["format"] == "bfloat16" and b16["amp"]["mechanism"], (fw, b16["amp"])
        # it ran in bfloat16: its AMP pass is off the float64 reference by more than float32 rounding
        assert max(b16["check_amp"]["forward"].values()) > 1e-4, (fw, b16["check_amp"]["forward"])
        assert b16["param_counts"] == f32["param_counts"]


def test_the_float32_pass_is_the_float32_check(mixed):
    """In each framework that trained at bfloat16, the mixed run's first check pass (AMP off) gives
    the figures of its float32 twin's check, and only the mixed run has an AMP pass."""
    res = mixed["results"]
    for fw in catalog.FRAMEWORKS:
        b16, f32 = res[(fw, "bf16")], res[(fw, "default")]
        assert f32["amp"] == {"precision": None} and "check_amp" not in f32, fw
        if b16["status"] != "ok":
            continue
        for sec in ("forward", "grads", "losses"):
            for k, v in f32["check"][sec].items():
                assert b16["check"][sec][k] == pytest.approx(v, rel=0.2, abs=1e-6), (fw, sec, k)


def _cells(md: str, table_head: str) -> list:
    lines = md.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.startswith(table_head))
    rows = []
    for ln in lines[i + 2:]:
        if not ln.startswith("|"):
            break
        rows.append([c.strip() for c in ln.strip("|").split("|")])
    return rows


def test_report_pairs_each_mixed_run_with_its_twin(mixed):
    md = (mixed["out"] / "report.md").read_text()
    assert "## Mixed precision against float32" in md
    rows = _cells(md, "| Framework | Workload | Mode | Precision | Speed-up over float32")
    res = mixed["results"]
    offered = [fw for fw in catalog.FRAMEWORKS if res[(fw, "bf16")]["status"] == "ok"]
    assert len(rows) == len(catalog.FRAMEWORKS)
    for fw in offered:
        name = catalog.framework_name(fw)
        row = next(r for r in rows if r[0].startswith(name + " "))
        want = res[(fw, "bf16")]["samples_per_s"] / res[(fw, "default")]["samples_per_s"]
        isa = (res[(fw, "bf16")].get("environment", {}).get("machine") or {}).get("isa") or []
        if not any(f in isa for f in BF16_FLAGS):  # a CPU without bfloat16 units: emulated, no speed-up
            assert "emulated" in row[4], (fw, row[4])
            continue
        got = float(re.match(r"([\d.]+)×", row[4]).group(1))
        # the cell's three significant figures: 0.005 relative (12.3 for 12.27), 0.006 below 1
        assert got == pytest.approx(want, rel=0.005, abs=0.006), (fw, row[4], want)
        assert row[6].startswith("✓"), (fw, row[6])
    summary = _cells(md, "| Framework | Device | Precision | Declared | Works |")
    assert {r[0] for r in summary} == {catalog.framework_name(fw) for fw in catalog.FRAMEWORKS}
    for r in summary:
        assert r[4].startswith(("yes:", "not offered")), r


def test_bf16_on_a_cpu_without_bf16_units_is_emulated_and_unranked(mixed, tmp_path):
    """The same results as if they came from a CPU without bfloat16 units (its isa list edited):
    the report says the bfloat16 runs were emulated, and ranks none of them."""
    import shutil
    src = tmp_path / "no-bf16"
    shutil.copytree(mixed["out"], src, ignore=shutil.ignore_patterns("report*", "assets"))
    for f in (src / "runs").glob("*/*/result.json"):
        r = json.loads(f.read_text())
        r["environment"].setdefault("machine", {})["isa"] = ["avx2", "fma", "avx", "sse4_2"]
        f.write_text(json.dumps(r))
    p = run_all("--report-only", "--from", str(src), "--out", str(tmp_path / "r"))
    assert p.returncode in (0, 1), p.stderr[-2000:]
    md = (tmp_path / "r" / "report.md").read_text()
    rows = _cells(md, "| Framework | Workload | Mode | Precision | Speed-up over float32")
    ok = [r for r in rows if not r[3].endswith(("not offered", "failed", "check failed"))]
    assert ok and all(r[4].startswith("emulated") for r in ok), [r[:5] for r in rows]
    assert "(bfloat16)" not in md.split("## Mixed precision")[0]  # no bfloat16 ranking in the summary

"""Smoke runs of every bench in bench/: each started the way a user starts it
(`python3 run_all.py bench <name> ...`), at tiny sizes, and the figures it
prints parsed back: present, finite and positive, each with the load average
beside it. A bench that no longer runs fails the suite (bench/overhead.py
crashed unnoticed once the notebooks' last line became rec.finish(), which
its recorder stand-in did not implement). The figures are not checked against
any target: at these sizes, on a shared CI machine, they are noise."""
import json
import math
import re

import pytest

from conftest import REPO, run_all

# A figure as printed; "nan" and "inf" match too, so that they fail the
# finiteness check rather than the search.
FLOAT = r"[-+]?(?:\d+(?:\.\d*)?|nan|inf)"
# The 1-minute load average as the benches print it: "load 1.2", "load 1.2-3.4",
# or in bench/pipeline.py's table "load  1.2- 3.4".
LOAD = rf"load\s+(?P<load0>{FLOAT})(?:-\s*(?P<load1>{FLOAT}))?"
NUM = rf"(?P<{{}}>{FLOAT})"

SMOKE = {
    "overhead": ["--pairs", "1", "--epochs", "2", "--samples", "64"],
    # TensorFlow only: the PyTorch side compiles with torch.compile from a cold
    # inductor cache on both sides (30-100 s each on 2 cores), too slow for CI.
    "seed_parity": ["--frameworks", "tensorflow", "--samples", "64", "--batch-size", "32", "--epochs", "2"],
    # a cold build of the runner and one quick-to-build environment, and the
    # three report steps on one small run
    "pipeline": ["--smoke", "--frameworks", "jax", "--workloads", "lstm"],
    # two rounds of one small run: one pair, recorded into the test's own folder (FRAMEVAL_NOISE_DIR)
    "noise": ["--frameworks", "jax", "--workloads", "lstm", "-p", "epochs=2", "-p", "lstm.max_train_samples=256"],
    # one seed, two epochs: the level and delta targets against persistence, in torch eager
    "lstm_delta": ["--seeds", "1", "--epochs", "2"],
}


def run_bench(name: str, timeout: int) -> str:
    p = run_all("bench", name, *SMOKE[name], timeout=timeout)
    out = p.stdout + "\n---- stderr ----\n" + p.stderr[-4000:]
    assert p.returncode == 0, f"bench {name} exited {p.returncode}\n{out[-6000:]}"
    return p.stdout


def figures(stdout: str, pattern: str, positive=(), finite=()) -> dict:
    """The named figures of the first line matching `pattern` (with {LOAD} and
    {name} placeholders): `positive` ones finite and > 0, `finite` ones finite
    (a difference may be negative), the load average finite and >= 0 (an idle
    machine shows 0.0)."""
    rx = re.compile(pattern.format(LOAD=LOAD, **{n: NUM.format(n) for n in (*positive, *finite)}))
    m = next((m for m in map(rx.search, stdout.splitlines()) if m), None)
    assert m, f"no line matching {rx.pattern!r} in the output:\n{stdout[-5000:]}"
    got = {k: _number(v, k, m.string) for k, v in m.groupdict().items() if v is not None}
    for k, x in got.items():
        assert math.isfinite(x), f"{k} = {x} in: {m.string}"
        if k in positive:
            assert x > 0, f"{k} = {x} in: {m.string}"
        elif k.startswith("load"):
            assert x >= 0, f"{k} = {x} in: {m.string}"
    return got


def _number(text: str, name: str, line: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise AssertionError(f"{name} = {text!r} is not a number in: {line}") from None


@pytest.mark.fast
def test_every_bench_has_a_smoke_run():
    """A bench added to bench/ without a smoke run here would rot unnoticed."""
    assert sorted(p.stem for p in (REPO / "bench").glob("*.py")) == sorted(SMOKE)


def test_overhead_bench_runs_and_prints_its_figures():
    out = run_bench("overhead", timeout=420)
    figures(out, r"pair 1: A steady {a} s .* B steady {b} s .* B/A {ratio} .*\({LOAD}\)", positive=("a", "b", "ratio"))
    figures(out, r"steady epoch time B/A, median of 1 pairs: {ratio} .*\({LOAD}\)$", positive=("ratio",))
    figures(out, r"fastest B / fastest A .*: {ratio} .*\({LOAD}\)$", positive=("ratio",))
    figures(out, r"fixed per-run cost beyond the import .*median: A {a} s, B {b} s .*\({LOAD}\)$", positive=("a", "b"))
    figures(out, r"harness's own fixed cost per run \(B - A\), median: {diff} s .*\({LOAD}\)$", finite=("diff",))
    figures(out, r"B's time outside the notebook's cells, median: papermill start {start} s, kernel start {kernel} s"
                 r".*\({LOAD}\)$", finite=("start",), positive=("kernel",))
    figures(out, r"import \(recorder created -> after_import\), median: A {a} s, B {b} s .*\({LOAD}\)$",
            positive=("a", "b"))
    figures(out, r"recorder's own cost \(framework env python, empty epochs; {LOAD}\)")
    # printed to 0.1 us: a fast machine may show 0.0
    figures(out, r"inside the timed region per epoch: {inside} us median", finite=("inside",))
    figures(out, r"bookkeeping per epoch outside it .*: {book} ms median", positive=("book",))


def test_seed_parity_bench_runs_and_prints_its_figures():
    out = run_bench("seed_parity", timeout=480)
    figures(out, r"tensorflow hand-written \(tf\.function\) #1: epochs .*\(run {secs} s; {LOAD}\)", positive=("secs",))
    figures(out, r"tensorflow frameval graph #1: epochs .*\(run {secs} s; {LOAD}\)", positive=("secs",))
    figures(out, r"tensorflow: frameval graph {fv} s / hand-written tf\.function {hand} s = {ratio} .*\({LOAD}\)$",
            positive=("fv", "hand", "ratio"))


def test_pipeline_bench_runs_and_prints_its_figures():
    out = run_bench("pipeline", timeout=600)
    row = r"^  {label}\s+{{secs}} s\s+{{LOAD}}\s+{what}"
    for label, what in (("cold build: runner \\+ jax environment\\(s\\), data caches included", "ok$"),
                        ("the same again, everything cached", "ok$"),
                        ("default quick report", "1 executed, 0 reused"),
                        ("unchanged rerun", "0 executed, 1 reused$"),  # every run reused: the bench's own claim
                        ("rerun after -p lstm\\.lr=0\\.002", "1 executed, 0 reused .*changed: params")):
        figures(out, row.format(label=label, what=what), positive=("secs",))


def test_noise_bench_runs_records_and_prints_its_figures(tmp_path, monkeypatch):
    monkeypatch.setenv("FRAMEVAL_NOISE_DIR", str(tmp_path))
    out = run_bench("noise", timeout=420)
    figures(out, r"round 1: {runs} runs ok \(exit 0; {LOAD}", positive=("runs",))
    figures(out, r"round 2: {runs} runs ok \(exit 0; {LOAD}", positive=("runs",))
    got = figures(out, r"this invocation: {pairs} pairs, log SD per run {sd} \(95% interval {lo}-{hi}\); {LOAD}",
                  positive=("pairs", "hi"), finite=("sd", "lo"))
    assert got["pairs"] == 1 and got["lo"] <= got["sd"] <= got["hi"]
    record = json.loads(next(tmp_path.glob("*.json")).read_text())  # the machine's record, in the test's folder
    assert len(record["pairs"]) == 1 and record["pairs"][0]["run"] == "jax/lstm-graph"
    assert abs(record["sd"] - got["sd"]) < 1e-4


def test_lstm_delta_bench_runs_and_prints_its_figures():
    out = run_bench("lstm_delta", timeout=300)
    got = figures(out, r"2 epochs: persistence R² {base} \({LOAD}\)", positive=("base",))
    assert 0.9 < got["base"] < 1  # the CO2 series' persistence forecast scores about 0.991
    for t in ("level", "delta"):
        figures(out, t + r"\s*: R² mean {r2} \(.*\), skill over persistence mean {skill} .*\({LOAD}\)",
                finite=("r2", "skill"))
    assert re.search(r"delta beats persistence on every seed: (yes|no)", out)

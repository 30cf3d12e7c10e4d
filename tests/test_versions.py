"""Framework versions as a matrix axis, for real: PaddlePaddle 3.2.2 (a pin)
against 3.3.1 (envs/paddle.yml's own), both from the package index, LeNet at
tiny sizes with repeats. The report names both versions in its tables, its
"Version comparison" section's ratios equal the result files, and a verdict
is printed. A pin the index does not have exits 2 before anything is built."""
import html
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, run_all
from frameval import stats
from frameval.envs import choose_backend, env_for
from frameval.envs.spec import framework_spec, spec_version

OLD, NEW = "3.2.2", "3.3.1"
TINY_LENET = ["-p", "epochs=2", "-p", "lenet.max_train_samples=256"]
REPEATS = 2


def test_spec_pins_the_bare_version():
    assert spec_version("paddle") == NEW  # if envs/paddle.yml moves on, pick another OLD here
    old = framework_spec(f"paddle@{OLD}")
    bare = framework_spec("paddle")
    assert f"paddlepaddle=={OLD}" in old.pip and f"paddlepaddle=={NEW}" not in old.pip
    assert old.key != bare.key and f"paddlepaddle=={OLD}" in old.text


@pytest.fixture(scope="module")
def two_versions(tmp_path_factory):
    out = tmp_path_factory.mktemp("versions")
    p = run_all("--frameworks", f"paddle=={OLD},paddle", "--workloads", "lenet", "--repeats", str(REPEATS),
                "--out", str(out), *TINY_LENET, "--timeout", "600", timeout=1500)
    (out / "runner-stdout.txt").write_text(p.stdout + "\n---- stderr ----\n" + p.stderr)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return out, p


def _results(out, fw_dir):
    base = out / "runs" / fw_dir / "lenet-graph"
    return [json.loads(f.read_text()) for f in [base / "result.json"] + [base / f"r{k}" / "result.json"
                                                                          for k in range(2, REPEATS + 1)]]


def test_two_versions_side_by_side(two_versions):
    out, p = two_versions
    old, new = _results(out, f"paddle@{OLD}"), _results(out, "paddle")
    assert {r["framework_version"] for r in old} == {OLD} and {r["framework_version"] for r in new} == {NEW}
    for r in old + new:  # the numerical check ran in both versions
        assert r["status"] == "ok" and r["check"]["ok"] is True, r.get("error")
    envs = {f.stem: json.loads(f.read_text()) for f in (out / "environments").glob("*.json")}
    assert envs[f"paddle@{OLD}"]["key"] != envs["paddle"]["key"]
    assert f"paddlepaddle=={OLD}" in envs[f"paddle@{OLD}"]["freeze"]
    assert envs[f"paddle@{OLD}"]["kernel"] == f"frameval-paddle-v{OLD}"
    # a hand run in the pinned kernel (run_all.py lab --frameworks paddle==3.2.2) goes to runs/paddle@3.2.2/
    from frameval.envs.kernels import JUPYTER_DIR
    from frameval.paths import FRAMEWORK_KEY_ENV
    kernel = json.loads((JUPYTER_DIR / "kernels" / f"frameval-paddle-v{OLD}" / "kernel.json").read_text())
    assert kernel["env"][FRAMEWORK_KEY_ENV] == f"paddle@{OLD}"
    bare = json.loads((JUPYTER_DIR / "kernels" / "frameval-paddle" / "kernel.json").read_text())
    assert FRAMEWORK_KEY_ENV not in bare["env"]
    md = (out / "report.md").read_text()
    assert f"PaddlePaddle {OLD}" in md and f"PaddlePaddle {NEW}" in md
    for v in (OLD, NEW):  # the workload table's row of each version
        assert f"| PaddlePaddle {v} | {v} | graph |" in md
    # the workaround names the versions it was tried in, and each run's record says so
    assert all("Paddle 3.2.2 and 3.3.1" in r["graph_scope"]["why"] for r in old + new)


def test_version_section_equals_the_result_files(two_versions):
    out, _ = two_versions
    old, new = _results(out, f"paddle@{OLD}"), _results(out, "paddle")
    md = (out / "report.md").read_text()
    assert "## Version comparison" in md
    section = md.split('<a name="versions"></a>')[1].split("<a name=")[0]
    (line,) = [ln for ln in section.splitlines() if ln.startswith("| PaddlePaddle |")]
    cells = [c.strip() for c in line.strip("|").split("|")]
    med = lambda rs, k: statistics.median(r[k] for r in rs)  # noqa: E731
    assert cells[3] == f"{OLD} · n={REPEATS}" and cells[4] == f"{NEW} · n={REPEATS}"
    assert cells[6] == f"{med(new, 'samples_per_s') / med(old, 'samples_per_s'):.2f}×"
    assert cells[8] == f"{med(new, 'peak_rss_mb') / med(old, 'peak_rss_mb'):.2f}×"
    assert cells[9] == f"{med(new, 'test_acc') / med(old, 'test_acc'):.2f}×"
    v = stats.verdict([r["samples_per_s"] for r in old], [r["samples_per_s"] for r in new])
    # 3 against 3 repeats can never reach p < 0.002: a change beyond 10% is not called, and the report says so
    assert v["verdict"] in ("same", "too_few") and cells[7] == "n/a (too few repeats)"
    want = {"same": "no significant change", "too_few": f"not called: {REPEATS} vs {REPEATS} repeats cannot reach p < 0.002"}
    assert html.unescape(cells[11].strip("*⚠️ ")).startswith(want[v["verdict"]]), cells[11]
    assert "use --repeats 7" in section or "Run with --repeats 7" in section
    assert cells[10].startswith("same")  # 3.2.2 and 3.3.1 compute LeNet's step alike, within the check's tolerance


def test_compare_two_folders_of_real_runs(two_versions, tmp_path):
    """The same runs through `run_all.py compare`: the bare paddle runs of one
    folder against a copy whose paddle is the 3.2.2 run."""
    out, _ = two_versions
    import shutil
    b = tmp_path / "b"
    shutil.copytree(out / "runs" / f"paddle@{OLD}", b / "runs" / "paddle")
    p = run_all("compare", str(b), str(out), timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert f"| {OLD} · n={REPEATS} | {NEW} · n={REPEATS} |" in p.stdout
    assert f"Only in B ({out}): paddle@{OLD}/lenet-graph" in p.stdout


def test_pin_the_index_lacks_exits_2_and_builds_nothing(tmp_path):
    spec = framework_spec("paddle@3.2.9")
    prefix = env_for(spec, choose_backend("auto")).prefix
    p = run_all("--frameworks", "paddle==3.2.9,paddle", "--workloads", "lenet", "--out", str(tmp_path / "x"), timeout=300)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert p.stderr.startswith("frameval: error: --frameworks paddle==3.2.9: paddlepaddle 3.2.9 is not in the package index")
    assert not prefix.exists() and not (tmp_path / "x").exists()


def test_index_check_reads_the_users_pip_settings(tmp_path):
    """A private index (pip's PIP_INDEX_URL, no config files) that has only
    3.2.0: 3.3.0, which PyPI has, is refused, and 3.2.0 passes the check."""
    simple = tmp_path / "simple" / "paddlepaddle"
    simple.mkdir(parents=True)
    simple.joinpath("index.html").write_text(
        '<a href="../../f/paddlepaddle-3.2.0-cp311-cp311-manylinux1_x86_64.whl#sha256=0">x</a>')
    env = dict(os.environ, PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL=(tmp_path / "simple").as_uri(),
               PIP_FIND_LINKS="", PIP_EXTRA_INDEX_URL="")
    code = ("import sys; from frameval.envs.index import check_pin; "
            "print(repr(check_pin('paddle', sys.argv[1])))")
    got = {v: subprocess.run([sys.executable, "-c", code, v], capture_output=True, text=True, env=env, cwd=REPO,
                             timeout=120).stdout.strip() for v in ("3.3.0", "3.2.0")}
    assert "paddlepaddle 3.3.0 is not in the package index" in got["3.3.0"] and "it has 3.2.0" in got["3.3.0"]
    assert got["3.2.0"] == "''"


@pytest.mark.parametrize("entry, says", [
    ("paddle>=3.2", "a version is given as FRAMEWORK==VERSION"),
    ("all==3.2.2", "pin one framework at a time"),
    ("nosuch==1.0", "unknown framework 'nosuch'"),
])
def test_bad_framework_entries_exit_2(entry, says, tmp_path):
    p = run_all("--frameworks", entry, "--out", str(tmp_path / "x"), "--dry-run", timeout=120)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and says in p.stderr, p.stderr


def test_plan_of_two_versions():
    from frameval.plan import build_plan
    runs = build_plan(f"paddle=={OLD},paddle,paddlepaddle=={NEW}", "lenet", "graph", "cpu", "quick", [], 2)
    assert [(r.fw_key, r.repeat) for r in runs] == [(f"paddle@{OLD}", 1), (f"paddle@{OLD}", 2), ("paddle", 1), ("paddle", 2)]
    assert runs[0].name == f"paddle@{OLD}/lenet-graph" and runs[0].notebook == runs[2].notebook

"""The run cache key holds everything that decides a result: a result measured
under another instruction-set cap, on another CPU, or with another version of
any frameval module the notebook's kernel imports is not reused, and the
reason names what changed."""
import os
import json
import shutil

import pytest

from frameval import execute, files, sources
from frameval.plan import build_plan

pytestmark = pytest.mark.fast


def _finished(d, parts):
    d.mkdir(parents=True)
    (d / files.RESULT).write_text(json.dumps({"framework": "torch", "workload": "lenet", "status": "ok", "cache_parts": parts}))


def test_a_changed_cap_runs_again_naming_it(tmp_path, monkeypatch):
    run, = build_plan("torch", "lenet", "graph", "cpu", "quick", [])
    monkeypatch.delenv("OPENBLAS_CORETYPE", raising=False)
    before = execute.key_parts(run, "freeze")
    _finished(tmp_path / "r", before)
    assert execute.decide(run, tmp_path / "r", before, False).why == "unchanged"
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    after = execute.key_parts(run, "freeze")
    dec = execute.decide(run, tmp_path / "r", after, False)
    assert dec.execute and dec.why == "changed: isa caps"


def test_another_cpu_runs_again_naming_it(tmp_path, monkeypatch):
    run, = build_plan("torch", "lenet", "graph", "cpu", "quick", [])
    before = execute.key_parts(run, "freeze")
    _finished(tmp_path / "r", before)
    monkeypatch.setattr(execute.cpu, "identity", lambda: {"model": "Another CPU", "cores": 64})
    assert execute.decide(run, tmp_path / "r", execute.key_parts(run, "freeze"), False).why == "changed: cpu"


@pytest.mark.parametrize("fw", ["torch", "tensorflow", "paddle", "mindspore", "megengine", "mxnet", "jax"])
def test_the_kernel_side_closure_holds_what_the_notebooks_import(fw):
    names = {p.relative_to(sources.REPO).as_posix() for p in sources.notebook_side(fw)}
    # nb/record.py imports result/, files.py; check.py the catalog; paths, cpu, speed
    assert {"frameval/catalog.py", "frameval/files.py", "frameval/paths.py", "frameval/cpu.py",
            "frameval/speed.py", "frameval/nb/record.py", f"frameval/frameworks/{fw}/support.py", f"frameval/frameworks/{fw}/__init__.py"} <= names
    # the one result type (frameval/result: record.py) and every workload record (check.py, weights.py: issue #36)
    assert {"frameval/result/__init__.py", "frameval/result/folder.py", "frameval/workloads/__init__.py", "frameval/workloads/base.py",
            "frameval/workloads/datasets.py", "frameval/workloads/lenet/__init__.py", "frameval/workloads/dcgan/__init__.py",
            "frameval/workloads/lstm/__init__.py"} <= names
    assert "frameval/pipeline.py" not in names and "frameval/report/build.py" not in names  # the runner's own code


def test_a_workload_key_holds_its_own_folder_and_no_other_workloads_reference(tmp_path):
    """Every record's module body runs in every kernel (the registry imports them
    all), but a workload's reference and data loading only in its own runs: an
    edit to lenet/reference.py runs LeNet again and leaves the LSTM's results."""
    names = {w: {p.relative_to(sources.REPO).as_posix() for p in sources.notebook_side("torch", workload=w)}
             for w in ("lenet", "lstm")}
    assert "frameval/workloads/lenet/reference.py" in names["lenet"] - names["lstm"]
    assert "frameval/workloads/lstm/reference.py" in names["lstm"] - names["lenet"]
    assert "frameval/nb/reference.py" in names["lenet"] & names["lstm"]  # the shared layer maths
    clone = tmp_path / "clone"
    shutil.copytree(sources.REPO / "frameval", clone / "frameval", ignore=shutil.ignore_patterns("__pycache__"))
    before = {w: sources.digest("torch", clone, workload=w) for w in ("lenet", "lstm")}
    with open(clone / "frameval" / "workloads" / "lenet" / "reference.py", "a", encoding="utf-8") as f:
        f.write("\n# one more line\n")
    after = {w: sources.digest("torch", clone, workload=w) for w in ("lenet", "lstm")}
    assert after["lenet"] != before["lenet"] and after["lstm"] == before["lstm"]


def test_a_change_to_the_catalog_runs_again_naming_it(tmp_path, monkeypatch):
    run, = build_plan("torch", "lenet", "graph", "cpu", "quick", [])
    before = execute.key_parts(run, "freeze")
    _finished(tmp_path / "r", before)
    clone = tmp_path / "clone"
    shutil.copytree(sources.REPO / "frameval", clone / "frameval", ignore=shutil.ignore_patterns("__pycache__"))
    assert sources.digest("torch", clone) == sources.digest("torch")  # the same files: the same key
    with open(clone / "frameval" / "catalog.py", "a", encoding="utf-8") as f:
        f.write("\n# one more line\n")
    monkeypatch.setattr(execute.sources, "digest",
                        lambda fw, root=clone, workload=None, real=sources.digest: real(fw, clone, workload))
    dec = execute.decide(run, tmp_path / "r", execute.key_parts(run, "freeze"), False)
    assert dec.execute and dec.why == "changed: frameval"


@pytest.mark.parametrize("var,value", [("NVIDIA_TF32_OVERRIDE", "0"), ("JAX_DEFAULT_MATMUL_PRECISION", "highest"),
                                       ("XLA_FLAGS", "--xla_gpu_enable_triton_gemm=false"),
                                       ("ONEDNN_DEFAULT_FPMATH_MODE", "BF16"), ("TF_ENABLE_ONEDNN_OPTS", "0")])
def test_a_result_made_under_other_arithmetic_is_not_reused(tmp_path, monkeypatch, var, value):
    """The first H100 run: a second command with NVIDIA_TF32_OVERRIDE=0 reused three TF32
    results. A result made without the variable runs again under it, and the reason names it."""
    run, = build_plan("jax", "lenet", "graph", "gpu", "quick", [])
    for v in execute.arithmetic.ENV:
        monkeypatch.delenv(v, raising=False)
    before = execute.key_parts(run, "freeze")
    _finished(tmp_path / "r", before)
    assert execute.decide(run, tmp_path / "r", execute.key_parts(run, "freeze"), False).why == "unchanged"
    monkeypatch.setenv(var, value)
    dec = execute.decide(run, tmp_path / "r", execute.key_parts(run, "freeze"), False)
    assert dec.execute and dec.why == "changed: arithmetic"


def test_precision_is_a_parameter_of_every_workload_and_changes_the_key(tmp_path):
    default, = build_plan("torch", "lenet", "graph", "cpu", "quick", [])
    highest, = build_plan("torch", "lenet", "graph", "cpu", "quick", ["precision=highest"])
    assert highest.params["precision"] == "highest" and default.params.get("precision", "default") == "default"
    a, b = execute.key_parts(default, "freeze"), execute.key_parts(highest, "freeze")
    assert [k for k in a if a[k] != b[k]] == ["params"]


def test_the_notebook_side_digest_is_worked_out_once_per_state_of_the_folder(tmp_path):
    """A 2,016-run dry run asked for the same closure 2,016 times (0.1 s each).
    Asked again with nothing changed, the digest is the remembered one; an edit
    that keeps the file's size (a changed digit) still changes it."""
    clone = tmp_path / "clone"
    shutil.copytree(sources.REPO / "frameval", clone / "frameval", ignore=shutil.ignore_patterns("__pycache__"))
    first = sources.digest("torch", clone, workload="lenet")
    hits = sources._digest.cache_info().hits
    assert sources.digest("torch", clone, workload="lenet") == first and sources._digest.cache_info().hits == hits + 1
    ref = clone / "frameval" / "workloads" / "lenet" / "reference.py"
    text = ref.read_text(encoding="utf-8")
    i = next(i for i, c in enumerate(text) if c.isdigit())
    ref.write_text(text[:i] + str((int(text[i]) + 1) % 10) + text[i + 1:], encoding="utf-8")
    st = ref.stat()
    os.utime(ref, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # a coarse clock: the write may keep its mtime
    assert ref.stat().st_size == len(text.encode()) and sources.digest("torch", clone, workload="lenet") != first

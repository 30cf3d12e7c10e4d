"""Offline bundles (issue #30, docs/offline.md): `run_all.py bundle OUT` on
this machine, then `run_all.py --offline OUT` with the network really cut: a
fresh FRAMEVAL_CACHE_DIR, uv's cache empty, pip's configuration files off,
every index and proxy pointed at a closed local port, and no uv on PATH (it is
installed from the bundle too). One bundle (runner + MXNet, the smallest
framework environment) serves every case of the module.

The fast tests check the manifest's refusals on small bundles written here."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, run_all
from frameval.bootstrap import RUNNER_SPEC
from frameval.bundle import manifest as mf
from frameval.bundle.wheels import _tag_rank, platforms
from frameval.envs.spec import framework_spec
from frameval.envs.specfile import parse_spec

CLOSED = "http://127.0.0.1:9"  # the discard port: nothing listens there


def cut_env(tmp: Path) -> dict:
    """An environment with no way to any index: only the bundle can serve."""
    base_bin = str(Path(getattr(sys, "_base_executable", sys.executable)).parent)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PIP_", "UV_", "FRAMEVAL_")) and "proxy" not in k.lower()}
    env.update(FRAMEVAL_CACHE_DIR=str(tmp / "cache"), UV_CACHE_DIR=str(tmp / "uv-cache"),
               FRAMEVAL_JUPYTER_DIR=str(tmp / "jupyter"),  # never repoint the clone's shared kernels
               PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL=f"{CLOSED}/simple", UV_INDEX_URL=f"{CLOSED}/simple",
               HTTP_PROXY=CLOSED, HTTPS_PROXY=CLOSED, ALL_PROXY=CLOSED, http_proxy=CLOSED, https_proxy=CLOSED,
               PATH=os.pathsep.join([base_bin, "/usr/bin", "/bin"]))  # not the runner env's bin: no uv there
    (tmp / "uv-cache").mkdir(parents=True, exist_ok=True)
    return env


def run_cut(tmp: Path, *args, timeout=900):
    python = getattr(sys, "_base_executable", sys.executable)  # a bare Python, as a user starts it
    return subprocess.run([python, str(REPO / "run_all.py"), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, env=cut_env(tmp))


def copy_bundle(src: Path, dst: Path, real=()) -> Path:
    """A copy of a bundle made of links, except the files named in `real` (copied, to be changed)."""
    for f in src.rglob("*"):
        if f.is_file():
            t = dst / f.relative_to(src)
            t.parent.mkdir(parents=True, exist_ok=True)
            rel = f.relative_to(src).as_posix()
            shutil.copyfile(f, t) if rel in real or f.name == mf.NAME else os.symlink(f, t)
    return dst


def one_line_exit_2(p, *words):
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2, (p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("frameval: error:"), p.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


# ------------------------------------------------------------ the real thing
@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("bundle") / "b"
    p = run_all("bundle", str(out), "--frameworks", "mxnet", timeout=1200, check=True)
    return {"out": out, "proc": p, "manifest": json.loads((out / mf.NAME).read_text())}


def test_bundle_holds_runner_and_mxnet_with_hashes(bundle):
    m, out = bundle["manifest"], bundle["out"]
    assert list(m["environments"]) == ["runner", "mxnet"]
    assert m["environments"]["runner"]["spec_key"] == parse_spec(RUNNER_SPEC).key
    assert m["environments"]["mxnet"]["python"] == framework_spec("mxnet").python
    names = {w.split("/")[-1].split("-")[0].lower() for e in m["environments"].values() for w in e["wheels"]}
    assert {"papermill", "uv", "mxnet", "ipykernel", "numpy"} <= names
    for rel, info in m["files"].items():  # every file hashed, and the hash is the file's
        assert hashlib.sha256((out / rel).read_bytes()).hexdigest() == info["sha256"], rel
    assert {"data/mnist-embedded.npz", "data/series-co2.npz"} <= set(m["data"])
    # the sizes printed per environment are the files' sizes
    for label, e in m["environments"].items():
        assert f"{len(e['wheels'])} files, {e['bytes'] / 1e6:,.1f} MB" in bundle["proc"].stdout, label


def test_dry_run_sizes_are_the_bundles_sizes(bundle, tmp_path):
    """--dry-run reads the sizes from the index's metadata, downloads nothing, and gets the real bundle's figures."""
    p = run_all("bundle", str(tmp_path / "dry"), "--frameworks", "mxnet", "--dry-run", timeout=600, check=True)
    for label, e in bundle["manifest"]["environments"].items():
        assert f"{label} (Python {e['python']}): {len(e['wheels'])} files, {e['bytes'] / 1e6:,.1f} MB" in p.stdout
    assert not (tmp_path / "dry").exists()


def test_offline_builds_both_environments_and_runs_a_notebook(bundle, tmp_path):
    p = run_cut(tmp_path, "--offline", str(bundle["out"]), "--frameworks", "mxnet", "--workloads", "lenet",
                "-p", "epochs=2", "-p", "lenet.max_train_samples=512", "--out", str(tmp_path / "out"))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    r = json.loads((tmp_path / "out/runs/mxnet/lenet-graph/result.json").read_text())
    assert r["status"] == "ok" and r["samples_per_s"] > 0
    assert r["epochs"][-1]["train_loss"] < r["epochs"][0]["train_loss"]  # it trained
    envs = tmp_path / "cache" / "envs"
    logs = {f.name.split("-venv-")[0]: f.read_text() for f in envs.glob("*.log")}
    assert set(logs) == {"frameval-runner", "frameval-mxnet"}
    for log in logs.values():  # uv was told to use the bundle alone, and had nothing else
        installs = [ln for ln in log.splitlines() if ln.startswith("$ ") and " pip install " in ln]
        assert installs and all(f"--offline --no-index --find-links {bundle['out']}/wheels" in ln for ln in installs)
    tools_log = (tmp_path / "cache" / "tools" / "uv.log").read_text()  # uv itself came from the bundle
    assert "--no-index" in tools_log and "Successfully installed uv" in tools_log
    report = (tmp_path / "out" / "report.md").read_text()  # the report says where the environments came from
    assert f"built with no network from the bundle {bundle['out']}" in report
    # the data caches are the bundle's own files
    for name in ("mnist-embedded.npz", "series-co2.npz"):
        assert (tmp_path / "cache/data" / name).read_bytes() == (bundle["out"] / "data" / name).read_bytes()


def test_a_flipped_byte_is_refused_before_anything_runs(bundle, tmp_path):
    wheel = next(w for w in bundle["manifest"]["environments"]["mxnet"]["wheels"] if "/mxnet-" in w)
    bad = copy_bundle(bundle["out"], tmp_path / "bad", real={wheel})
    data = bytearray((bad / wheel).read_bytes())
    data[len(data) // 2] ^= 0x01
    (bad / wheel).write_bytes(bytes(data))
    p = run_cut(tmp_path, "--offline", str(bad), "--frameworks", "mxnet", timeout=300)
    one_line_exit_2(p, wheel, "SHA-256")
    assert not (tmp_path / "cache" / "envs").exists()  # nothing was built


def test_a_bundle_for_another_python_is_refused(bundle, tmp_path):
    """The manifest of a copy says Python 3.12 for the runner, as `bundle --python-version 3.12` writes it."""
    other = copy_bundle(bundle["out"], tmp_path / "py312")
    m = json.loads((other / mf.NAME).read_text())
    m["environments"]["runner"]["python"] = "3.12"
    (other / mf.NAME).write_text(json.dumps(m))
    p = run_cut(tmp_path, "--offline", str(other), "--frameworks", "mxnet", timeout=300)
    one_line_exit_2(p, "Python 3.12", "--python-version 3.11")
    assert not (tmp_path / "cache" / "envs").exists()


# ------------------------------------------------------------ unit level
def small_bundle(tmp: Path, python=None, plat=None) -> Path:
    """A bundle of two small files whose manifest names the runner's and MXNet's real specs."""
    (tmp / "wheels").mkdir(parents=True)
    (tmp / "wheels" / "a-1.0-py3-none-any.whl").write_bytes(b"a" * 100)
    (tmp / "wheels" / "b-1.0-py3-none-any.whl").write_bytes(b"b" * 50)
    envs = {label: {"spec_key": s.key, "python": python or s.python, "wheels": []} for label, s in
            (("runner", parse_spec(RUNNER_SPEC)), ("mxnet", framework_spec("mxnet")))}
    m = {"format": mf.FORMAT, "platform": plat or mf.machine_platform(), "environments": envs, "data": [],
         "files": mf.file_entries(tmp, ["wheels/a-1.0-py3-none-any.whl", "wheels/b-1.0-py3-none-any.whl"])}
    (tmp / mf.NAME).write_text(json.dumps(m))
    return tmp


NEEDED = [("runner", parse_spec(RUNNER_SPEC)), ("mxnet", framework_spec("mxnet"))]


@pytest.mark.fast
def test_manifest_checks_pass_a_whole_bundle_and_name_each_fault(tmp_path):
    b = small_bundle(tmp_path / "ok")
    assert mf.check_bundle(b, NEEDED)["environments"]
    (b / "wheels/b-1.0-py3-none-any.whl").write_bytes(b"b" * 49 + b"c")
    with pytest.raises(mf.BundleError, match=r"wheels/b-1.0-py3-none-any.whl does not match its SHA-256"):
        mf.check_bundle(b, NEEDED)
    (b / "wheels/b-1.0-py3-none-any.whl").unlink()
    with pytest.raises(mf.BundleError, match=r"b-1.0-py3-none-any.whl is missing from the bundle"):
        mf.check_bundle(b, NEEDED)
    with pytest.raises(mf.BundleError, match=r"has no environment jax \(it holds: runner, mxnet\)"):
        mf.check_bundle(small_bundle(tmp_path / "nojax"), NEEDED + [("jax", framework_spec("jax"))])
    with pytest.raises(mf.BundleError, match=r"made for Python 3.9, but environment.yml builds runner with"):
        mf.check_bundle(small_bundle(tmp_path / "py39", python="3.9"), NEEDED)
    with pytest.raises(mf.BundleError, match=r"made for the platform manylinux_2_99_x86_64"):
        mf.check_bundle(small_bundle(tmp_path / "new", plat="manylinux_2_99_x86_64"), NEEDED)


@pytest.mark.fast
def test_a_bundle_made_from_another_lock_is_refused(tmp_path):
    """--offline builds from the clone's lock, hash-checked: a bundle of other versions cannot serve it."""
    b = small_bundle(tmp_path / "ok")
    assert mf.check_bundle(b, [("mxnet", framework_spec("mxnet"), "")])
    with pytest.raises(mf.BundleError, match=r"made from another lock of mxnet.yml than this clone's"):
        mf.check_bundle(b, [("mxnet", framework_spec("mxnet"), "0" * 64)])


@pytest.mark.fast
def test_platform_fit_and_wheel_choice():
    assert mf.platform_fits("manylinux_2_28_x86_64", "manylinux_2_36_x86_64")
    assert not mf.platform_fits("manylinux_2_38_x86_64", "manylinux_2_36_x86_64")
    assert not mf.platform_fits("manylinux_2_28_aarch64", "manylinux_2_36_x86_64")
    tags = platforms("manylinux_2_28_x86_64")
    assert tags[0] == "manylinux_2_28_x86_64" and "manylinux_2_17_x86_64" in tags and "manylinux2014_x86_64" in tags
    plat = "manylinux_2_28_x86_64"
    assert _tag_rank("numpy-2.4.1-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl", "3.11", plat) == 4
    assert _tag_rank("numpy-2.4.1-cp312-cp312-manylinux_2_27_x86_64.whl", "3.11", plat) == 0
    assert _tag_rank("x-1-cp39-abi3-manylinux2014_x86_64.whl", "3.11", plat) == 3
    assert _tag_rank("x-1-cp311-cp311-manylinux_2_34_x86_64.whl", "3.11", plat) == 0  # glibc too new
    assert _tag_rank("x-1-py3-none-any.whl", "3.11", plat) == 2


@pytest.mark.fast
@pytest.mark.parametrize("args, words", [
    (["bundle", "OUT", "--python-version", "3"], ["--python-version '3'"]),
    (["bundle", "OUT", "--device", "tpu"], ["--device 'tpu'"]),
    (["bundle", "OUT", "--platform", "amiga"], ["--platform 'amiga'"]),
    (["bundle", "OUT", "--frameworks", "caffe"], ["caffe"]),
])
def test_bundle_bad_input_is_one_line(args, words, tmp_path):
    args = [str(tmp_path / "b") if a == "OUT" else a for a in args]
    one_line_exit_2(run_all(*args, timeout=120), *words)
    assert not (tmp_path / "b").exists()


@pytest.mark.fast
def test_offline_bad_bundle_is_one_line(tmp_path):
    one_line_exit_2(run_all("--offline", str(tmp_path / "none"), "--frameworks", "mxnet", timeout=120),
                    "no such folder")
    (tmp_path / "empty").mkdir()
    one_line_exit_2(run_all("--offline", str(tmp_path / "empty"), "--frameworks", "mxnet", timeout=120),
                    "no manifest.json")
    b = small_bundle(tmp_path / "b", python="3.9")
    one_line_exit_2(run_all("--offline", str(b), "--frameworks", "mxnet", timeout=120), "Python 3.9")

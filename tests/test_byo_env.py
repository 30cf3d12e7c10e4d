"""Bring your own environment: `--python torch=/path/to/bin/python`.

A real second venv (made here: torch installed with uv from the same wheels
the torch spec uses, without ipykernel or numpy) runs a tiny LeNet; frameval
adds only the kernel-side packages, registers its own kernel, records where
the environment came from and its freeze, and keys the cache on that freeze.
Bad interpreters are refused in one line with exit 2 before anything runs."""
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, run_all
from frameval import envs

SMALL = ["--frameworks", "torch", "--workloads", "lenet", "--mode", "eager", "-p", "epochs=2",
         "-p", "lenet.max_train_samples=256"]


def refused(p, *words):
    assert p.returncode == 2, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("frameval: error: --python"), p.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert "running" not in p.stdout


def test_interpreter_without_the_framework(tmp_path):
    """The runner's own Python has no torch: one line naming the import error, exit 2, nothing run."""
    p = run_all(*SMALL, "--out", str(tmp_path / "out"), "--python", f"torch={sys.executable}")
    refused(p, "import torch", "No module named 'torch'")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value, words", [
    ("torch=/no/such/python", ["no such file"]),
    ("torch", ["expected FRAMEWORK=PATH"]),
    ("caffe=/usr/bin/python3", ["unknown framework"]),
    ("mxnet=/usr/bin/python3", ["not among the planned frameworks"]),
])
def test_bad_python_values(tmp_path, value, words):
    refused(run_all(*SMALL, "--out", str(tmp_path / "out"), "--python", value), *words)


def test_not_a_python(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho hello\n")
    fake.chmod(0o755)
    refused(run_all(*SMALL, "--out", str(tmp_path / "out"), "--python", f"torch={fake}"), "not a Python")


def test_missing_kernel_packages_where_frameval_may_not_write(tmp_path):
    """Says exactly which packages are missing and how to add them (a stand-in
    interpreter reports a read-only environment: as root every path is writable)."""
    info = {"python_version": "3.11.7", "prefix": str(tmp_path), "purelib": "/opt/ro/site-packages",
            "missing": ["ipykernel", "numpy"], "externally_managed": False, "writable": False,
            "venv": True, "pip": True}
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\necho 'FRAMEVAL-PROBE {json.dumps(info)}'\n"
                    "echo 'FRAMEVAL-IMPORT {\"version\": \"2.13.0\"}'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    p = run_all(*SMALL, "--out", str(tmp_path / "out"), "--python", f"torch={fake}")
    refused(p, "ipykernel, numpy missing", "/opt/ro/site-packages", "not writable", "-m pip install ipykernel numpy")


@pytest.fixture(scope="module")
def user_venv(tmp_path_factory):
    """A second venv with torch (the spec's pin, from the same wheels) and nothing for the kernel."""
    uv = envs.installers.uv_executable(echo=None)
    root = tmp_path_factory.mktemp("byo")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    pin = envs.spec_pin(envs.parse_spec(envs.spec_path("torch")))
    args, env = envs.pipconf.uv_options()
    cmd = ([uv, "pip", "install", "--python", str(py), *args, pin] if uv
           else [str(py), "-m", "pip", "install", "-q", pin])
    subprocess.run(cmd, check=True, env=dict(os.environ, **env), timeout=1200)
    return py


def test_user_environment_runs_and_is_recorded(user_venv, tmp_path):
    out = tmp_path / "out"
    site = next(user_venv.parent.parent.glob("lib/python*/site-packages"))
    assert not (site / "ipykernel").exists() and not (site / "numpy").exists()
    p = run_all(*SMALL, "--out", str(out), "--python", f"torch={user_venv}", "--timeout", "900")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert re.search(r"installed ipykernel, numpy\S* into .* \(needed by the kernel\)", p.stdout), p.stdout
    assert "environment torch: your " in p.stdout and "spec pins torch==" in p.stdout
    assert (site / "ipykernel").is_dir() and (site / "numpy").is_dir()

    r = json.loads((out / "runs/torch/lenet-eager/result.json").read_text())
    assert r["status"] == "ok", r.get("error")
    e = r["environment"]
    assert e["provided_by_user"] is True and e["spec_pin"] == "torch==2.13.0"
    assert e["python_executable"] == str(user_venv) and e["prefix"] == str(user_venv.parent.parent)
    freeze = subprocess.run([str(user_venv), "-m", "pip", "freeze", "--all"], capture_output=True, text=True).stdout
    assert e["freeze"] == freeze and re.search(r"^torch==", freeze, re.M)
    assert sorted(x.split("<")[0] for x in e["installed_by_frameval"]) == ["ipykernel", "numpy"]
    # its own kernel, pointing at the user's interpreter; the shared frameval-torch kernel untouched
    kname = envs.user_kernel_name("torch", user_venv)
    k = json.loads((envs.kernels.JUPYTER_DIR / "kernels" / kname / "kernel.json").read_text())
    assert k["argv"][0] == str(user_venv) and k["metadata"]["frameval"]["provided_by_user"] is True
    shared = envs.kernels.JUPYTER_DIR / "kernels" / "frameval-torch" / "kernel.json"
    if shared.exists():
        assert json.loads(shared.read_text())["argv"][0] != str(user_venv)
    info = json.loads((out / "environments" / "torch.json").read_text())
    assert info["provided_by_user"] is True and info["backend"] == "user"
    # the report's environment table marks it, with the version that ran beside the spec's pin
    md = (out / "report.md").read_text()
    row = next(line for line in md.splitlines() if "provided by the user" in line)
    assert str(user_venv) in row and f"runs {r['framework_version']}" in row and "the spec pins torch==2.13.0" in row

    # the cache key follows the environment's freeze (dry runs; another edit to frameval/ between
    # the runs may add "changed: frameval", so only the environment part is checked)
    def why(*extra):
        dry = run_all(*SMALL, "--out", str(out), "--dry-run", *extra)
        m = re.search(r"torch/lenet-eager: (reuse \(unchanged\)|execute \(([^)]*)\))", dry.stdout)
        assert m, dry.stdout + dry.stderr
        return m.group(2) or ""

    assert "environment" not in why("--python", f"torch={user_venv}")
    dist = site / "frameval_test_marker-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: frameval-test-marker\nVersion: 1.0\n")
    (dist / "RECORD").write_text("")
    assert "environment" in why("--python", f"torch={user_venv}")
    # and frameval's own torch environment is keyed apart from the user's
    assert "environment" in why()

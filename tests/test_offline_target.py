"""A runner bundle trimmed to what the user's interpreter lacks (issue #47):
`bundle --runner-only --target-python PATH` / `--target-freeze FILE`, then
`--offline BUNDLE --python torch=PATH`, the runner on that interpreter.

The real test: a "user interpreter" (a venv with torch and a few of the
runner's packages, as a GPU box's python3 has them), a bundle trimmed for it,
and a run with the network cut as tests/test_offline.py cuts it, the report
at the end. The fast tests: what the H100's python3 lacks (its freeze, in
tests/fixtures/) against the 45 wheels that made it run there."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, run_all
from frameval import envs
from frameval.bootstrap import RUNNER_SPEC
from frameval.bundle import manifest as mf
from frameval.bundle import trim as tr
from frameval.envs.spec import framework_spec
from frameval.envs.specfile import parse_spec
from test_offline import one_line_exit_2, run_cut

FIXTURES = Path(__file__).parent / "fixtures"
LOCK = REPO / "environment.lock.txt"
# what the user's interpreter has besides torch: some of the runner's packages, at the lock's versions
USER_HAS = ("numpy", "jinja2", "markupsafe", "pyyaml", "psutil", "filelock", "pandas", "python-dateutil",
            "six", "tzdata", "pillow")


def lock_pins() -> dict:
    return tr.lock_graph(LOCK.read_text())[0]


def h100_trim(requires=None) -> tr.Trim:
    freeze = tr.parse_freeze((FIXTURES / "h100-python3-freeze.txt").read_text())
    return tr.trim(LOCK.read_text(), parse_spec(RUNNER_SPEC).pip, freeze, requires)


# ------------------------------------------------------------ unit level
@pytest.mark.fast
def test_what_the_h100_python_lacks_is_the_45_wheels_that_ran_there():
    t = h100_trim()
    got = {n for n, _, _ in t.packed}
    ran = tr.parse_freeze((FIXTURES / "h100-runner-wheels.txt").read_text())
    print("packed, not among the wheels that ran:", sorted(got - set(ran)),
          "| among them, not packed:", sorted(set(ran) - got))
    assert len(got ^ set(ran)) <= 3, sorted(got ^ set(ran))
    freeze = tr.parse_freeze((FIXTURES / "h100-python3-freeze.txt").read_text())
    assert not got & set(freeze)  # nothing the target has at a fitting version is packed
    reused = {n for n, _, _ in t.reused}
    assert {"numpy", "pandas", "matplotlib", "scipy", "jinja2", "pyyaml"} <= reused
    assert {"papermill", "nbconvert", "ipykernel", "mlxtend"} <= got
    assert {n for n, _ in t.left_out} == set(tr.NOT_FOR_RUNS)  # jupyterlab, pytest, uv, mplfonts ... not packed
    assert not got & {"jupyterlab", "jupyter-server", "playwright", "mplfonts", "uv"}  # nor what only they need


@pytest.mark.fast
def test_without_metadata_the_lock_alone_packs_more_never_less():
    """Where the runner's metadata cannot say which edges are an extra's (fqdn is jsonschema's for
    an extra only the lab asks for), the lock's "via" lines alone pack a superset."""
    lean, wide = h100_trim(), h100_trim(requires={})
    assert {n for n, _, _ in lean.packed} < {n for n, _, _ in wide.packed}
    assert "fqdn" in {n for n, _, _ in wide.packed} and "fqdn" not in {n for n, _, _ in lean.packed}


@pytest.mark.fast
def test_a_target_version_that_does_not_meet_the_spec_is_packed():
    lock = LOCK.read_text()
    t = tr.trim(lock, ["papermill==2.6.0", "mistune>=3"], {"papermill": "2.5.0", "mistune": "3.1.0"}, requires={})
    assert [(n, why) for n, _, why in t.packed if n == "papermill"] == [
        ("papermill", "the target's 2.5.0 does not meet ==2.6.0")]
    assert ("mistune", "3.1.0", lock_pins()["mistune"]) in t.reused
    assert tr.satisfies("2.11.0+cu130", ">=2.1,<3") and not tr.satisfies("0.0.9", "==0.0.11")
    assert tr.satisfies("3.1", "~=3.0") and not tr.satisfies("4.0", "~=3.0")


@pytest.mark.fast
@pytest.mark.parametrize("args, words", [
    (["--target-freeze", "FREEZE"], ["only with --runner-only"]),
    (["--runner-only", "--target-freeze", "/no/such/freeze.txt"], ["--target-freeze", "cannot be read"]),
    (["--runner-only", "--target-python", "/no/such/python"], ["--target-python", "no such file"]),
    (["--runner-only", "--target-python", sys.executable, "--python-version", "3.12"], ["leave out"]),
    (["--runner-only", "--target-python", sys.executable, "--target-freeze", "FREEZE"], ["both given"]),
])
def test_target_bad_input_is_one_line(args, words, tmp_path):
    args = [str(FIXTURES / "h100-python3-freeze.txt") if a == "FREEZE" else a for a in args]
    one_line_exit_2(run_all("bundle", str(tmp_path / "b"), *args, timeout=120), *words)
    assert not (tmp_path / "b").exists()


# ------------------------------------------------------------ the real thing
@pytest.fixture(scope="module")
def user_python(tmp_path_factory):
    """The user's interpreter: a venv with the torch spec's pin and USER_HAS at the lock's versions, no kernel."""
    uv = envs.installers.uv_executable(echo=None)
    venv = tmp_path_factory.mktemp("user") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    pins = [envs.spec_pin(envs.parse_spec(envs.spec_path("torch")))] + [f"{n}=={lock_pins()[n]}" for n in USER_HAS]
    args, env = envs.pipconf.uv_options()
    cmd = ([uv, "pip", "install", "--python", str(py), *args, *pins] if uv
           else [str(py), "-m", "pip", "install", "-q", *pins])
    subprocess.run(cmd, check=True, env=dict(os.environ, **env), timeout=1200)
    return py


def test_trimmed_bundle_runs_on_the_users_python_with_no_network(user_python, tmp_path):
    before = tr.parse_freeze(subprocess.run([str(user_python), "-m", "pip", "freeze", "--all"], capture_output=True,
                                            text=True, check=True).stdout)
    out = tmp_path / "b"
    p = run_all("bundle", str(out), "--runner-only", "--target-python", str(user_python), timeout=1200, check=True)
    m = json.loads((out / mf.NAME).read_text())
    runner = m["environments"]["runner"]
    assert m["target"]["source"] == f"--target-python {user_python}" and m["target"]["python"] == runner["python"]
    packed = {tr.norm(w.split("/")[-1].split("-")[0]) for w in runner["wheels"]}
    assert packed and not packed & set(before), sorted(packed & set(before))  # nothing the target has is packed
    assert len(runner["wheels"]) < len(lock_pins())  # a whole runner bundle holds every pin of the lock
    # the runner's own requirements the target has are reused (six and tzdata come with its pandas: never asked)
    assert {"numpy", "pandas", "pillow", "jinja2", "pyyaml", "psutil", "filelock"} <= set(runner["reused"])
    assert "reused (the target has them): " in p.stdout and "numpy " in p.stdout.split("reused (")[1]

    # eager: the bundle and the user's interpreter are on trial, not torch.compile (20-40 s cold in the check)
    p = run_cut(tmp_path, "--offline", str(out), "--python", f"torch={user_python}", "--frameworks", "torch",
                "--mode", "eager", "--workloads", "lenet", "-p", "epochs=2", "-p", "lenet.max_train_samples=256",
                "--out", str(tmp_path / "out"), timeout=1500)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert f"the runner on your {user_python}" in p.stdout
    r = json.loads((tmp_path / "out/runs/torch/lenet-eager/result.json").read_text())
    assert r["status"] == "ok" and r["samples_per_s"] > 0, r.get("error")
    assert (tmp_path / "out/report.md").stat().st_size > 0 and (tmp_path / "out/report.html").stat().st_size > 0
    # the runner's venv: the bundle's wheels, installed with no index; Python 3.11 never asked for
    on = next((tmp_path / "cache/envs").glob("frameval-runner-on-*.log")).read_text()
    assert f"--no-index --find-links {out}/wheels --no-deps" in on
    assert not list((tmp_path / "cache/envs").glob("frameval-runner-venv-*"))  # environment.yml's runner not built


@pytest.mark.fast
def test_the_collector_kernel_is_registered_for_an_interpreter_that_is_not_the_runner(tmp_path):
    """FRAMEVAL_NO_BOOTSTRAP=1 with the user's own Python (the H100's first try): the collector's kernel
    is registered for that Python, with this clone on its PYTHONPATH (there: NoSuchKernel, then
    "No module named 'frameval'")."""
    bare = getattr(sys, "_base_executable", sys.executable)  # not the runner environment's Python
    code = "from frameval.bootstrap import register_runner_kernel; register_runner_kernel()"
    subprocess.run([bare, "-c", code], cwd=REPO, check=True, timeout=120,
                   env=dict(os.environ, FRAMEVAL_JUPYTER_DIR=str(tmp_path), FRAMEVAL_NO_BOOTSTRAP="1"))
    k = json.loads((tmp_path / "kernels/frameval-runner/kernel.json").read_text())
    assert k["argv"][0] == bare and k["env"]["PYTHONPATH"] == str(REPO)
    p = subprocess.run([bare, "-c", "import frameval, sys; print(frameval.__file__)"], capture_output=True, text=True,
                       cwd="/", env=dict(os.environ, **k["env"]), timeout=60)
    assert p.stdout.startswith(str(REPO)), p.stderr  # what the collector's first cell needs


@pytest.mark.fast
def test_a_trimmed_bundle_without_an_interpreter_of_its_python_is_one_line(tmp_path):
    """The runner's Python is the target's (3.12 here), not environment.yml's: accepted by the manifest
    checks, and refused only where no --python interpreter (nor the one starting frameval) is that Python."""
    from frameval.envs.lockfile import lock_digest
    from test_offline import small_bundle
    b = small_bundle(tmp_path / "b")
    m = json.loads((b / mf.NAME).read_text())
    m["environments"]["runner"].update(python="3.12", trimmed=True, lock=lock_digest(parse_spec(RUNNER_SPEC)),
                                       requirements=["papermill==2.6.0"])
    m["environments"]["mxnet"]["lock"] = lock_digest(framework_spec("mxnet"))
    m["target"] = {"python": "3.12", "source": "--target-freeze gpu-box.txt"}
    (b / mf.NAME).write_text(json.dumps(m))
    assert mf.check_bundle(b, [("runner", parse_spec(RUNNER_SPEC), lock_digest(parse_spec(RUNNER_SPEC)))])
    one_line_exit_2(run_all("--offline", str(b), "--frameworks", "mxnet", timeout=120),
                    "trimmed for Python 3.12", "--target-freeze gpu-box.txt", "--python FW=PATH")

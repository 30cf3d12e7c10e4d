"""The run configuration in two steps: `validate()` is pure (no index, no
interpreter, no folder, no environment variable), `prepare()` asks the world
and makes the output folder; the prepared config reaches the re-executed
runner as a file, so a plan of thousands of runs fits."""
import os
import subprocess

import pytest

from conftest import REPO, bare_python
from frameval import versions
from frameval.config import RunConfig
from frameval.exits import BadInput


def _forbid(monkeypatch, *targets):
    def refuse(*a, **k):
        raise AssertionError("validate() touched the machine")
    for mod, name in targets:
        monkeypatch.setattr(mod, name, refuse)


@pytest.mark.fast
def test_validate_has_no_side_effects(tmp_path, monkeypatch):
    from frameval import envs, gpus
    from frameval.bundle import offline
    _forbid(monkeypatch, (versions, "check_pins"), (envs, "probe_user_python"), (gpus, "visible_gpus"),
            (offline, "activate"))
    before = dict(os.environ)
    out = tmp_path / "out"
    cfg = RunConfig(frameworks="paddle==9.9.9,torch", workloads="lenet", out=str(out), device="cpu",
                    pythons=[f"torch={tmp_path / 'no' / 'python'}"])
    assert cfg.validated and not cfg.prepared and cfg.user_pythons == {"torch": str(tmp_path / "no" / "python")}
    assert not out.exists() and dict(os.environ) == before and cfg.user_probes == {}


@pytest.mark.fast
def test_prepare_refuses_a_bad_pin_and_creates_nothing(tmp_path, monkeypatch):
    asked = []

    def check_pins(pins, device, backend):
        asked.append(pins)
        return "--frameworks paddle==9.9.9: paddlepaddle 9.9.9 is not in the package index"
    monkeypatch.setattr(versions, "check_pins", check_pins)
    out = tmp_path / "out"
    cfg = RunConfig(frameworks="paddle==9.9.9", workloads="lenet", out=str(out))
    assert asked == [] and not out.exists()
    with pytest.raises(BadInput, match="9.9.9 is not in the package index"):
        cfg.prepare()
    assert asked == [[("paddle", "9.9.9")]] and not out.exists() and not cfg.prepared


@pytest.mark.fast
def test_the_handed_over_file_must_be_prepared_and_is_removed_once_read(tmp_path):
    cfg = RunConfig(frameworks="torch", workloads="lenet", dry_run=True, out=str(tmp_path / "o"))
    with pytest.raises(BadInput, match="not prepared"):
        cfg.write(tmp_path / "c.json")
    cfg.prepare()
    path = cfg.write(tmp_path / "c.json")
    back = RunConfig.load(path)
    assert back.prepared and [r.name for r in back.runs] == [r.name for r in cfg.runs] and not path.exists()


def test_a_dry_run_of_2000_runs_goes_through_the_bootstrap(tmp_path):
    """7 frameworks x 3 workloads x 2 modes x 48 repeats: its config is ~1 MB of
    JSON, far over one argument's 128 KiB (it crashed os.execv with E2BIG when
    the config travelled on the command line). Started from a Python outside
    the runner environment, so the re-execution really happens."""
    out = tmp_path / "o"
    p = subprocess.run([bare_python(), str(REPO / "run_all.py"), "--mode", "both", "--repeats", "48", "--dry-run",
                        "--out", str(out)], capture_output=True, text=True, timeout=600, cwd=REPO,
                       env={k: v for k, v in os.environ.items() if k != "FRAMEVAL_NO_BOOTSTRAP"})
    assert p.returncode == 0, p.stderr[-3000:]
    lines = p.stdout.splitlines()
    assert f"frameval: plan for {out} (2016 runs, profile quick):" in lines
    assert sum(1 for ln in lines if ln.lstrip().startswith("[")) == 2016 and not out.exists()


def test_a_bad_pin_through_the_bootstrap_exits_2_before_any_build(tmp_path):
    """From a Python outside the runner environment: the index is asked before
    the runner environment is looked at, built or re-executed into."""
    out = tmp_path / "x"
    p = subprocess.run([bare_python(), str(REPO / "run_all.py"), "--frameworks", "paddle==3.2.9", "--workloads",
                        "lenet", "--out", str(out)], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "paddlepaddle 3.2.9 is not in the package index" in p.stderr and not out.exists()
    assert "frameval: runner" not in p.stdout and "environment" not in p.stdout, p.stdout

"""Environment specs, cache keys, the per-user folders and kernel registration."""
import json

import pytest

from frameval import envs
from frameval.envspec import SpecError, parse_spec
from frameval.nb import paths
from conftest import REPO

FRAMEWORKS = ("torch", "tensorflow", "paddle", "mindspore", "megengine", "mxnet")


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_every_framework_has_a_spec(fw):
    spec = parse_spec(REPO / "envs" / f"{fw}.yml")
    assert spec.python in ("3.10", "3.11") and "ipykernel" in spec.pip
    assert len(spec.key) == 12


def test_known_pins():
    assert parse_spec(REPO / "envs/megengine.yml").python == "3.10"
    assert "numpy<2" in parse_spec(REPO / "envs/mindspore.yml").pip
    assert "numpy<1.24" in parse_spec(REPO / "envs/mxnet.yml").pip
    assert "torch==2.13.0" in parse_spec(REPO / "envs/torch.yml").pip
    assert any("mxnet-cu112" in p for p in parse_spec(REPO / "envs/mxnet-gpu.yml").pip)
    assert any("paddlepaddle-gpu" in p for p in parse_spec(REPO / "envs/paddle-gpu.yml").pip)


def test_spec_parsing_and_key(tmp_path):
    f = tmp_path / "x.yml"
    f.write_text("name: x  # comment\nchannels:\n  - conda-forge\ndependencies:\n  - python=3.10\n  - pip\n"
                 "  - pip:\n      - numpy<2   # why\n      - --extra-index-url https://example.org/simple/\n")
    s = parse_spec(f)
    assert (s.name, s.python, s.pip) == ("x", "3.10", ("numpy<2", "--extra-index-url https://example.org/simple/"))
    key = s.key
    f.write_text(f.read_text() + "# a comment changes nothing\n")
    assert parse_spec(f).key == key
    f.write_text(f.read_text().replace("numpy<2", "numpy<3"))
    assert parse_spec(f).key != key


@pytest.mark.parametrize("text, message", [
    ("channels: []\ndependencies:\n  - python=3.11\n", "missing 'name'"),
    ("name: x\ndependencies:\n  - pip\n", "must pin a Python version"),
    ("name: x\n  bad indent\n", "expected a '- item'"),
])
def test_bad_specs(tmp_path, text, message):
    f = tmp_path / "bad.yml"
    f.write_text(text)
    with pytest.raises(SpecError, match=message):
        parse_spec(f)


def test_cache_dir_matches_platformdirs(monkeypatch):
    import platformdirs
    monkeypatch.delenv("FRAMEVAL_CACHE_DIR", raising=False)
    assert str(paths.user_cache_dir()) == platformdirs.user_cache_dir("frameval")
    assert str(paths.user_data_dir()) == platformdirs.user_data_dir("frameval")


def test_env_location_is_keyed_by_spec():
    spec = parse_spec(REPO / "envs/torch.yml")
    env = envs.env_for(spec, envs.BACKENDS["venv"])
    assert env.prefix.parent == paths.envs_dir() and env.prefix.name.endswith(spec.key)


def test_find_python_skips_missing_versions():
    assert envs.find_python("2.0") is None
    import sys
    v = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert envs.find_python(v) is not None


def test_kernels_are_project_scoped(matrix):
    """After a run, every framework kernel is registered under the repo's
    .frameval/jupyter, points at a cached env, and nothing went to ~/.local."""
    kdir = envs.JUPYTER_DIR / "kernels"
    for fw in FRAMEWORKS:
        spec = json.loads((kdir / f"frameval-{fw}" / "kernel.json").read_text())
        assert spec["argv"][0].startswith(str(paths.envs_dir()))
        assert spec["env"]["PYTHONPATH"] == str(REPO)
    from pathlib import Path
    home_kernels = Path.home() / ".local/share/jupyter/kernels"
    assert not any(p.name.startswith("frameval") for p in home_kernels.glob("*")) if home_kernels.exists() else True


def test_env_build_failure_is_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("FRAMEVAL_CACHE_DIR", str(tmp_path))
    f = tmp_path / "broken.yml"
    f.write_text("name: broken\ndependencies:\n  - python=3.11\n  - pip\n  - pip:\n      - this-package-does-not-exist-frameval==0.0.1\n")
    with pytest.raises(envs.EnvBuildError, match="broken"):
        envs.ensure_env(parse_spec(f), envs.BACKENDS["venv"], echo=lambda m: None)
    assert not envs.env_for(parse_spec(f), envs.BACKENDS["venv"]).ready

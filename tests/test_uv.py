"""Environments built with uv: the user's pip settings reach uv, uv resolves
the same torch wheel as pip, a uv-built environment is keyed and reused like a
pip-built one, pip takes over (with one line) where uv cannot be had, and
independent environments build in parallel, a failed one naming its log."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

from frameval import envs
from frameval.envs.specfile import parse_spec

UV = envs.installers.uv_executable(echo=None)
# uv is in the runner environment (environment.yml): its absence is a failure, not a skip.
needs_uv = pytest.mark.usefixtures("uv_found")


@pytest.fixture
def uv_found():
    assert UV is not None, "uv is in environment.yml, yet envs.installers.uv_executable() found none"


@pytest.fixture
def fresh_uv_state(monkeypatch):
    """A fresh uv lookup (restored afterwards)."""
    saved = dict(envs.installers._uv_state)
    envs.installers._uv_state.clear()
    yield
    envs.installers._uv_state.clear()
    envs.installers._uv_state.update(saved)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FRAMEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(envs.kernels, "JUPYTER_DIR", tmp_path / "jupyter")  # never repoint the shared kernels
    return tmp_path


def tiny_spec(folder: Path, name: str, *pip, file: str = "") -> Path:
    f = folder / f"{file or name}.yml"
    f.write_text(f"name: {name}\ndependencies:\n  - python={sys.version_info[0]}.{sys.version_info[1]}\n"
                 "  - pip\n  - pip:\n" + "".join(f"      - {p}\n" for p in pip))
    return f


# ------------------------------------------------------------ pip's settings
@pytest.mark.fast
def test_pip_settings_precedence_as_pip(monkeypatch):
    for var in [v for v in os.environ if v.startswith("PIP_")]:
        monkeypatch.delenv(var)
    items = [("global.index-url", "https://a.example/simple"), ("global.find-links", "/w1"),
             ("install.find-links", "/w2 /w3"), ("global.extra-index-url", "file:///x/simple"),
             (":env:.extra-index-url", "file:///y/simple file:///z/simple"), ("global.no-cache-dir", "true"),
             ("global.trusted-host", "h.example"), ("global.cert", "/etc/ca.pem"), ("global.timeout", "60")]
    s = envs.pipconf.pip_settings(items)
    assert s["find-links"] == "/w2 /w3"  # [install] beats [global]
    assert s["extra-index-url"] == "file:///y/simple file:///z/simple"  # PIP_* beats files
    args, env = envs.pipconf.uv_options(s)
    assert args[:2] == ["--index-strategy", "unsafe-best-match"]
    pairs = list(zip(args, args[1:]))
    assert ("--index-url", "https://a.example/simple") in pairs
    assert ("--extra-index-url", "file:///y/simple") in pairs and ("--extra-index-url", "file:///z/simple") in pairs
    assert ("--find-links", "/w2") in pairs and ("--find-links", "/w3") in pairs
    assert ("--allow-insecure-host", "h.example") in pairs and "--no-cache" in args
    assert env["UV_HTTP_TIMEOUT"] == "60"
    if not os.environ.get("SSL_CERT_FILE"):
        assert env["SSL_CERT_FILE"] == "/etc/ca.pem"


@pytest.mark.fast
def test_pip_environment_variables_win(monkeypatch):
    monkeypatch.setenv("PIP_FIND_LINKS", "/from-env")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    s = envs.pipconf.pip_settings([("global.find-links", "/from-file")])
    args, _ = envs.pipconf.uv_options(s)
    assert ("--find-links", "/from-env") in list(zip(args, args[1:])) and "--no-index" in args


@pytest.mark.fast
def test_this_machines_pip_configuration_reaches_uv():
    """What `pip config list` says here appears in uv's arguments."""
    p = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True)
    args, _ = envs.pipconf.uv_options()
    for line in p.stdout.splitlines():
        key, _, value = line.partition("=")
        name = key.split(".", 1)[-1]
        if name in ("find-links", "extra-index-url", "index-url"):
            for v in value.strip("'\"").split():
                assert v in args, (name, v, args)


# ------------------------------------------------------------ same wheel as pip
@needs_uv
def test_uv_and_pip_resolve_the_same_torch_wheel(tmp_path):
    """torch==2.13.0: pip's choice (its report) and what uv installs (version and
    wheel tags, from the installed dist-info) are the same file."""
    pin = next(p for p in parse_spec(envs.spec_path("torch")).pip if p.startswith("torch"))
    rep = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--ignore-installed",
                          "--quiet", "--report", "-", pin], capture_output=True, text=True, timeout=600)
    assert rep.returncode == 0, rep.stderr[-2000:]
    item = json.loads(rep.stdout)["install"][0]
    pip_version = item["metadata"]["version"]
    pip_file = unquote(item["download_info"]["url"].rsplit("/", 1)[-1])
    pip_tags = pip_file[:-len(".whl")].split("-")[-3:]  # python, abi, platform

    venv = tmp_path / "v"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    args, env = envs.pipconf.uv_options()
    dry = subprocess.run([UV, "pip", "install", "--dry-run", "--no-deps", "--python", str(venv / "bin/python"),
                          *args, pin], capture_output=True, text=True, env=dict(os.environ, **env), timeout=600)
    assert f"+ torch=={pip_version}" in dry.stdout + dry.stderr, dry.stdout + dry.stderr
    inst = subprocess.run([UV, "pip", "install", "--no-deps", "--python", str(venv / "bin/python"), *args, pin],
                          capture_output=True, text=True, env=dict(os.environ, **env), timeout=900)
    assert inst.returncode == 0, inst.stderr[-2000:]
    wheel = next((venv / "lib").glob("python*/site-packages/torch-*.dist-info/WHEEL")).read_text()
    uv_tags = {ln.split(":", 1)[1].strip() for ln in wheel.splitlines() if ln.startswith("Tag:")}
    pip_tag_set = {f"{py}-{abi}-{plat}" for py in pip_tags[0].split(".") for abi in pip_tags[1].split(".")
                   for plat in pip_tags[2].split(".")}
    assert uv_tags == pip_tag_set, (uv_tags, pip_file)
    meta = next((venv / "lib").glob("python*/site-packages/torch-*.dist-info/METADATA")).read_text()
    assert f"\nVersion: {pip_version}\n" in meta


# ------------------------------------------------------------ keys, reuse, fallback
@needs_uv
def test_uv_built_env_is_keyed_and_reused_like_pip(cache, fresh_uv_state, monkeypatch):
    spec = parse_spec(tiny_spec(cache, "tiny", "six"))
    backend = envs.BACKENDS["venv"]
    lines = []
    env = envs.ensure_env(spec, backend, echo=lines.append)
    assert env.built_now and env.ready and env.info()["installer"].startswith("uv")
    assert env.prefix == envs.env_for(spec, backend).prefix  # the same place a pip build would use
    assert env.prefix.name == f"tiny-venv-{spec.key}"
    freeze = env.freeze
    assert "six==" in freeze and "pip==" in freeze  # pip is there, as in a pip-built env
    # ready marker: reused, not rebuilt, whatever the installer now
    monkeypatch.setenv("FRAMEVAL_INSTALLER", "pip")
    envs.installers._uv_state.clear()
    again = envs.ensure_env(spec, backend, echo=lines.append)
    assert not again.built_now and again.freeze == freeze
    # a half-built one (no marker) is rebuilt
    (env.prefix / envs.MARKER).unlink()
    rebuilt = envs.ensure_env(spec, backend, echo=lines.append)
    assert rebuilt.built_now and rebuilt.info()["installer"] == "pip"
    assert rebuilt.prefix == env.prefix


def test_pip_fallback_says_so_in_one_line(cache, fresh_uv_state, monkeypatch):
    monkeypatch.setenv("FRAMEVAL_INSTALLER", "pip")
    spec = parse_spec(tiny_spec(cache, "tinypip", "six"))
    lines = []
    env = envs.ensure_env(spec, envs.BACKENDS["venv"], echo=lines.append)
    assert env.info()["installer"] == "pip" and "six==" in env.freeze
    said = [ln for ln in lines if "uv unavailable" in ln]
    assert len(said) == 1 and "pip" in said[0], lines


@needs_uv
def test_parallel_builds_one_line_each_and_failure_names_its_log(cache, monkeypatch):
    specs = cache / "specs"
    specs.mkdir()
    tiny_spec(specs, "frameval-alpha", "six", file="alpha")
    tiny_spec(specs, "frameval-beta", "idna", file="beta")
    tiny_spec(specs, "frameval-gamma", "frameval-no-such-package==0.0.1", file="gamma")
    monkeypatch.setattr(envs.spec, "ENVS_SPEC_DIR", specs)
    lines, done = [], {}

    def on_done(fw, env, secs):
        done[fw] = env
        lines.append(f"{fw}: {'ok' if isinstance(env, envs.Env) else str(env).splitlines()[0]}")

    out = envs.ensure_frameworks(["alpha", "beta", "gamma"], echo=lines.append, on_done=on_done)
    assert set(done) == {"alpha", "beta", "gamma"}
    assert isinstance(out["alpha"], envs.Env) and isinstance(out["beta"], envs.Env)
    err = str(out["gamma"]).splitlines()[0]
    assert "frameval-gamma" in err and "log: " in err
    log = Path(err.split("log: ")[1].strip())
    assert log.is_file() and "frameval-no-such-package" in log.read_text()
    assert len([ln for ln in lines if ln.startswith(("alpha:", "beta:", "gamma:"))]) == 3
    assert sum("building 3 environment(s) in parallel" in ln for ln in lines) == 1, lines
    # registered in the test's own Jupyter folder, pointing at the built envs
    k = json.loads((envs.kernels.JUPYTER_DIR / "kernels" / "frameval-alpha" / "kernel.json").read_text())
    assert k["argv"][0] == str(out["alpha"].python)
    # cached: nothing built, quickly
    again = envs.ensure_frameworks(["alpha", "beta"], echo=lines.append)
    assert not again["alpha"].built_now and not again["beta"].built_now


@pytest.mark.fast
def test_seed_packages_match_ensurepip():
    """A uv-built venv gets what `python -m venv` would add (pip, setuptools
    before 3.12) at ensurepip's versions, unless the spec names them."""
    import ensurepip
    spec = parse_spec(envs.spec_path("torch"))
    seeds = envs.backends._seed_packages(Path(sys.executable), spec)
    assert f"pip=={ensurepip._PIP_VERSION}" in seeds
    if getattr(ensurepip, "_SETUPTOOLS_VERSION", None):
        assert f"setuptools=={ensurepip._SETUPTOOLS_VERSION}" in seeds
    from dataclasses import replace
    assert not any(s.startswith("pip==") for s in envs.backends._seed_packages(Path(sys.executable),
                                                                      replace(spec, pip=spec.pip + ("pip>=24",))))


# ------------------------------------------------------------ built from a lock
@needs_uv
@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_an_environment_built_from_a_lock_has_exactly_its_versions(cache, fresh_uv_state, monkeypatch, installer):
    """A lock made with uv (hashes) is what the environment holds, with uv and with
    pip (--require-hashes); a file not in the lock is refused."""
    from frameval.envs import lockfile
    spec = parse_spec(tiny_spec(cache, "tinylock", "idna<3.8", "six"))
    with open(cache / "lock.log", "w") as log:
        lock = lockfile.make_lock(spec, log)
    assert lock.state == lockfile.MADE and set(lock.pins) == {"idna", "six"}, (cache / "lock.log").read_text()
    if installer == "pip":
        monkeypatch.setenv("FRAMEVAL_INSTALLER", "pip")
    env = envs.ensure_env(spec, envs.BACKENDS["venv"], echo=None)
    assert env.prefix.name.endswith(f"{spec.key}-{lock.digest[:8]}") and env.info()["lock"]["state"] == "locked"
    frozen = dict(ln.split("==") for ln in env.freeze.splitlines() if "==" in ln)
    assert {k: frozen[k] for k in lock.pins} == lock.pins
    assert "--require-hashes" in env.prefix.with_suffix(".log").read_text()
    # a hash that is not the file's: the install is refused
    lp = lockfile.lock_path(spec.path)
    lp.write_text(re.sub(r"sha256:[0-9a-f]{64}", "sha256:" + "0" * 64, lp.read_text()))
    with pytest.raises(envs.EnvBuildError):
        envs.ensure_env(spec, envs.BACKENDS["venv"], echo=None)


@needs_uv
def test_a_lock_installs_from_uvs_cache_alone_where_it_holds_every_file(cache, tmp_path, monkeypatch):
    """No index asked where uv's cache holds the lock's files (the same files, the
    same hashes); where it lacks one, the index; a failure names the index's reason."""
    from frameval.envs import installers, lockfile
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))  # empty: the first install must go online
    # the default index alone: a machine's local wheel folders would serve --offline too
    monkeypatch.setattr(installers, "uv_options", lambda: (["--index-strategy", "unsafe-best-match"], {}))
    spec = parse_spec(tiny_spec(cache, "cachelock", "six"))
    with open(cache / "lock.log", "w") as log:
        lock = lockfile.make_lock(spec, log)
    assert lock.state == lockfile.MADE, (cache / "lock.log").read_text()
    logs = []
    for name in ("first", "second"):
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / name)], check=True)
        python = tmp_path / name / "bin" / "python"
        with open(tmp_path / f"{name}.log", "w") as log:
            installers.uv_install(UV, python, [], log, lock_file=str(lockfile.lock_path(spec.path)))
        logs.append((tmp_path / f"{name}.log").read_text())
        assert subprocess.run([str(python), "-c", "import six"]).returncode == 0, logs[-1]
    first, second = logs
    assert "--offline" in first and installers.ONLINE_AGAIN in first, first  # the wheel was not cached yet
    assert "--offline" in second and installers.ONLINE_AGAIN not in second, second  # now it is: no index
    assert second.count("$ ") == 1, second
    # a pin no index has: refused offline, then online, and the reason is the index's
    bad = tmp_path / "bad.lock.txt"
    bad.write_text("six==0.0.1 --hash=sha256:" + "0" * 64 + "\n")
    with open(tmp_path / "bad.log", "w") as log, pytest.raises(installers.EnvBuildError):
        installers.uv_install(UV, tmp_path / "second" / "bin" / "python", [], log, lock_file=str(bad))
    text = (tmp_path / "bad.log").read_text()
    assert installers.ONLINE_AGAIN in text and "offline" not in installers.failure_line(tmp_path / "bad.log").lower(), text

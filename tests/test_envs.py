"""Environment specs, cache keys, the per-user folders and kernel registration."""
import json
from pathlib import Path

import pytest

from frameval import envs
from frameval.envs.specfile import SpecError, parse_spec
from frameval.nb import paths
from frameval.catalog import FRAMEWORKS
from conftest import REPO


@pytest.mark.fast
@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_every_framework_has_a_spec(fw):
    spec = parse_spec(REPO / "envs" / f"{fw}.yml")
    assert spec.python in ("3.10", "3.11") and "ipykernel" in spec.pip
    assert len(spec.key) == 12


@pytest.mark.fast
def test_known_pins():
    assert parse_spec(REPO / "envs/megengine.yml").python == "3.10"
    assert "numpy<2" in parse_spec(REPO / "envs/mindspore.yml").pip
    assert "numpy<1.24" in parse_spec(REPO / "envs/mxnet.yml").pip
    assert "torch==2.13.0" in parse_spec(REPO / "envs/torch.yml").pip
    assert any("mxnet-cu112" in p for p in parse_spec(REPO / "envs/mxnet-gpu.yml").pip)
    assert any("paddlepaddle-gpu" in p for p in parse_spec(REPO / "envs/paddle-gpu.yml").pip)


@pytest.mark.fast
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


READERS = pytest.mark.parametrize("stdlib_only", [False, True], ids=["pyyaml", "stdlib"])


@pytest.mark.fast
@pytest.mark.parametrize("f", sorted((REPO / "envs").glob("*.yml")) + [REPO / "environment.yml"], ids=lambda p: p.name)
def test_both_readers_agree_on_every_spec(f):
    """The runner's env is found by the hash the bare-Python reader computes,
    then looked up again inside it with PyYAML: the two must agree."""
    a, b = parse_spec(f), parse_spec(f, stdlib_only=True)
    assert (a.name, a.python, a.conda, a.pip, a.channels, a.key) == (b.name, b.python, b.conda, b.pip, b.channels, b.key)


LAYOUTS = {
    "2-space": "name: x\nchannels:\n  - conda-forge\ndependencies:\n  - python=3.10\n  - pip\n  - pip:\n"
               "      - numpy<2\n      - six\n  - zlib\n",
    "4-space, a conda dependency after pip": "name: x\nchannels:\n    - conda-forge\ndependencies:\n"
               "    - python=3.10\n    - pip\n    - pip:\n        - numpy<2\n        - six\n    - zlib\n",
    "column 0": "name: x\nchannels:\n- conda-forge\ndependencies:\n- python=3.10\n- pip\n- pip:\n"
                "  - numpy<2\n  - six\n- zlib\n",
    "pip list at the key's column": "name: x\nchannels: [conda-forge]\ndependencies:\n  - python=3.10\n"
                "  - pip\n  - pip:\n    - numpy<2\n    - six\n  - zlib\n",
}


@pytest.mark.fast
@READERS
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_spec_layouts(tmp_path, layout, stdlib_only):
    f = tmp_path / "x.yml"
    f.write_text(LAYOUTS[layout])
    s = parse_spec(f, stdlib_only=stdlib_only)
    assert (s.python, s.conda, s.pip, s.channels) == ("3.10", ("zlib",), ("numpy<2", "six"), ("conda-forge",))


@pytest.mark.fast
@READERS
@pytest.mark.parametrize("text, message", [
    ("channels: []\ndependencies:\n  - python=3.11\n", "missing 'name'"),
    ("name: x\ndependencies:\n  - pip\n", "must pin a Python version"),
    ("name: x\ndependencies:\n  - python=3.11\n  - {conda: numpy}\n", "dependency must be a string|outside the subset"),
])
def test_bad_specs(tmp_path, text, message, stdlib_only):
    f = tmp_path / "bad.yml"
    f.write_text(text)
    with pytest.raises(SpecError, match=message):
        parse_spec(f, stdlib_only=stdlib_only)


@pytest.mark.fast
@pytest.mark.parametrize("text, line", [
    ("name: x\n  bad indent\n", 2),
    ("name: x\nvariables:\n  FOO: 1\ndependencies:\n  - python=3.11\n", 3),
    ("name: x\ndependencies:\n  - python=3.11\n   - six\n", 4),
    ("name: x\ndependencies:\n  - python=3.11\n  - pip: [six]\n", 4),
])
def test_stdlib_reader_refuses_what_it_cannot_read(tmp_path, text, line):
    """Valid YAML or not, what the bare-Python reader does not take is refused
    in one line naming the file and line, never misread."""
    f = tmp_path / "odd.yml"
    f.write_text(text)
    with pytest.raises(SpecError) as e:
        parse_spec(f, stdlib_only=True)
    assert str(e.value).startswith(f"{f}:{line}: ") and "\n" not in str(e.value)


@pytest.mark.fast
def test_cache_dir_matches_platformdirs(monkeypatch):
    import platformdirs
    monkeypatch.delenv("FRAMEVAL_CACHE_DIR", raising=False)
    assert str(paths.user_cache_dir()) == platformdirs.user_cache_dir("frameval")
    assert str(paths.user_data_dir()) == platformdirs.user_data_dir("frameval")


@pytest.mark.fast
def test_env_location_is_keyed_by_spec_and_its_lock():
    from frameval.envs import lockfile
    spec = parse_spec(REPO / "envs/torch.yml")
    env = envs.env_for(spec, envs.BACKENDS["venv"])
    lock = lockfile.status(spec)[0]
    assert env.prefix.parent == paths.envs_dir() and env.prefix.name.endswith(f"{spec.key}-{lock.digest[:8]}")


@pytest.mark.fast
def test_find_python_skips_missing_versions():
    assert envs.find_python("2.0") is None
    import sys
    v = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert envs.find_python(v) is not None


def test_kernels_are_project_scoped(matrix):
    """After a run, every framework kernel is registered under the repo's
    .frameval/jupyter, points at a cached env, and nothing went to ~/.local."""
    kdir = envs.kernels.JUPYTER_DIR / "kernels"
    for fw in FRAMEWORKS:
        spec = json.loads((kdir / f"frameval-{fw}" / "kernel.json").read_text())
        assert spec["argv"][0].startswith(str(paths.envs_dir()))
        assert spec["env"]["PYTHONPATH"] == str(REPO)
    from pathlib import Path
    home_kernels = Path.home() / ".local/share/jupyter/kernels"
    assert not any(p.name.startswith("frameval") for p in home_kernels.glob("*")) if home_kernels.exists() else True


def test_torch_runs_find_inductors_isa_probe_built_with_the_environment(matrix):
    """For real: the torch environment's build ran inductor's vector-ISA probe
    once (its programs in the environment's own folder), and each torch graph
    run copied them into its empty inductor cache instead of building them in
    its check (2.4-2.7 s of g++ each on 2 cores), while its graphs compiled
    cold there; the run says so. Eager runs compile nothing and copy nothing."""
    from frameval.frameworks.torch import isa_probe
    kernel = json.loads((envs.kernels.JUPYTER_DIR / "kernels/frameval-torch/kernel.json").read_text())
    seed = Path(kernel["argv"][0]).parent.parent / isa_probe.FOLDER
    programs = sorted(p.relative_to(seed) for p in seed.rglob("*.so"))
    assert programs, f"no ISA probe program in {seed}"
    for wl in ("lenet", "dcgan", "lstm"):
        for mode in ("graph", "eager"):
            r = matrix["results"][("torch", wl, mode)]
            cache = matrix["out"] / "runs/torch" / f"{wl}-{mode}" / "work/torchinductor"
            noted = [n for n in r["notes"] if "vector-ISA probe" in n]
            if mode == "eager":
                assert not noted and not any(cache.rglob("*.so")), wl
                continue
            assert noted, (wl, r["notes"])
            for rel in programs:  # the environment's copy, its time kept: not built again in the run
                assert (cache / rel).stat().st_mtime == (seed / rel).stat().st_mtime < r["clock"]["created"], rel
            graphs = [p for p in cache.rglob("*.so") if p.relative_to(cache) not in programs]
            assert graphs and all(p.stat().st_mtime > r["clock"]["created"] for p in graphs), wl  # compiled cold


def test_env_build_failure_is_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("FRAMEVAL_CACHE_DIR", str(tmp_path))
    f = tmp_path / "broken.yml"
    f.write_text("name: broken\ndependencies:\n  - python=3.11\n  - pip\n  - pip:\n      - this-package-does-not-exist-frameval==0.0.1\n")
    with pytest.raises(envs.EnvBuildError, match="broken") as e:
        envs.ensure_env(parse_spec(f), envs.BACKENDS["venv"], echo=lambda m: None)
    first = str(e.value).splitlines()[0]
    assert "this-package-does-not-exist-frameval" in first and "log: " in first  # why, and where to look
    assert not envs.env_for(parse_spec(f), envs.BACKENDS["venv"]).ready


@pytest.mark.fast
def test_per_user_folders_live_in_a_stdlib_module():
    from frameval import paths as stdlib_paths
    assert paths.user_cache_dir is stdlib_paths.user_cache_dir and paths.envs_dir is stdlib_paths.envs_dir


def test_pre_bootstrap_code_needs_no_numpy(tmp_path):
    """run_all.py starts on a Python without numpy: the modules it imports before
    the re-exec into the runner env are standard library only, and --dry-run works."""
    import subprocess
    import sys
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    py = str(bare / "bin" / "python")
    code = ("import sys; import frameval.cli, frameval.bootstrap, frameval.envs, frameval.versions, frameval.paths, "
            "frameval.plan, frameval.files, frameval.locks, frameval.testtools; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('numpy', 'yaml', 'filelock') "
            "or m.startswith('frameval.nb')]; assert not bad, bad; import numpy")
    p = subprocess.run([py, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert "No module named 'numpy'" in p.stderr, p.stderr  # the bare Python really has no numpy
    p = subprocess.run([py, str(REPO / "run_all.py"), "--dry-run", "--frameworks", "torch", "--workloads", "lenet",
                        "--out", str(tmp_path / "x")], capture_output=True, text=True, timeout=1800)
    assert p.returncode == 0 and "torch/lenet-graph:" in p.stdout, p.stdout + p.stderr


def test_env_backend_conda_without_conda_is_bad_input(tmp_path):
    import shutil
    import subprocess
    import sys
    import os
    # Where conda is installed, it is taken off PATH for this run (the runner's own Python stays)
    path = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                           if not any(shutil.which(n, path=d) for n in ("conda", "mamba", "micromamba")))
    assert not any(shutil.which(n, path=path) for n in ("conda", "mamba", "micromamba"))
    p = subprocess.run([sys.executable, str(REPO / "run_all.py"), "--env-backend", "conda", "--dry-run",
                        "--out", str(tmp_path / "x")], capture_output=True, text=True, env=dict(os.environ, PATH=path))
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "--env-backend conda" in p.stderr, p.stderr


@pytest.mark.fast
def test_kernel_json_of_built_envs_writes_bytecode(tmp_path, monkeypatch):
    """uv installs no .pyc: kernels of frameval's own envs write them at first
    import (PYTHONDONTWRITEBYTECODE emptied); a user's environment is left as it is."""
    monkeypatch.setattr(envs.kernels, "JUPYTER_DIR", tmp_path)
    spec = parse_spec(REPO / "envs/torch.yml")
    built = envs.Env(spec, tmp_path / "e", "venv")
    k = json.loads((envs.register_kernel(built, "k1", "k1") / "kernel.json").read_text())
    assert k["env"]["PYTHONDONTWRITEBYTECODE"] == ""
    user = envs.Env(spec, tmp_path / "u", "user", python_path=tmp_path / "u/bin/python")
    k = json.loads((envs.register_kernel(user, "k2", "k2") / "kernel.json").read_text())
    assert "PYTHONDONTWRITEBYTECODE" not in k["env"] and k["metadata"]["frameval"]["provided_by_user"]


@pytest.mark.fast
def test_spec_pins():
    assert envs.spec_pin(parse_spec(REPO / "envs/torch.yml")) == "torch==2.13.0"
    assert envs.spec_pin(parse_spec(REPO / "envs/paddle.yml")).startswith("paddlepaddle==")
    assert envs.spec_pin(parse_spec(REPO / "envs/mxnet-gpu.yml")).startswith("mxnet-cu112==")
    assert envs.spec_pin(parse_spec(REPO / "envs/tensorflow-gpu.yml")).startswith("tensorflow[and-cuda]==")


@pytest.mark.fast
def test_scripts_in_built_envs_write_bytecode(tmp_path, monkeypatch):
    """The GEMM and behaviour scripts write .pyc in frameval's own environments
    even under a shell's PYTHONDONTWRITEBYTECODE=1 (the first report's 14 GEMM
    processes compiled their framework from source each); a user's is left alone."""
    from frameval import envscripts
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    spec = parse_spec(REPO / "envs/torch.yml")
    built = envs.Env(spec, tmp_path / "e", "venv")
    assert envscripts.child_environ(built, {"OMP_NUM_THREADS": "1"})["PYTHONDONTWRITEBYTECODE"] == ""
    user = envs.Env(spec, tmp_path / "u", "user", python_path=tmp_path / "u/bin/python")
    assert envscripts.child_environ(user, {})["PYTHONDONTWRITEBYTECODE"] == "1"


@pytest.mark.fast
def test_warm_imports_cover_what_a_kernel_imports():
    """A framework environment is built with its kernel's imports compiled: the
    kernel, frameval.nb, the framework's parts and every module its notebooks
    import (read from the notebooks, so a new import is covered), and what it
    loads at its first compile; a GPU spec gets its framework's; the runner's own list."""
    from frameval import frameworks, notebook
    from frameval.envs.backends import warm_modules
    for fw in FRAMEWORKS:
        mods = warm_modules(parse_spec(REPO / "envs" / f"{fw}.yml"))
        assert {"ipykernel.kernelapp", "frameval.nb", f"frameval.frameworks.{fw}.support"} <= set(mods), fw
        for nb_path in (REPO / "notebooks" / fw).glob("*.ipynb"):
            imported = notebook.imported_modules(notebook.read(nb_path))
            assert fw in " ".join(imported) and set(imported) <= set(mods), (fw, nb_path.name)
        assert set(frameworks.get(fw).warm_imports) <= set(mods)
        gpu = REPO / "envs" / f"{fw}-gpu.yml"
        if gpu.exists():
            assert warm_modules(parse_spec(gpu)) == mods
    assert "torch._inductor.compile_fx" in warm_modules(parse_spec(REPO / "envs/torch.yml"))
    assert "papermill" in warm_modules(parse_spec(REPO / "environment.yml"))


def test_warm_imports_write_bytecode_under_a_shell_that_forbids_it(tmp_path, monkeypatch):
    """For real: the build's warm imports run a Python that writes the .pyc files
    even where the shell sets PYTHONDONTWRITEBYTECODE=1."""
    import importlib.util
    import sys
    from frameval.envs.backends import warm_imports
    mod = "frameval.nb.refcache"
    pyc = Path(importlib.util.cache_from_source(str(REPO / "frameval/nb/refcache.py")))
    pyc.unlink(missing_ok=True)
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    with open(tmp_path / "log", "w") as log:
        warm_imports(Path(sys.executable), [mod], log)
    assert pyc.is_file(), (tmp_path / "log").read_text()
    assert f"warm import {mod}:" in (tmp_path / "log").read_text()


def test_an_environment_built_with_an_older_warm_list_is_warmed_once(tmp_path, monkeypatch):
    """For real: an environment whose marker holds another warm list's key (or
    none: built before keys were kept) has the current list imported once when
    a command next finds it ready, and its marker keeps the new key; the next
    command finds it current and imports nothing."""
    import os
    import sys
    from frameval.envs import backends, build
    from frameval.envs.model import MARKER
    pkg = tmp_path / "warmpkg_again"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("import os\n\ndef init():\n    open(os.environ['WARM_MARK'], 'a').write('x')\n")
    monkeypatch.setattr(backends, "REPO", tmp_path)  # the warm process's PYTHONPATH
    monkeypatch.setitem(backends.WARM_IMPORTS, "runner", ("warmpkg_again:init",))
    monkeypatch.setenv("WARM_MARK", str(tmp_path / "mark"))
    spec = parse_spec(REPO / "environment.yml")
    env = envs.Env(spec, tmp_path / "env", "venv")
    (tmp_path / "env/bin").mkdir(parents=True)
    os.symlink(sys.executable, env.python)
    (env.prefix / MARKER).write_text(json.dumps({"spec": spec.name, "backend": "venv"}))
    said = []
    assert env.ready
    build._backfill_warm(env, envs.BACKENDS["venv"], said.append)
    assert (tmp_path / "mark").read_text() == "x"
    assert json.loads((env.prefix / MARKER).read_text())["warm"] == backends.warm_key(spec)
    assert len(said) == 1 and "warmed again" in said[0], said
    build._backfill_warm(env, envs.BACKENDS["venv"], said.append)
    assert (tmp_path / "mark").read_text() == "x" and len(said) == 1  # current: nothing imported again


def test_warm_imports_call_a_lazy_initialiser(tmp_path, monkeypatch):
    """For real: an entry "module:function" imports the module and calls the
    function (a library's lazy loading, e.g. Pillow's plugins or inductor's
    pattern passes), and an entry that fails is a line in the log, not a failed build."""
    import sys
    from frameval.envs import backends
    pkg = tmp_path / "warmpkg_probe"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("import os\n\ndef init():\n    open(os.environ['WARM_MARK'], 'w').write('called')\n")
    monkeypatch.setattr(backends, "REPO", tmp_path)  # the warm process's PYTHONPATH
    monkeypatch.setenv("WARM_MARK", str(tmp_path / "mark"))
    with open(tmp_path / "log", "w") as log:
        backends.warm_imports(Path(sys.executable), ["warmpkg_probe:init", "warmpkg_probe:absent"], log)
    text = (tmp_path / "log").read_text()
    assert (tmp_path / "mark").read_text() == "called", text
    assert "warm import warmpkg_probe:absent failed: AttributeError" in text, text


def test_warm_imports_cover_what_a_started_kernel_imports():
    """For real: a kernel started on this Python (the report's kernel, in the
    runner's environment) imports nothing beyond the standard library that the
    build's warm list, imported in one process, leaves out, but debugpy's (left
    out on purpose: frameval/envs/backends.py)."""
    import os
    import subprocess
    import sys
    from jupyter_client.manager import start_new_kernel
    from frameval.envs.backends import KERNEL_WARM
    km, kc = start_new_kernel(kernel_name="python3", startup_timeout=60)
    out = []
    try:
        kc.execute_interactive("import sys; print(' '.join(sys.modules))", timeout=60,
                               output_hook=lambda m: out.append(m["content"].get("text", "")))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    code = ("import importlib, sys\nfor m in sys.argv[1:]: importlib.import_module(m.partition(':')[0])\n"
            "print(' '.join(sys.modules))")
    warm = subprocess.run([sys.executable, "-c", code, *KERNEL_WARM], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), check=True).stdout.split()
    stdlib = set(sys.stdlib_module_names)
    left = sorted(m for m in set("".join(out).split()) - set(warm)
                  if m.split(".")[0].lstrip("_") not in stdlib and m.split(".")[0] not in stdlib
                  and not m.startswith("__"))
    debugger = ("debugpy", "_pydevd", "_pydev", "pydevd", "_pydevd_frame_eval", "_pydevd_sys_monitoring",
                "pydev_ipython", "_cython_", "pydevconsole", "ipykernel.debugger")
    assert [m for m in left if not m.startswith(debugger)] == [], left
    assert any(m.startswith("debugpy") for m in left)  # the kernel did load what the list leaves out

"""A framework is one folder (frameval/frameworks/<fw>/, issue #51): the
registry finds it by name, no shared module switches on a framework's name,
and a toy eighth framework, added by its folder alone (with its own
environment spec and notebook outside it), reaches the options, the plan, the
report's colours and labels, the kernel variables, the defects' patterns and
the in-environment lookups (behaviour, mistakes, GEMM, switches)."""
import ast
import json
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO
from frameval import catalog, frameworks, sources

import name_switches as name_finder  # noqa: E402  (tests/name_switches.py)

pytestmark = pytest.mark.fast

# The names come from the registry, so an eighth framework's name is guarded
# the day its folder is added, not the day someone remembers to list it here.
NAMES = set(frameworks.names())


# ------------------------------------------------------------------ the registry
def test_the_registry_holds_the_seven_in_the_default_order():
    assert frameworks.names() == ("torch", "tensorflow", "paddle", "mindspore", "megengine", "mxnet", "jax")
    assert catalog.FRAMEWORKS == frameworks.names() and catalog.FRAMEWORK_RECORDS == frameworks.records()
    assert all(catalog.BY_KEY[k] is frameworks.get(k) for k in NAMES)
    with pytest.raises(KeyError, match="unknown framework 'nope'; known: torch, "):
        frameworks.get("nope")


def test_every_folder_has_its_support_module_and_a_page():
    for fw in NAMES:
        assert (frameworks.folder(fw) / "support.py").is_file(), fw
        assert (REPO / "docs" / "frameworks" / frameworks.get(fw).notes).is_file(), fw
        assert sorted(p.stem for p in (REPO / "notebooks" / fw).glob("*.ipynb")) == \
            sorted(w for w in catalog.WORKLOADS if catalog.WORKLOAD_BY_KEY[w].written_for(fw)), fw


@pytest.mark.fast
def test_every_support_module_fulfils_the_contract(tmp_path):
    """frameval/frameworks/contract.py, checked from each support.py's source (never
    seven frameworks imported into one process), the toy eighth's included; and the
    check finds a missing function and a wrong signature."""
    from frameval.frameworks import contract
    problems = [p for fw in NAMES for p in contract.check_source(frameworks.folder(fw) / "support.py")]
    assert not problems, "\n".join(problems)
    toy = tmp_path / "support.py"
    toy.write_text(textwrap.dedent(TOY["support.py"]))
    assert contract.check_source(toy) == []
    toy.write_text(textwrap.dedent(TOY["support.py"]).replace("def placement(dev)", "def placement(gpu)")
                   .replace("def reset_adam(*opts)", "def reset_adams(*opts)"))
    assert [p.split(": ", 1)[1] for p in contract.check_source(toy)] == [
        "placement(gpu) should take (dev)", "no reset_adam()"]


def _imports(path) -> set:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            out.add("." * node.level + (node.module or ""))
    return out


def test_the_records_are_standard_library_only():
    """The records are read before the runner environment exists and in every kernel
    (Python 3.8 to 3.12, some with an old numpy): the standard library and the record type only."""
    files = [frameworks.HERE / "__init__.py", frameworks.HERE / "record.py"]
    files += [d / "__init__.py" for d in frameworks.folders()]
    for f in files:
        for name in _imports(f):
            ok = name in ("..record", ".record", "__future__") or name.split(".")[0] in sys.stdlib_module_names
            assert ok, f"{f.relative_to(REPO)} imports {name}"


def test_shared_code_never_imports_a_framework_folder():
    """Shared code asks the registry (`frameworks.part(fw, ...)`), never `frameworks.torch`."""
    bad = []
    for f in sorted((REPO / "frameval").rglob("*.py")):
        if f.is_relative_to(frameworks.HERE):
            continue
        for name in _imports(f):
            parts = name.lstrip(".").split(".")
            if "frameworks" in parts and parts[-1] != "frameworks" and parts[parts.index("frameworks") + 1] in NAMES:
                bad.append(f"{f.relative_to(REPO)} imports {name}")
    assert not bad, bad


def test_the_cache_key_follows_the_framework_folder(tmp_path):
    """A change to torch's support module runs torch's notebooks again, not JAX's."""
    clone = tmp_path / "clone"
    shutil.copytree(REPO / "frameval", clone / "frameval", ignore=shutil.ignore_patterns("__pycache__"))
    before = {fw: sources.digest(fw, clone) for fw in ("torch", "jax")}
    with open(clone / "frameval" / "frameworks" / "torch" / "support.py", "a", encoding="utf-8") as f:
        f.write("\n# one more line\n")
    assert sources.digest("torch", clone) != before["torch"]
    assert sources.digest("jax", clone) == before["jax"]
    with open(clone / "frameval" / "frameworks" / "jax" / "switches.py", "a", encoding="utf-8") as f:
        f.write("\n# one more line\n")  # the switches run in the kernel too
    assert sources.digest("jax", clone) != before["jax"]


# ------------------------------------------------------------------ no name switches
def name_switches(source: str) -> list:
    return name_finder.find(source, NAMES, "framework")


def test_the_finder_finds_a_switch():
    src = ('if fw == "paddle":\n    pass\nx = fw in ("mxnet", "x")\nd = {"torch": 1, "jax": 2}\n'
           'e = {("megengine", "id"): 1}\nok = {"numpy": 1}\nfine = fw == other\n')
    assert [line for line, _ in name_switches(src)] == [1, 3, 4, 5]


def test_no_framework_name_switch_outside_the_framework_folders():
    """A framework's own facts live in its folder (frameval/frameworks/<fw>/);
    the other modules ask its record or load its part. A new
    `if r.framework == "paddle"` or `{"torch": ..., "jax": ...}` fails here."""
    bad = []
    for f in sorted((REPO / "frameval").rglob("*.py")):
        if f.is_relative_to(frameworks.HERE):
            continue
        rel = f.relative_to(REPO)
        bad += [f"{rel}:{line}: {what}" for line, what in name_switches(f.read_text(encoding="utf-8"))]
    assert not bad, "framework-name switches outside frameval/frameworks/ (ask the record instead):\n" + "\n".join(bad)


# ------------------------------------------------------------------ a toy eighth framework
TOY = {
    "__init__.py": '''
        """A toy framework: numpy under another name (tests/test_frameworks.py)."""
        from ..record import Framework

        FRAMEWORK = Framework("toy", "Toy", order=8, aliases=("toyfw",), packages=("toypkg",), colour="#123456",
                              kernel_env={"TOY_LOG": "quiet"}, gpu_kernel_env={"TOY_GPU_GROWTH": "1"},
                              graph_path_forbids=";", graph_path_why="a semicolon (the toy splits on it)",
                              workarounds={"toy-defect": r"toy_fix\\(\\)"},
                              offers={"precision": {"cpu": ("default", "highest"), "gpu": ("default", "highest")},
                                      "mode": {"cpu": ("graph", "eager"), "gpu": ("graph", "eager")}})
        ''',
    "support.py": '''
        from frameval.frameworks.contract import NotOffered


        def setup(rec, mode, device, seed):
            rec.workaround("toy-defect", why="the toy's own defect")
            toy_fix()
            return device


        def placement(dev):
            return "numpy arrays in host memory"


        def compile_step(step, mode):
            return step  # the toy has no compiler: both modes run the step as written


        def compile_eval(fn, mode):
            return fn


        def record_scope(rec, mode, step, how="", why=""):
            rec.set_graph_scope(False, False, False, how=how or "the toy has no graph mode", why=why)


        def read_adam(rec, *opts):
            raise NotOffered("the toy has no optimizer")


        def reset_adam(*opts):
            raise NotOffered("the toy has no optimizer")


        def autocast(rec, precision):
            from frameval.nb.amp import Amp
            if precision in ("bf16", "fp16"):
                raise NotOffered("the toy computes in float32 only")
            return rec.set_amp(Amp(precision))


        def export(rec, model, example, path):
            raise NotOffered("the toy has no deployment format")


        def load(path, device):
            raise NotOffered("the toy has no deployment format")


        def checkpoint(rec, path, *state):
            raise NotOffered("the toy trains nothing to checkpoint")


        def restore(rec, path, *state):
            raise NotOffered("the toy trains nothing to restore")


        def toy_fix():
            return None
        ''',
    "behaviour.py": '''
        from frameval.envscripts.behaviour_adapters import Numpy


        class Toy(Numpy):
            name, api = "toy", "toy.ndarray"


        ADAPTER = Toy
        ''',
    "mistakes.py": '''
        import numpy as np


        def spellings():
            o = np.ones
            return {"matmul_shapes": lambda: o((3, 4)) @ o((5, 6)),
                    "backward_twice": "the toy has no gradients"}
        ''',
    "gemm.py": '''
        import numpy as np

        from frameval.envscripts.gemm import inputs
        from frameval.idle import best_time


        def gemm(n, threads):
            a, b = inputs(n)
            return np.__version__, "toy.dot", best_time(lambda: np.dot(a, b), lambda: None)
        ''',
    "switches.py": '''
        from frameval.nb.determinism import env_var

        DETERMINISM = (("TOY_DETERMINISTIC", env_var("TOY_DETERMINISTIC")),)
        ''',
}

PROBE = '''
import json
from frameval import catalog, defects, frameworks, sources
from frameval.envs import install_facts, kernels
from frameval.envscripts import behaviour, gemm
from frameval.envscripts.behaviour_adapters import Numpy
from frameval.nb import determinism, precision
from frameval.report import charts, spec
from frameval.report.i18n import Strings
from frameval.report.model import make_rows

result = {"framework": "toy", "workload": "lenet", "mode": "graph", "device": "cpu", "status": "ok",
          "params": {"epochs": 1}, "epochs": [{"epoch": 1, "seconds": 1.0}], "_dir": "."}
row, = make_rows([result], Strings("en"))
side = [p.relative_to(sources.REPO).as_posix() for p in sources.notebook_side("toy")]
from frameval.config import RunConfig
from frameval.exits import BadInput
try:
    RunConfig(frameworks="toy", workloads="lenet", out="a;b")
    refused = ""
except BadInput as e:
    refused = str(e)
cases = behaviour.main("toy")
print("RESULT " + json.dumps({
    "refused": refused, "api": cases["api"], "cases": cases["cases"], "same_as_numpy": cases["cases"] == behaviour.run_cases(Numpy()),
    "names": frameworks.names(), "catalog": catalog.FRAMEWORKS, "alias": catalog.canonical_framework("toyfw"),
    "label": catalog.framework_name("toy"), "row_label": row.fw_name, "report_order": sorted(catalog.FRAMEWORKS, key=spec.order_key),
    "colour": charts.Charts.color("toy"), "torch_colour": charts.Charts.color("torch"),
    "kernel_cpu": kernels.kernel_extra("toy", "cpu"), "kernel_gpu": kernels.kernel_extra("toy", "gpu"),
    "dist": install_facts.framework_dist("toy"),
    "applied": [list(k) for k in defects.APPLIED if k[0] == "toy"], "sites": defects.workaround_sites("toy"),
    "key": [p for p in side if "/frameworks/toy/" in p],
    "torch_key": [p for p in sources.notebook_side("torch") if "/frameworks/toy/support" in str(p)],
    "determinism": determinism.switches("toy"), "precision": precision.mode("toy", "cpu")["switches"],
    "mistakes": cases["mistakes"],
    "gemm": gemm.measure("toy", 1, 64)["op"],
}))
'''


def _toy_clone(tmp_path):
    """A copy of the tool with the toy's folder added, and what is the toy's own
    outside it: an environment spec and a notebook (the torch LeNet's, unrun)."""
    root = tmp_path / "clone"
    shutil.copytree(REPO / "frameval", root / "frameval", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "run_all.py", root)
    shutil.copy(REPO / "environment.yml", root)
    (root / "templates").symlink_to(REPO / "templates")  # the report's strings, read only
    for name, text in TOY.items():
        path = root / "frameval" / "frameworks" / "toy" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    (root / "envs").mkdir()
    (root / "envs" / "toy.yml").write_text("name: frameval-toy\ndependencies:\n  - python=3.11\n  - pip\n"
                                           "  - pip:\n      - numpy<2.5\n      - ipykernel\n")
    (root / "notebooks" / "toy").mkdir(parents=True)
    shutil.copy(REPO / "notebooks" / "torch" / "lenet.ipynb", root / "notebooks" / "toy" / "lenet.ipynb")
    return root


def _run(root, *args, timeout=300):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout, cwd=root,
                          env={**__import__("os").environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"})


def test_a_toy_framework_is_one_folder(tmp_path):
    root = _toy_clone(tmp_path)
    p = _run(root, "-c", PROBE)
    line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
    assert line, p.stdout[-2000:] + p.stderr[-3000:]
    got = json.loads(line[0][len("RESULT "):])
    assert got["names"][-1] == "toy" and got["catalog"][-1] == "toy" and got["report_order"][-1] == "toy"
    assert got["alias"] == "toy" and got["label"] == "Toy" and got["row_label"] == "Toy"
    assert got["colour"] == "#123456" and got["torch_colour"] == frameworks.get("torch").colour
    assert got["kernel_cpu"] == {"TOY_LOG": "quiet"}
    assert got["kernel_gpu"] == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "TOY_LOG": "quiet", "TOY_GPU_GROWTH": "1"}
    assert got["dist"] == "toypkg"
    assert got["applied"] == [["toy", "toy-defect"]]
    assert got["sites"] == {"toy-defect": ["frameval/frameworks/toy/support.py"]}
    # its kernel runs its record, support and switches: they are in its cache key, not in torch's
    assert {"frameval/frameworks/toy/__init__.py", "frameval/frameworks/toy/support.py",
            "frameval/frameworks/toy/switches.py"} <= set(got["key"]) and not got["torch_key"]
    assert got["determinism"] == {"TOY_DETERMINISTIC": "unset"}
    assert got["precision"] == {"(framework)": "not exposed: TF32 follows the CUDA libraries' defaults and NVIDIA_TF32_OVERRIDE"}
    # numpy raises at the toy's own line: "the user's line" is found in the toy's spelling file
    matmul = got["mistakes"]["matmul_shapes"]
    assert matmul["raised"] and matmul["user_line"] and matmul["last_is_user"] is True, matmul
    assert got["mistakes"]["backward_twice"] == {"na": "the toy has no gradients"}
    assert got["gemm"] == "toy.dot"
    assert got["api"] == "toy.ndarray" and got["cases"] and got["same_as_numpy"]  # numpy under another name
    assert got["refused"].endswith(
        "Toy's graph mode fails under a path with a semicolon (the toy splits on it); choose a folder without one")


def test_a_toy_framework_reaches_the_options_and_the_plan(tmp_path):
    root = _toy_clone(tmp_path)
    p = _run(root, "run_all.py", "--frameworks", "toyfw", "--workloads", "lenet", "--dry-run",
             "--out", str(tmp_path / "out"))
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "toy/lenet-graph: execute" in p.stdout
    # without its folder, the same name is refused before anything runs
    shutil.rmtree(root / "frameval" / "frameworks" / "toy")
    p = _run(root, "run_all.py", "--frameworks", "toy", "--dry-run")
    assert p.returncode == 2 and "unknown framework 'toy'" in p.stderr


# ------------------------------------------------------------------ what a framework offers (#68)
@pytest.mark.fast
def test_a_new_precision_is_offered_by_no_framework_until_its_folder_declares_it(monkeypatch):
    """fp16 is in the catalog, and the GPU takes it, but no framework's folder declares it
    yet: every run of it is bad input before anything runs, naming the framework and where it
    declares; a record that declares it (here torch's, patched) is accepted, the others still
    refused, and a notebook opened by hand stops at its parameters with the same line."""
    from dataclasses import replace
    from frameval import catalog, plan
    from frameval.nb import params as nbparams
    with pytest.raises(plan.PlanError, match=r"precision=fp16: PyTorch does not offer it on the GPU \(it declares "
                                             r"default, highest, bf16: frameval/frameworks/torch/__init__.py"):
        plan.build_plan("torch", "lenet", "graph", "gpu", "quick", ["precision=fp16"])
    torch = catalog.BY_KEY["torch"]
    offers = {"precision": dict(torch.offers["precision"], gpu=("default", "highest", "bf16", "fp16")),
              "mode": torch.offers["mode"]}
    monkeypatch.setitem(catalog.BY_KEY, "torch", replace(torch, offers=offers))
    runs = plan.build_plan("torch", "lenet", "graph", "gpu", "quick", ["precision=fp16"])
    assert [r.params["precision"] for r in runs] == ["fp16"]
    with pytest.raises(plan.PlanError, match="precision=fp16: TensorFlow does not offer it on the GPU"):
        plan.build_plan("torch,tensorflow", "lenet", "graph", "gpu", "quick", ["precision=fp16"])
    with pytest.raises(ValueError, match="precision=fp16: TensorFlow does not offer it on the GPU"):
        nbparams.check_api("tensorflow", {"precision": "fp16", "device": "gpu", "mode": "graph"})
    # and the CPU takes no float16 in any framework, declared or not
    with pytest.raises(plan.PlanError, match="precision=fp16: the CPU does not take it"):
        plan.build_plan("torch", "lenet", "graph", "cpu", "quick", ["precision=fp16"])


@pytest.mark.fast
def test_every_framework_declares_what_it_offers_on_each_device():
    from frameval import catalog
    for rec in catalog.FRAMEWORK_RECORDS:
        for device in catalog.DEVICES:
            assert set(rec.offered("precision", device)) <= set(catalog.PRECISIONS), rec.key
            assert set(rec.offered("mode", device)) <= set(catalog.MODES), rec.key
        assert rec.offered("precision", "cpu") and rec.offered("mode", "cpu"), rec.key

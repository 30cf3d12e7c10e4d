"""Workloads as registered objects (issue #36): a fourth workload is one
record in the registry, and no module outside frameval/workloads/ switches on a
workload's name.

- A toy workload defined here (a dense layer 4 -> 1 on random numbers) runs
  the numerical check, the FLOP count, the constraints and the report's table
  through the registry alone: nothing but `workloads.registered(TOY)` and its
  own code.
- The same toy written as one folder (frameval/workloads/toy/) and a notebook
  in a copy of the repository: the registry, the plan (--workloads toy
  --dry-run), its parameter rules and the report's media hook find it.
- An `ast` scan of frameval/ fails on a comparison with, or a dict keyed by,
  a registered workload's name outside frameval/workloads/ (the names come
  from the registry).
"""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import json
import numpy as np
import pytest

from frameval import constraints, flops, workloads
from frameval.nb import check
from frameval.report.i18n import Strings
from frameval.report.model import make_rows
from frameval.report.tables import workload_table
from frameval.workloads.base import Figure, Layer, Network, Pass, Quality, Workload, dense

import name_switches as name_finder  # noqa: E402  (tests/name_switches.py)

pytestmark = pytest.mark.fast
REPO = Path(__file__).resolve().parent.parent

# ------------------------------------------------------------------ the toy
TOY_WEIGHTS = (("fc.weight", (1, 4), "dense"), ("fc.bias", (1,), "zeros"))
TOY_TRAIN = 100


def _sample(kit, seed, size):
    rng = kit.np.random.RandomState([seed, 7])
    x = rng.standard_normal((size, 4)).astype(kit.np.float32)
    return x, (x.sum(1, keepdims=True) * 0.5).astype(kit.np.float32), f"toy: {size} random rows"


def _loss(R, p, x, y):
    pred = R.dense(x, p["fc.weight"], p["fc.bias"])
    loss, d = R.mse(pred, np.asarray(y, np.float64))
    return loss, {"fc.weight": d.T @ x, "fc.bias": d.sum(0)}


def _train(kit, w0, batches, lr, kink=None):
    return kit.R._train(w0, batches, lr, lambda p, x, y: _loss(kit.R, p, x, y))


TOY = Workload(
    key="toy", display="Toy", params=("mode", "epochs", "batch_size", "lr", "seed"), param_counts={"toy": 5},
    quality=Quality("val_mse", "col_val_rmse", "axis_mse", False, False),
    data_name=lambda p: "toy-random", train_samples=lambda p: TOY_TRAIN, data_problem=lambda p: "",
    too_few=lambda p, n: f"the toy has {n} rows",
    default_lr=1e-2, forward_outputs=("pred",), losses=("loss",),
    networks=(Network("toy", 50, TOY_WEIGHTS),),
    sample=_sample, batch=lambda kit, x, y, seed, k: {"x": x, "y": y},
    initial=lambda kit, seed: kit.R.as64(kit.init("toy", seed)),
    forward=lambda kit, w0, b: {"pred": kit.R.dense(np.asarray(b["x"], np.float64), w0["fc.weight"], w0["fc.bias"])},
    train=_train, expected=lambda w0: (list(w0), []),
    passes=lambda params: (Pass("step", (Layer("dense 4→1", dense(4, 1), on_input=True),)),),
    figures=(Figure("col_val_rmse", "val_rmse", "sig3", False),),
)


class Rec:
    def __init__(self):
        self.result = {}

    def check_done(self, res):
        self.result["check"] = res


def test_a_toy_workload_runs_the_check():
    """The check of a float32 'framework' that is the toy's reference itself passes."""
    with workloads.registered(TOY):
        chk = check.Checker(Rec(), "toy", 0, batch_size=8)
        assert chk.lr == TOY.default_lr and chk.problems == []
        ref = chk.wl.train(check.kit(), chk.w0, chk.batches, chk.lr)
        chk.forward(**{k: v.astype(np.float32) for k, v in chk._ref_forward().items()})
        chk.grads({k: v.astype(np.float32) for k, v in ref["grads"].items()})
        for row in ref["losses"]:
            chk.losses(**row)
        chk.weights({k: v.astype(np.float32) for k, v in ref["weights"].items()})
        res = chk.finish()
    assert res["ok"] is True and res["problems"] == [] and res["missing"] == [], res
    assert set(res["grads"]) == {"fc.weight", "fc.bias"} and "lstm_biases" not in res
    assert "toy" not in workloads.REGISTRY  # gone again: the registry is all it touched


def test_a_toy_workload_counts_its_flops_and_checks_its_constraints():
    with workloads.registered(TOY):
        assert flops.training_flops("toy") == 2 * 4 * 2  # forward and weight gradient; its input is data
        run = SimpleNamespace(fw_key="torch", workload="toy", params={"batch_size": 64})
        assert constraints.train_samples(run) == TOY_TRAIN and constraints.problem(run) == ""
        run.params = {"batch_size": 256}
        assert "the toy has 100 rows with batch_size=256" in constraints.problem(run)
    assert flops.training_flops("toy") is None


def test_a_toy_workload_has_a_report_table(tmp_path):
    result = {"framework": "torch", "workload": "toy", "mode": "graph", "device": "cpu", "status": "ok",
              "params": {"epochs": 1}, "val_mse": 0.25, "val_rmse": 0.5, "epochs": [{"epoch": 1, "seconds": 1.0}],
              "_dir": str(tmp_path)}
    S = Strings("en")
    with workloads.registered(TOY):
        rows = make_rows([result], S)
        table = workload_table("toy", rows, S, False, {})
    assert table["id"] == "table-toy" and len(table["rows"]) == 1
    heads = [h if isinstance(h, str) else str(h.get("t", "")) for h in table["headers"]]
    assert any(S("col_val_rmse") in h for h in heads), heads


# ------------------------------------------------------------------ no name switches
# The names come from the registry, so a fourth workload's name is guarded the
# day it is registered, not the day someone remembers to add it here.
NAMES = set(workloads.REGISTRY)


def name_switches(source: str) -> list:
    return name_finder.find(source, NAMES, "workload")


def test_the_guard_knows_every_registered_workload():
    assert NAMES == set(workloads.BUILT_IN) and {"lenet", "dcgan", "lstm"} <= NAMES


def test_the_finder_finds_a_switch():
    src = ('if wl == "lenet":\n    pass\nx = wl in ("dcgan", "x")\nd = {"lstm": 1}\n'
           'ok = {"generator": 1}\nfine = wl == other\n')
    assert [line for line, _ in name_switches(src)] == [1, 3, 4]


def test_no_name_switch_outside_the_workload_modules():
    """A workload's own facts live in its module (frameval/workloads/); the
    other modules ask its record. A new `if workload == "dcgan"` fails here."""
    bad = []
    for f in sorted((REPO / "frameval").rglob("*.py")):
        rel = f.relative_to(REPO)
        if rel.parts[:2] == ("frameval", "workloads"):
            continue
        bad += [f"{rel}:{line}: {what}" for line, what in name_switches(f.read_text(encoding="utf-8"))]
    assert not bad, "name switches outside frameval/workloads/ (ask the workload record instead):\n" + "\n".join(bad)


# ------------------------------------------------------------------ a toy added by one folder
# The same toy, written as a workload folder (frameval/workloads/toy/) and a
# notebook, in a copy of the repository: the registry, the plan (--workloads
# toy --dry-run), the toy's own parameter rules and the report's hooks find it
# with no edit anywhere else.
TOY_RECORD = '''"""A toy workload: a dense layer 4 -> 1 on random rows (tests/test_workloads.py)."""
from ..base import COMMON_PARAMS, Layer, Network, Pass, Quality, Workload, dense

WEIGHTS = (("fc.weight", (1, 4), "dense"), ("fc.bias", (1,), "zeros"))


def _sample(kit, seed, size):
    x = kit.np.random.RandomState([seed, 7]).standard_normal((size, 4)).astype(kit.np.float32)
    return x, (x.sum(1, keepdims=True) * 0.5).astype(kit.np.float32), "toy"


def _media(wrows, S, charts, name, assets_dir, problems, out):
    from .media import picture
    picture(wrows, out)


WORKLOAD = Workload(
    key="toy", display="Toy", order=4, params=COMMON_PARAMS + ("width",), param_counts={"toy": 5},
    quality=Quality("val_mse", "col_val_rmse", "axis_mse", False, False),
    data_name=lambda p: "toy-random", train_samples=lambda p: 100, data_problem=lambda p: "",
    too_few=lambda p, n: f"the toy has {n} rows",
    param_rules={"width": (1, "a positive integer")}, param_values={"width": (4,)},
    default_lr=1e-2, forward_outputs=("pred",), losses=("loss",), networks=(Network("toy", 50, WEIGHTS),),
    sample=_sample, batch=lambda kit, x, y, seed, k: {"x": x, "y": y},
    initial=lambda kit, seed: kit.R.as64(kit.init("toy", seed)), forward=None, train=None,
    expected=lambda w0: (list(w0), []), passes=lambda params: (Pass("step", (Layer("dense 4→1", dense(4, 1), True),)),),
    profiles={"quick": {"epochs": 1}}, media=_media,
)
'''
TOY_MEDIA = '''def picture(wrows, out):
    out["prediction"] = {"file": "toy.png", "caption": f"toy: {len(wrows)} runs"}
'''
TOY_PARAMS = ("mode = 'graph'\ndevice = 'cpu'\nprecision = 'default'\nepochs = 3\nbatch_size = 10\nlr = 0.01\n"
              "seed = 0\nthreads = 0\nmax_train_samples = 0\nout_dir = 'out'\nwidth = 4\n")
TOY_CHECK = '''
import sys
from frameval import catalog, workloads
from frameval.report import media
from frameval.report.guard import Problems
from frameval.report.i18n import Strings
from frameval.report.model import make_rows

assert list(workloads.REGISTRY) == ["lenet", "dcgan", "lstm", "gpt", "toy"], list(workloads.REGISTRY)
assert catalog.WORKLOADS[-1] == "toy" and catalog.PROFILES["quick"]["toy"] == {"serve": False, "epochs": 1}  # the common profile's, then its own
result = {"framework": "torch", "workload": "toy", "mode": "graph", "device": "cpu", "status": "ok",
          "params": {"epochs": 1}, "val_mse": 0.25, "epochs": [{"epoch": 1, "seconds": 1.0}], "_dir": sys.argv[1]}
S = Strings("en")


class Charts:  # draws nothing: the hook's own part is what this checks
    def __getattr__(self, name):
        return lambda *a, **k: None


out = media.workload_media("toy", make_rows([result], S), S, Charts(), "report", sys.argv[1], Problems(S))
assert out["prediction"] == {"file": "toy.png", "caption": "toy: 1 runs"}, out
print("toy seen")
'''


def _toy_clone(tmp_path) -> Path:
    import json
    import shutil
    clone = tmp_path / "clone"
    shutil.copytree(REPO / "frameval", clone / "frameval", ignore=shutil.ignore_patterns("__pycache__"))
    for rel in ("envs", "templates"):
        shutil.copytree(REPO / rel, clone / rel)
    for rel in ("run_all.py", "environment.yml", "environment.lock.txt"):
        shutil.copy2(REPO / rel, clone / rel)
    (clone / "notebooks" / "torch").mkdir(parents=True)
    cell = {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": TOY_PARAMS, "outputs": [],
            "execution_count": None}
    (clone / "notebooks" / "torch" / "toy.ipynb").write_text(json.dumps(
        {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    # the toy: one folder, nothing else edited
    home = clone / "frameval" / "workloads" / "toy"
    home.mkdir()
    (home / "__init__.py").write_text(TOY_RECORD)
    (home / "media.py").write_text(TOY_MEDIA)
    return clone


def test_a_toy_workload_is_one_folder(tmp_path):
    import subprocess
    import sys
    clone = _toy_clone(tmp_path)

    def run(*args):
        return subprocess.run([sys.executable, *args], cwd=clone, capture_output=True, text=True, timeout=120)

    got = run("run_all.py", "--frameworks", "torch", "--workloads", "toy", "--dry-run", "--out", str(tmp_path / "o"))
    assert got.returncode == 0 and "torch/toy-graph" in got.stdout, got.stdout + got.stderr
    bad = run("run_all.py", "--frameworks", "torch", "--workloads", "toy", "-p", "toy.width=0", "--dry-run",
              "--out", str(tmp_path / "o"))
    assert bad.returncode == 2 and "width must be a positive integer" in bad.stderr, bad.stdout + bad.stderr
    other = run("run_all.py", "--frameworks", "torch", "--workloads", "toy", "-p", "width=8", "--dry-run",
                "--out", str(tmp_path / "o"))
    assert other.returncode == 2 and "choose from 4" in other.stderr, other.stdout + other.stderr
    seen = run("-c", TOY_CHECK, str(tmp_path))
    assert seen.returncode == 0 and "toy seen" in seen.stdout, seen.stdout + seen.stderr
    # the key of a toy run holds its folder, but not its report's code
    from frameval import sources
    names = {p.relative_to(clone).as_posix() for p in sources.notebook_side("torch", clone, workload="toy")}
    assert "frameval/workloads/toy/__init__.py" in names and "frameval/workloads/toy/media.py" not in names


def test_every_registered_workload_brings_the_words_its_report_asks_for():
    """The report looks its words up by key (`wl_<key>`, `intro_<key>`, `metric_<curve>`, the
    quality's and figures' labels); a key missing prints as the key itself ("intro_gpt" was the
    GPT section's intro until a report was read). Every real workload, in both languages."""
    from frameval.catalog import WORKLOADS
    for lang in ("en", "zh"):
        own = {}
        for folder in workloads.folders():
            own.update(json.loads((folder / "strings" / f"{lang}.json").read_text()))
        shared = json.loads((REPO / "templates" / "strings" / f"{lang}.json").read_text())
        words = dict(shared, **own)
        for key in WORKLOADS:
            rec = workloads.REGISTRY[key]
            wanted = [f"wl_{key}", f"intro_{key}", rec.quality.label, rec.quality.axis]
            wanted += [f"metric_{k}" for k, _ in rec.curves] + [axis for _, axis in rec.curves]
            wanted += [f.label for f in rec.figures]
            missing = [w for w in wanted if w not in words]
            assert not missing, (lang, key, missing)


def test_a_convolution_workaround_applies_where_the_model_has_convolutions():
    from frameval.nb.weights import has_convolutions
    assert [w for w in ("lenet", "dcgan", "lstm", "gpt") if has_convolutions(w)] == ["lenet", "dcgan"]


def test_settings_a_workload_calls_described_are_shown_and_never_flagged(tmp_path):
    """The GPT's notebooks say how they met the spec (attention kind, GELU call) in their
    framework's words: the audit shows every run's and flags none of them, while a real
    difference in a compared setting (the optimizer) is still flagged."""
    from frameval.report.audit import audit_table

    def result(fw, attention, optimizer):
        return {"framework": fw, "workload": "gpt", "mode": "graph", "device": "cpu", "status": "ok",
                "params": {"epochs": 1, "batch_size": 32}, "epochs": [{"epoch": 1, "seconds": 1.0}],
                "settings": {"attention": attention, "gelu": "exact (erf)", "optimizer": optimizer},
                "_dir": str(tmp_path / fw)}
    S = Strings("en")
    rows = make_rows([result("torch", "fused: F.scaled_dot_product_attention", "AdamW"),
                      result("tensorflow", "written out", "Adam")], S)
    audit = audit_table("gpt", rows, S)
    by_key = {r[0]["v"]: r for r in audit["table"]["rows"]}
    for key in ("attention", "gelu"):
        assert by_key[key][-1]["v"] == "described" and not any(c["cls"] == "flag" for c in by_key[key])
    assert [c["t"] for c in by_key["attention"][2:4]] == ["fused: F.scaled_dot_product_attention", "written out"]
    assert [f["key"] for f in audit["flags"] if f["kind"] == "setting"] == ["optimizer"]

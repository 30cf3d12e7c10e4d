"""The house's rules that a refactor could quietly break: the registries, the
config that validates itself once, and one writer of result.json."""
import ast
import json

import pytest

from conftest import REPO
from frameval import commands, executors
from frameval.config import RunConfig
from frameval.exits import BadInput

pytestmark = pytest.mark.fast


def test_every_registered_command_has_a_main():
    import importlib
    assert set(commands.names()) == {"run", "test", "lab", "bench", "defects", "bundle", "compare", "lock", "reproduce"}
    for name in commands.names():
        assert callable(importlib.import_module(commands.get(name).module).main), name


def test_executors_are_registered_by_name():
    assert executors.names() == ["local", "slurm"]
    for name in executors.names():
        ex = executors.get(name)
        assert ex.name == name and callable(ex.execute) and callable(ex.dry_run)
    with pytest.raises(BadInput, match="--executor 'nope': choose local or slurm"):
        RunConfig(executor="nope")


def test_config_validates_itself():
    with pytest.raises(BadInput, match="--lang 'fr'"):
        RunConfig(lang="fr")
    with pytest.raises(BadInput, match="unknown framework 'nosuch'"):
        RunConfig(frameworks="nosuch")
    with pytest.raises(BadInput, match="--slurm-time is only used with --executor slurm"):
        from frameval.executors.slurm_config import SlurmConfig
        RunConfig(slurm=SlurmConfig(time="5"))
    cfg = RunConfig(frameworks="torch,mxnet", workloads="lenet", param=["epochs=1"], dry_run=True)
    assert [r.name for r in cfg.runs] == ["torch/lenet-graph", "mxnet/lenet-graph"]
    assert all(r.params["epochs"] == 1 for r in cfg.runs)


def test_validated_config_travels_as_data_and_is_not_checked_again(tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("mine")
    cfg = RunConfig(frameworks="jax", workloads="lstm", mode="both", notes=str(notes), repeats=2,
                    argv=["--frameworks", "jax"])
    text = cfg.to_json()
    notes.unlink()  # a second validation would refuse it: the restored config must not look
    back = RunConfig.from_json(text)
    assert back.validated and back.notes == str(notes) and back.argv == ["--frameworks", "jax"]
    assert [(r.name, r.repeat, r.params) for r in back.runs] == [(r.name, r.repeat, r.params) for r in cfg.runs]
    assert back.runs[0].notebook == cfg.runs[0].notebook
    forged = dict(json.loads(text), validated=False)
    with pytest.raises(BadInput):
        RunConfig.from_json(json.dumps(forged))


def _writes_result(call: ast.Call) -> bool:
    """A call of a file writer whose path names RESULT (or result.json)."""
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
    if name not in ("atomic_write_json", "atomic_write", "write_text", "write_bytes", "dump", "save"):
        return False
    target = ast.unparse(call.args[0]) if call.args else ast.unparse(f)
    return "RESULT" in target or "result.json" in target


def _store_private(node) -> bool:
    """store._write (the store's own writer) reached from outside, or a bare result writer."""
    return (isinstance(node, ast.Attribute) and node.attr in ("_write", "write_result")
            and isinstance(node.value, ast.Name) and node.value.id == "store")


def test_one_writer_of_result_json_after_the_notebook():
    """Only the notebook's recorder (in the kernel) and the runner's store write result.json,
    both through the result's one writer (frameval/result: `save`)."""
    writers = set()
    for path in (REPO / "frameval").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(n, ast.Call) and _writes_result(n) or _store_private(n) for n in ast.walk(tree)):
            writers.add(path.relative_to(REPO).as_posix())
    assert writers == {"frameval/result/store.py", "frameval/nb/record.py"}, writers

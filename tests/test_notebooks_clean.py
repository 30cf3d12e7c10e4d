"""Every framework notebook: committed without outputs, the same cell order and
tags, the shared parameter names, and a kernelspec the runner registers."""

import json

import pytest

from frameval import notebook as nbfile
from frameval.nb.params import WORKLOAD_PARAMS
from frameval.catalog import FRAMEWORKS, WORKLOAD_BY_KEY, WORKLOADS
from conftest import REPO

pytestmark = pytest.mark.fast

NOTEBOOKS = [(fw, wl) for fw in FRAMEWORKS for wl in WORKLOADS if WORKLOAD_BY_KEY[wl].written_for(fw)]


def test_all_notebooks_exist():
    missing = [f"{fw}/{wl}" for fw, wl in NOTEBOOKS if not (REPO / "notebooks" / fw / f"{wl}.ipynb").exists()]
    assert not missing


@pytest.mark.parametrize("path", sorted((REPO / "notebooks").rglob("*.ipynb")), ids=lambda p: str(p.relative_to(REPO)))
def test_committed_without_outputs(path):
    assert not nbfile.has_outputs(nbfile.read(path)), f"{path} has outputs: strip them"


@pytest.mark.parametrize("fw, wl", NOTEBOOKS)
def test_cell_contract(fw, wl):
    nb = nbfile.read(REPO / "notebooks" / fw / f"{wl}.ipynb")
    assert nb["cells"][0]["cell_type"] == "markdown"
    order = [t for c in nbfile.code_cells(nb) for t in nbfile.tags(c) if t in nbfile.CELL_TAGS]
    assert order == list(nbfile.CELL_TAGS), order
    assert set(nbfile.parameters(nb)) == set(WORKLOAD_PARAMS[wl])
    assert nb["metadata"]["kernelspec"]["name"] == f"frameval-{fw}"
    assert nbfile.count_code_lines(nb) > 10


@pytest.mark.parametrize("path", sorted((REPO / "notebooks").glob("*/*.ipynb")), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_recorder_names_its_own_notebook(path):
    """The setup cell records the parameters of its own workload (a copied
    "lenet" would drop window/hidden/series from an LSTM's result)."""
    src = "".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"])
    fw, wl = path.parent.name, path.stem
    assert f'nb.Recorder("{fw}", "{wl}", nb.parameters(globals(), "{wl}")' in src


# What every framework computes alike has one home in frameval.nb; a notebook
# that computes it itself again can drift from the others (and from the report).
NEUTRAL = {
    r"ss_res|ss_tot|1 - .* / .*ss": "the LSTM's R² and RMSE: nb.forecast",
    r"write_png|grids\.append|rec\.set\(grids": "the DCGAN grid: nb.save_grid",
    r"rec\.out\s*/\s*[\"']work[\"']": "the run's working folder: rec.work_file",
    r"rec\.write\(\)|rec\.summary\(\)": "the record cell's last lines: rec.finish()",
    r"mode not in|device not in": "the mode and device check: nb.parameters",
}


@pytest.mark.parametrize("path", sorted((REPO / "notebooks").glob("*/*.ipynb")), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_framework_neutral_lines_live_in_nb(path):
    import re
    code = "\n".join(nbfile.source(c) for c in nbfile.code_cells(nbfile.read(path)))
    found = [f"{m.group(0)!r} ({home})" for pattern, home in NEUTRAL.items() for m in re.finditer(pattern, code)]
    assert not found, f"{path.parent.name}/{path.name} computes what frameval.nb holds: {found}"
    assert code.rstrip().endswith("rec.finish()  # writes result.json, prints its path and the headline figures")

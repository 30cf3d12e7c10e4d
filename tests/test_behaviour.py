"""Tensor behaviour against NumPy and error messages side by side (#40).

Fast: each case's NumPy reference against the answer written by hand in the
catalogue; a planted framework whose indexing differs from NumPy's, reported
"≠" with both values; an error message that names no sizes, scored so.
Real: the cases and mistakes run in two framework environments (PyTorch and
PaddlePaddle, once per module), and the report's matrix, counts and scores
equal what the probe's output file holds.
"""
import json
import re

import numpy as np
import pytest

from conftest import REPO
from frameval import behaviour, envs, mistakes
from frameval.envscripts.behaviour import run_case, run_cases
from frameval.envscripts.behaviour_adapters import Numpy
from frameval.envscripts.behaviour_cases import BY_ID, CASES, Raises
from frameval.report import build
from frameval.report.behaviour import SYMBOL, behaviour_section
from frameval.report.i18n import Strings
from frameval.report.mistakes import mistakes_section

S = Strings("en")


# ------------------------------------------------------------------ fast
@pytest.mark.fast
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_each_numpy_reference_is_the_answer_written_by_hand(case):
    ref = run_case(case, Numpy())
    want = behaviour.expected(case)
    if isinstance(case.expect, Raises):
        assert ref.get("raises") == case.expect.type, ref
    else:
        assert "value" in ref, ref
        assert behaviour.verdict(want, ref, case.values_only) == "same", (want, ref)


@pytest.mark.fast
def test_the_catalogue_has_about_forty_cases_in_every_group_with_unique_ids():
    from frameval.envscripts.behaviour_cases import GROUPS
    assert 40 <= len(CASES) <= 60 and len(BY_ID) == len(CASES)
    assert {c.group for c in CASES} == set(GROUPS)


class _ForwardOnly(np.ndarray):
    """The planted bug: a slice with a negative step reads forwards, its step ignored."""

    def __getitem__(self, idx):
        if isinstance(idx, slice) and (idx.step or 1) < 0:
            idx = slice(None)
        return np.asarray(super().__getitem__(idx))

    def __array_wrap__(self, arr, context=None, return_scalar=False):
        return np.asarray(arr)  # ufuncs give plain arrays, as NumPy's own: only indexing differs


class Planted(Numpy):
    name, api = "planted", "planted.Tensor"

    def t(self, a):
        return np.array(a).view(_ForwardOnly)


def _planted_file():
    return {"reference": behaviour.reference(),
            "frameworks": {"torch": {"framework": "torch", "version": "0-planted", "api": Planted.api,
                                     "cases": run_cases(Planted()), "mistakes": {}}}}


@pytest.mark.fast
def test_the_gelu_cases_tell_the_exact_gelu_from_its_tanh_approximation_in_float32():
    from frameval.envscripts.behaviour_cases import GELU_EXACT, GELU_TANH, GELU_X, gelu_exact, gelu_kind, gelu_tanh
    assert gelu_kind(gelu_exact(GELU_X).astype(np.float32)) == GELU_EXACT
    assert gelu_kind(gelu_tanh(GELU_X).astype(np.float32)) == GELU_TANH
    assert gelu_kind(np.maximum(GELU_X, 0)) == "neither" and gelu_kind(GELU_X[:3]) == "neither"
    # the two differ by more than ten times the 1e-5 gelu_kind allows, which float32 (1e-7) stays far below
    assert np.abs(gelu_exact(GELU_X) - gelu_tanh(GELU_X)).max() > 1e-4


@pytest.mark.fast
def test_a_planted_indexing_difference_is_reported_differs_with_both_values(tmp_path):
    behaviour.files.atomic_write_json(tmp_path / behaviour.BEHAVIOUR, _planted_file())
    sec = behaviour_section([str(tmp_path)], tmp_path, S)
    rows = dict(zip(sec["matrix"]["row_ids"], sec["matrix"]["rows"]))
    cell = rows["idx_negative_step"][2]
    assert cell["t"] == "≠" and cell["v"] == "differs"
    assert "[5.0, 4.0, 3.0, 2.0, 1.0, 0.0]" in cell["title"] and "[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]" in cell["title"]
    detail = [r for r in sec["details"]["rows"] if r[0]["t"] == "idx_negative_step"]
    assert len(detail) == 1 and "[5.0, 4.0" in detail[0][3]["t"] and "[0.0, 1.0" in detail[0][4]["t"]
    assert rows["idx_ellipsis"][2]["t"] == "✓" and rows["set_slice"][2]["t"] == "✓"  # only the bug differs
    differs = {i for i, r in rows.items() if r[2]["v"] == "differs"}
    assert differs == {"idx_negative_step", "idx_negative_step_range"}, differs
    assert sec["counts"]["rows"][0][4]["v"] == 2  # the ≠ column of the count


@pytest.mark.fast
def test_two_versions_are_two_columns_and_the_cases_that_changed_are_named(tmp_path):
    """A version axis (paddle==3.2.2,paddle): the planted "older version" reads
    negative steps forwards, the newer one is NumPy itself."""
    m = _planted_file()
    m["frameworks"] = {"paddle==3.2.2": dict(m["frameworks"]["torch"], framework="paddle", version="3.2.2"),
                       "paddle": {"framework": "paddle", "version": "3.3.1", "api": "numpy.ndarray",
                                  "cases": run_cases(Numpy()), "mistakes": {}}}
    behaviour.files.atomic_write_json(tmp_path / behaviour.BEHAVIOUR, m)
    sec = behaviour_section([str(tmp_path)], tmp_path, S)
    assert [h["t"] for h in sec["matrix"]["headers"][2:]] == ["PaddlePaddle 3.2.2", "PaddlePaddle 3.3.1"]
    assert sec["changed"] == [S("bh_changed", versions="PaddlePaddle 3.2.2, PaddlePaddle 3.3.1", n=2,
                                cases="idx_negative_step, idx_negative_step_range")]


@pytest.mark.fast
def test_a_message_that_names_no_sizes_scores_so():
    rec = {"raised": True, "type": "RuntimeError", "message": "the shapes do not match", "last_is_user": True,
           "chars": 23}
    assert mistakes.score("matmul_shapes", rec) == {"sizes": False, "op": False, "line": True, "short": True}
    named = dict(rec, message="mat1 and mat2 shapes cannot be multiplied (3x4 and 5x6) in matmul", chars=64)
    assert mistakes.score("matmul_shapes", named)["sizes"] is True and mistakes.score("matmul_shapes", named)["op"]
    long = dict(rec, message="\n".join(["x" * 90] * 6), chars=545, last_is_user=False)
    assert mistakes.score("matmul_shapes", long)["short"] is False and mistakes.score("matmul_shapes", long)["line"] is False
    silent = {"raised": False, "returned": "SGD"}
    assert set(mistakes.score("negative_learning_rate", silent).values()) == {None}
    n = mistakes.counts({"matmul_shapes": rec, "negative_learning_rate": silent})
    assert n["raised"] == 1 and n["silent"] == 1 and n["sizes"] == [0, 1] and n["line"] == [1, 1]


@pytest.mark.fast
def test_verdict_rules():
    arr = lambda d, x: {"value": {"dtype": d, "shape": list(np.shape(x)), "data": x}}  # noqa: E731
    assert behaviour.verdict(arr("float32", [1, 2]), arr("float32", [1, 2])) == "same"
    assert behaviour.verdict(arr("float64", [1, 2]), arr("float32", [1, 2])) == "differs"
    assert behaviour.verdict(arr("float64", [1, 2]), arr("float32", [1, 2]), values_only=True) == "same"
    assert behaviour.verdict(arr("int64", 1), arr("int64", [1])) == "differs"  # a 0-d result is not a 1-element one
    assert behaviour.verdict(arr("int64", 1), {"raises": "TypeError", "message": "no"}) == "raises"
    assert behaviour.verdict({"raises": "IndexError"}, {"raises": "RuntimeError", "message": "x"}) == "same"
    assert behaviour.verdict({"raises": "IndexError"}, arr("float32", 5.0)) == "differs"
    assert behaviour.verdict(arr("int64", 1), {"na": "immutable"}) == "na"
    assert behaviour.verdict({"value": True}, {"value": "read-only"}) == "differs"


@pytest.mark.fast
def test_the_flag_is_an_option_of_the_run_command_and_documented():
    from frameval.commands.run import parser
    assert parser().parse_args(["--behaviour"]).behaviour is True
    assert parser().parse_args([]).behaviour is False
    assert "--behaviour" in (REPO / "README.md").read_text(encoding="utf-8")
    assert (REPO / "docs" / "behaviour.md").is_file()


# ------------------------------------------------------------------ real environments
REAL = ("torch", "paddle")


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    """The cases and mistakes run afresh (no cache) in two real framework environments."""
    out = tmp_path_factory.mktemp("behaviour")
    env_by_fw = {fw: envs.ensure_framework(fw) for fw in REAL}
    lines = []
    behaviour.record(out, lines.append, env_by_fw, use_cache=False)
    on_disk = json.loads((out / behaviour.BEHAVIOUR).read_text())
    return {"out": out, "file": on_disk, "envs": env_by_fw, "lines": lines}


def test_real_run_the_matrix_equals_the_files(probed):
    m = probed["file"]
    assert set(m["frameworks"]) == set(REAL) and not any("error" in g for g in m["frameworks"].values())
    sec = behaviour_section([str(probed["out"])], probed["out"], S)
    keys = list(behaviour.judged(m))
    ref = m["reference"]["cases"]
    for case_id, row in zip(sec["matrix"]["row_ids"], sec["matrix"]["rows"]):
        for key, c in zip(keys, row[2:]):
            got = m["frameworks"][key]["cases"][case_id]
            if "na" in got:
                assert c["t"] == "–" and got["na"] in c["title"]
            elif "raises" in got and "raises" not in ref[case_id]:
                assert c["t"] == "✗" and got["raises"] in c["title"] and got["message"][:40] in c["title"]
            elif "raises" in got or "raises" in ref[case_id]:
                assert c["t"] == ("✓" if "raises" in got else "≠"), (case_id, key)
            else:  # both gave values: ✓ exactly where dtype, shape and values agree
                a, b = ref[case_id]["value"], got["value"]
                same = a == b if not isinstance(a, dict) else (
                    a["shape"] == b["shape"] and (BY_ID[case_id].values_only or a["dtype"] == b["dtype"])
                    and np.allclose(np.asarray(a["data"], float), np.asarray(b["data"], float)))
                assert c["t"] == ("✓" if same else "≠"), (case_id, key, a, b)
    for row in sec["counts"]["rows"]:
        key = row[0]["v"]
        tally = {v: sum(1 for r in sec["matrix"]["rows"] for k, c in zip(keys, r[2:]) if k == key and c["t"] == SYMBOL[v])
                 for v in behaviour.VERDICTS}
        assert [c["v"] for c in row[3:7]] == [tally[v] for v in behaviour.VERDICTS]
        assert sum(tally.values()) == len(CASES)


def test_real_run_known_behaviours(probed):
    """What the two frameworks are documented to do, read from the real run."""
    j = behaviour.judged(probed["file"])
    assert j["torch"]["idx_negative_step"]["verdict"] == "raises" and "ValueError" in j["torch"]["idx_negative_step"]["got"]
    assert j["torch"]["default_float"]["verdict"] == "differs"
    assert "float64" in j["torch"]["default_float"]["numpy"] and "float32" in j["torch"]["default_float"]["got"]
    assert j["torch"]["shares_from_numpy"]["verdict"] == "same"  # torch.from_numpy shares memory
    assert j["paddle"]["idx_negative_step"]["verdict"] == "same"
    assert all(j[k]["idx_ellipsis"]["verdict"] == "same" for k in REAL)
    # both compute the exact GELU when asked for none, function and layer (JAX's function does not)
    assert all(j[k][c]["verdict"] == "same" for k in REAL for c in ("gelu_function_default", "gelu_layer_default"))


def test_real_run_the_report_has_both_sections_and_the_scores_equal_the_files(probed, tmp_path):
    info = build([str(probed["out"])], tmp_path)
    md, html = (tmp_path / "report.md").read_text(), (tmp_path / "report.html").read_text()
    assert not info["problems"]
    for text in (md, html):
        assert "Tensor behaviour against NumPy" in text and "Error messages side by side" in text
    assert re.search(r"\| \[idx\\_negative\\_step\]\([^)]*behaviour_cases\.py#L\d+\) \|[^|]*\|[^|]*\| ⚠️ \*\*✗\*\* \|", md), \
        "the matrix row in report.md: PaddlePaddle ✓, PyTorch ✗ (columns in the frameworks' order)"
    assert 'title="NumPy: float64' in html  # a ≠ cell's hover text holds both values
    sec = mistakes_section([str(probed["out"])], S)
    by_key = {r[0]["v"]: r for r in sec["counts"]["rows"]}
    for key in REAL:
        recs = probed["file"]["frameworks"][key]["mistakes"]
        n = mistakes.counts(recs)
        assert by_key[key][1]["v"] == n["raised"] and by_key[key][2]["v"] == n["silent"]
    torch_matmul = probed["file"]["frameworks"]["torch"]["mistakes"]["matmul_shapes"]
    assert torch_matmul["raised"] and "3x4" in torch_matmul["message"]
    assert mistakes.score("matmul_shapes", torch_matmul)["sizes"] is True
    table = next(mk["table"] for mk in sec["mistakes"] if mk["id"] == "negative_learning_rate")
    paddle_row = next(r for r in table["rows"] if r[0]["v"] == "paddle")
    silent = probed["file"]["frameworks"]["paddle"]["mistakes"]["negative_learning_rate"]
    assert (paddle_row[1]["t"] == "no error") == (not silent["raised"])


def test_a_rerun_measures_nothing(probed):
    assert behaviour.plan_line(probed["envs"]) == "frameval: --behaviour: nothing to run; cached: paddle, torch"
    lines = []
    again = behaviour.measure(probed["envs"], lines.append)
    assert all(g.get("cached") for g in again["frameworks"].values()) and "all cached" in lines[0]
    assert again["frameworks"]["torch"]["cases"] == probed["file"]["frameworks"]["torch"]["cases"]


def test_the_flag_runs_it_in_the_pipeline_and_the_report_shows_it(tmp_path):
    """`run_all.py --behaviour` end to end: the pipeline records behaviour.json
    beside the runs, and the collector's report has both sections."""
    from conftest import TINY, run_all
    out = tmp_path / "out"
    p = run_all("--frameworks", "paddle", "--workloads", "lenet", "--mode", "eager", "--behaviour", "--out", str(out),
                *TINY, timeout=900)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "tensor behaviour against NumPy and error messages: 1 framework(s)" in p.stdout
    m = behaviour.read(out)
    assert list(m["frameworks"]) == ["paddle"] and "error" not in m["frameworks"]["paddle"]
    md = (out / "report.md").read_text()
    n = {v: sum(1 for j in behaviour.judged(m)["paddle"].values() if j["verdict"] == v) for v in behaviour.VERDICTS}
    row = next(ln for ln in md.splitlines() if ln.startswith("| PaddlePaddle | ") and "paddle.Tensor" in ln)
    cells = [c.strip().strip("*⚠️ ") for c in row.strip("|").split("|")]
    assert [int(c) for c in cells[3:7]] == [n[v] for v in behaviour.VERDICTS], (row, n)
    assert "## Error messages side by side" in md

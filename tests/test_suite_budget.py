"""The guard on the suite's length (tests/budget.py): a test file that gains a
place starting real notebook runs, outside the shared fixtures, fails here
until its count in tests/budget.py is raised on purpose."""
import re
from pathlib import Path

import pytest

from tests import budget

pytestmark = pytest.mark.fast

TESTS = Path(__file__).resolve().parent
NOT_A_RUN = ("--dry-run", "--report-only", "--help", '"-h"')
PAPERMILL = re.compile(r"papermill\.execute_notebook\(|\"-m\", \"papermill\"")
SUBPROCESS = re.compile(r"subprocess\.(run|Popen)\(\[.*run_all\.py\"\)")


def real_run_sites(text: str) -> int:
    """Lines that start real runs: run_all(...) without a planning-only option, or papermill."""
    n = 0
    for line in text.splitlines():
        code = line.split("#", 1)[0]
        if re.search(r"\brun_all\(", code) and not re.search(r"def run_all\(", code) \
                and not any(x in code for x in NOT_A_RUN):
            n += 1
        elif PAPERMILL.search(code) or (SUBPROCESS.search(code) and not any(x in code for x in NOT_A_RUN)):
            n += 1
    return n


def test_counting_sees_a_real_run_and_not_a_plan():
    assert real_run_sites('    p = run_all("--frameworks", "torch", "--out", str(o))\n') == 1
    assert real_run_sites('    p = run_all("--dry-run")\n    x = 1  # run_all(\n') == 0
    assert real_run_sites('    papermill.execute_notebook(str(nb), out)\n') == 1
    assert real_run_sites('    p = subprocess.run([sys.executable, str(REPO / "run_all.py"), *SWEEP])\n') == 1


def test_every_file_declares_its_real_runs():
    over = []
    for f in sorted(TESTS.glob("*.py")):
        if f.name == Path(__file__).name:  # its own examples are strings
            continue
        n = real_run_sites(f.read_text())
        allowed = budget.FILES.get(f.name, (0, budget.DEFAULT_S))[0]
        if n > allowed:
            over.append(f"{f.name}: {n} real-run call sites, budget {allowed}")
    assert not over, ("a test file starts more real runs than tests/budget.py allows (use the shared "
                      "`matrix` fixture, or raise the count there on purpose): " + "; ".join(over))


def test_every_budget_names_a_file_that_exists():
    assert all(f == "conftest.py" or (TESTS / f).exists() for f in budget.FILES), "a budget for a file that is gone"

"""Per-user folders, computed with the standard library only (the runner reads
them before its own environment exists; `frameval/nb/paths.py` re-exports them
for the notebooks).

Framework environments do not have platformdirs, yet a notebook opened by hand
must find the same data cache the runner prepared. So the rule lives here and
follows `platformdirs.user_cache_dir("frameval")` / `user_data_dir` (a test
checks that both agree). `FRAMEVAL_CACHE_DIR` overrides the cache root.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

APP = "frameval"
# The clone this module runs from: its notebooks/, envs/, templates/, defects/.
REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = "notebooks"  # <clone>/notebooks/<framework>/<workload>.ipynb


def notebook_rel(framework: str, workload: str) -> str:
    """A notebook as the repository names it: notebooks/<framework>/<workload>.ipynb."""
    return f"{NOTEBOOKS}/{framework}/{workload}.ipynb"


def notebook_path(framework: str, workload: str, repo=REPO) -> Path:
    """A notebook's file in the clone `repo` (this one by default)."""
    return Path(repo) / notebook_rel(framework, workload)


def user_cache_dir() -> Path:
    if os.environ.get("FRAMEVAL_CACHE_DIR"):
        return Path(os.environ["FRAMEVAL_CACHE_DIR"])
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / APP
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / APP / APP / "Cache"
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / APP


def user_data_dir() -> Path:
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / APP
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / APP / APP
    base = os.environ.get("XDG_DATA_HOME", "").strip() or str(Path.home() / ".local" / "share")
    return Path(base) / APP


def data_cache_dir() -> Path:
    """Where the runner writes prepared data sets and notebooks read them."""
    return user_cache_dir() / "data"


def envs_dir() -> Path:
    return user_cache_dir() / "envs"


def handoff_dir() -> Path:
    """Where a command leaves its prepared configuration for the process it
    re-executes inside the runner environment (which removes it once read)."""
    return user_cache_dir() / "handoff"


def hand_runs_dir() -> Path:
    """Where notebooks run by hand (no `out_dir` given) write: an output folder
    like run_all.py's (`runs/<framework>/<workload>-<mode>[@changed=params]/result.json`
    and a `plan.json`), so `run_all.py --report-only --from` reads it as it is.
    `FRAMEVAL_HAND_RUNS` moves it (a classroom share, the tests)."""
    if os.environ.get("FRAMEVAL_HAND_RUNS", "").strip():
        return Path(os.environ["FRAMEVAL_HAND_RUNS"]).expanduser()
    return user_data_dir() / "notebook-runs"


# Set in a pinned version's kernel.json ("paddle@3.2.2"): a hand run in that
# kernel goes to runs/paddle@3.2.2/, beside the bare version's runs/paddle/,
# as run_all.py lays out the two (frameval/versions.py).
FRAMEWORK_KEY_ENV = "FRAMEVAL_FRAMEWORK_KEY"


def hand_run_framework(framework: str) -> str:
    """The folder name under runs/ for a hand run of `framework` in this kernel."""
    key = os.environ.get(FRAMEWORK_KEY_ENV, "").strip()
    return key if key.partition("@")[0] == framework and "/" not in key else framework


def lab_dir() -> Path:
    """`run_all.py lab`'s per-user folder: the working copy of notebooks/
    (`notebooks/`), the record of what was copied, and the server's config."""
    return user_data_dir() / "lab"

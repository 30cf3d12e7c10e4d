"""`python3 run_all.py lab`: JupyterLab with every framework's kernel visible,
for teaching sessions. Builds what is missing first.

The repository stays clean: the lab serves a per-user working copy of
notebooks/ (`paths.lab_dir()/notebooks`), so saving never writes into the
clone. A copy is refreshed from the repository when the repository's notebook
changed and the copy has no edits (its hash still equals the hash recorded
when it was copied); an edited copy is left alone, with a printed note.

Notebooks run there write into the hand-runs folder (`paths.hand_runs_dir()`),
an output folder the collector reads as it is; a post-save hook copies a saved
notebook beside the result.json its outputs name (`output.ipynb`, which the
report links), so the executed notebook sits with its run.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

from . import files
from .paths import REPO, hand_runs_dir, lab_dir
from .catalog import FRAMEWORKS

MANIFEST = ".frameval-copied.json"   # {relative path: sha256 of the repository file last copied}


def report_command(hand: Path | None = None) -> str:
    """The one command that makes the report from the hand runs."""
    hand = Path(hand or hand_runs_dir())
    return f"python3 run_all.py --report-only --from {shlex.quote(str(hand))} --out reports/hand"


# ------------------------------------------------------------------ the working copy
def _copy(src: Path, dst: Path):
    files.atomic_copy(src, dst)


def sync_notebooks(src: Path | None = None, dst: Path | None = None, echo=print) -> Path:
    """Copy the repository's notebooks into the per-user working copy: missing
    ones copied, unedited ones refreshed when the repository's changed, edited
    ones left alone (a note when the repository's version moved on). Returns
    the working copy's folder."""
    src = Path(src or REPO / "notebooks")
    dst = Path(dst or lab_dir() / "notebooks")
    dst.mkdir(parents=True, exist_ok=True)
    copied = files.read_json(dst / MANIFEST, {})
    copied = copied if isinstance(copied, dict) else {}
    new, refreshed, kept = [], [], []
    for f in sorted(src.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in f.parts:
            continue
        rel = f.relative_to(src).as_posix()
        mine, repo = dst / rel, files.sha256_file(f)
        if not mine.exists():
            _copy(f, mine)
            copied[rel] = repo
            new.append(rel)
            continue
        have = files.sha256_file(mine)
        if have == repo:
            copied[rel] = repo
        elif copied.get(rel) == have:      # untouched since it was copied: the repository moved on
            _copy(f, mine)
            copied[rel] = repo
            refreshed.append(rel)
        elif copied.get(rel) != repo:      # edited here, and the repository's changed too
            kept.append(rel)
    files.atomic_write_json(dst / MANIFEST, copied, sort_keys=True)
    if new:
        echo(f"frameval: copied {len(new)} notebook(s) from the repository into {dst}")
    for rel in refreshed:
        echo(f"frameval: {rel}: refreshed from the repository (your copy had no edits)")
    for rel in kept:
        echo(f"frameval: {rel}: the repository's version changed, but your copy has edits: kept yours "
             f"(delete {dst / rel} to get the new one)")
    return dst


# ------------------------------------------------------------------ hand runs
def prepare_hand_runs(echo=print) -> Path:
    """The hand-runs folder as an output folder (runs/ and plan.json), so the
    report command works from the start; hand runs of the older layout
    (<framework>/<workload>-<mode>/ without runs/) are pointed out."""
    from .nb.record import write_hand_plan
    hand = hand_runs_dir()
    write_hand_plan(hand)
    old = [d for d in sorted(hand.glob(f"*/*/{files.RESULT}")) if d.parts[-3] in FRAMEWORKS]
    if old:
        echo(f"frameval: {len(old)} hand run(s) of an older layout in {hand}/<framework>/ are not collected: "
             f"move {hand}/<framework> to {hand}/runs/<framework> to include them")
    return hand


def write_server_config() -> Path:
    """A Jupyter config folder whose jupyter_server_config.py installs the
    post-save hook (a failure to import it is printed, never fatal)."""
    d = lab_dir() / "config"
    d.mkdir(parents=True, exist_ok=True)
    text = (
        "# written by `python3 run_all.py lab` (frameval): copies a saved notebook beside the hand run it made\n"
        "import sys, warnings\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        "# the server and the lab extension both apply this config: the second setting is the same hook\n"
        "warnings.filterwarnings('ignore', message='Overriding existing post_save_hook')\n"
        "try:\n"
        "    from frameval.lab import post_save_hook\n"
        "    c.ContentsManager.post_save_hook = post_save_hook\n"
        "except Exception as e:  # noqa: BLE001\n"
        "    print(f'frameval: saved notebooks will not be copied beside their results: {e}', file=sys.stderr)\n")
    f = d / "jupyter_server_config.py"
    if not f.exists() or f.read_text() != text:
        f.write_text(text)
    return d


_PATH_REPR = re.compile(r"""Path\((['"])(.+?)\1\)""")


def result_paths(nb: dict) -> list:
    """The result.json paths a notebook's outputs name (the record cell prints it)."""
    found = []
    for c in nb.get("cells", []):
        for o in c.get("outputs", []) or []:
            texts = [o.get("text", "")] + [v for k, v in (o.get("data") or {}).items() if k == "text/plain"]
            for t in texts:
                t = "".join(t) if isinstance(t, list) else str(t)
                for line in t.splitlines():
                    line = line.strip()
                    m = _PATH_REPR.search(line)
                    cand = m.group(2) if m else line
                    if cand.endswith(files.RESULT) and cand not in found:
                        found.append(cand)
    return found


def post_save_hook(model=None, os_path=None, contents_manager=None, **_):
    """jupyter_server's post-save hook: a saved notebook whose outputs name a
    hand run's result.json is copied beside it as output.ipynb."""
    log = getattr(contents_manager, "log", None)
    try:
        if not os_path or not str(os_path).endswith(".ipynb"):
            return
        nb = files.read_json(os_path)
        root = (hand_runs_dir() / files.RUNS).resolve()
        for p in result_paths(nb):
            res = Path(p).resolve()
            if res.is_file() and root in res.parents:
                _copy(Path(os_path), res.parent / files.OUTPUT_NB)
                if log:
                    log.info("frameval: %s saved beside its run in %s", os_path, res.parent)
    except Exception as e:  # noqa: BLE001 - a hook never fails a save
        if log:
            log.warning("frameval: could not copy %s beside its run: %s", os_path, e)

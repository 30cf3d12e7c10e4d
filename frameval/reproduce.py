"""What `run_all.py reproduce REPORT_DIR` reads from a report before it runs
anything (issue #41): its record (provenance.json, checked: bad input is one
line and exit 2), whether this clone is the commit that made it (and the files
under frameval/ and notebooks/ that differ when it is not), and the run
command that makes the same plan again into the reproduction's folder.

Standard library only: it runs before the runner environment exists.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

from . import files, provenance
from .exits import BadInput
from .paths import REPO

# Where the code that computes a run lives: a change there can change a result.
CODE = ("frameval", "notebooks")
# Run options the reproduction sets itself (value: how many arguments follow;
# "?" one where it does not start with "-"), or that would keep it from running.
OWN_OPTIONS = {"--out": 1, "--python": 1, "--offline": 1, "--force": "?", "--from": 1, "--dry-run": 0,
               "--setup-only": 0, "--report-only": 0}


def load(folder) -> dict:
    """The record of the report in `folder`; BadInput (one line) where there is none to reproduce."""
    folder = Path(folder)
    if not folder.is_dir():
        raise BadInput(f"reproduce {folder}: no such folder")
    if not (folder / files.PROVENANCE).is_file():
        raise BadInput(f"reproduce {folder}: no {files.PROVENANCE} there (made before frameval recorded "
                       "provenance, or not a frameval output folder): nothing says how to reproduce it")
    record = provenance.read(folder)
    if record is None:
        raise BadInput(f"reproduce {folder}: {files.PROVENANCE} cannot be read as JSON")
    runs = (record.get("plan") or {}).get("runs")
    argv = (record.get("command") or {}).get("argv")
    if not isinstance(runs, list) or not runs or not isinstance(argv, list):
        raise BadInput(f"reproduce {folder}: {files.PROVENANCE} holds no plan or no command line to run again")
    return record


def _git(*args) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None


def code_changes(record: dict) -> dict:
    """{"same": bool, "commit", "head", "files": what differs under frameval/ and notebooks/,
    "known": whether this clone has the report's commit}. `files` compares the
    report's commit with this clone as it is (uncommitted edits included)."""
    commit = (record.get("frameval") or {}).get("commit") or "unknown"
    head = provenance.git_state()
    out = {"commit": commit, "head": head["commit"], "files": [], "known": False,
           "report_dirty": (record.get("frameval") or {}).get("dirty")}
    p = _git("cat-file", "-e", f"{commit}^{{commit}}")
    out["known"] = bool(p and p.returncode == 0)
    if out["known"]:
        d = _git("diff", "--name-only", commit, "--", *CODE)
        untracked = _git("ls-files", "--others", "--exclude-standard", "--", *CODE)
        out["files"] = sorted(set((d.stdout if d else "").split()) | set((untracked.stdout if untracked else "").split()))
    out["same"] = out["known"] and commit == head["commit"] and not out["files"]
    return out


def note(key: str, **kw) -> dict:
    """A line `reproduce` says, as its words' key (templates/strings, "rep_n_*") and values: said in
    the comparison's language (frameval/report/reproduction.py's `said`)."""
    return dict(kw, key=key)


def warning(changes: dict) -> dict | None:
    """The warning where this clone is not the report's commit (None where it is)."""
    commit, head = changes["commit"][:12], changes["head"][:12]
    dirty = bool(changes.get("report_dirty"))
    files_ = changes["files"]
    named = ", ".join(files_[:20]) + (f" (+{len(files_) - 20})" if len(files_) > 20 else "")
    if not changes["known"]:
        return note("rep_n_unknown_commit", head=head, commit=commit, dirty=dirty)
    if changes["same"]:
        return note("rep_n_report_dirty", commit=commit, dirty=False) if dirty else None
    if commit == head:
        return note("rep_n_uncommitted", commit=commit, files=named, dirty=dirty)
    return note("rep_n_other_commit" if files_ else "rep_n_other_commit_same_code", head=head, commit=commit,
                files=named, dirty=dirty)


def _strip(argv) -> list:
    """The recorded run options without the ones the reproduction sets (OWN_OPTIONS)."""
    out, i = [], 0
    while i < len(argv):
        a = str(argv[i])
        name = a.split("=", 1)[0]
        if name in OWN_OPTIONS:
            takes = OWN_OPTIONS[name]
            i += 1
            if "=" not in a and (takes == 1 or (takes == "?" and i < len(argv) and not str(argv[i]).startswith("-"))):
                i += 1
            continue
        out.append(a)
        i += 1
    return out


def run_argv(record: dict, out, pythons: dict, offline: str = "") -> list:
    """The run command's arguments that make the report's plan again into `out`:
    every run executed (--force all), your interpreters, an offline bundle."""
    argv = _strip(record["command"]["argv"]) + ["--out", str(out), "--force", "all"]
    for fw, exe in sorted(pythons.items()):
        argv += ["--python", f"{fw}={exe}"]
    return argv + (["--offline", str(offline)] if offline else [])


def plan_differences(record: dict, runs) -> list:
    """What differs between the report's planned runs and `runs` (plan.Run) that
    this clone makes from the same command: runs missing or added, parameters."""
    def key(r):
        return (r["name"], r["repeat"]) if isinstance(r, dict) else (r.name, r.repeat)

    def params(p):
        return {k: v for k, v in p.items() if k != "out_dir"}
    old = {key(r): params(r.get("params") or {}) for r in record["plan"]["runs"]}
    new = {key(r): params(r.params) for r in runs}
    said = [note("rep_n_plan_missing", run=n, repeat=k) for n, k in old if (n, k) not in new]
    said += [note("rep_n_plan_added", run=n, repeat=k) for n, k in new if (n, k) not in old]
    for k in sorted(old.keys() & new.keys()):
        diff = sorted(p for p in set(old[k]) | set(new[k]) if old[k].get(p) != new[k].get(p))
        if diff:
            said.append(note("rep_n_plan_params", run=k[0], repeat=k[1],
                             what=", ".join(f"{p} {old[k].get(p)!r} → {new[k].get(p)!r}" for p in diff)))
    return said

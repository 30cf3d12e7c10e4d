"""Environments rebuilt from a report's own record (`run_all.py reproduce`,
issue #41): its provenance.json names, per framework, the lock it was built
from (file and SHA-256), or that it was the user's own interpreter, or built
unlocked; and its freeze. From that:

- a lock whose SHA-256 equals the clone's: built from the clone's lock, as
  the run command builds (the same versions and hashes);
- a lock the clone no longer has: the spec and lock at the report's commit
  (`git show`), their digest checked against the record, in a spec folder of
  the reproduction's own (FRAMEVAL_ENV_SPECS);
- built unlocked, or a lock that cannot be found: a spec pinning every
  package of the freeze to its exact version (no hashes to check: said so);
- your own interpreter (`--python`): reused where it still exists, else a
  venv from its freeze, and said so.

Every choice is one line in `notes`, which the comparison shows.
Standard library only: it runs before the runner environment exists.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..paths import REPO
from . import lockfile
from .spec import ENVS_SPEC_DIR, framework_spec, split_key


@dataclass
class Rebuild:
    spec_dir: Path | None = None                   # FRAMEVAL_ENV_SPECS for the rerun, where needed
    pythons: dict = field(default_factory=dict)    # {fw: interpreter} passed as --python FW=PATH
    notes: list = field(default_factory=list)      # one note per environment: how it is rebuilt (reproduce.note)
    venvs: list = field(default_factory=list)      # [(fw, python version, freeze)] still to build


def note(key: str, **kw) -> dict:
    """A line said about an environment: its words' key (templates/strings, "rep_n_env_*") and values."""
    return dict(kw, key=key)


def _git_show(commit: str, path: str) -> str | None:
    try:
        p = subprocess.run(["git", "-C", str(REPO), "show", f"{commit}:{path}"], capture_output=True, text=True,
                           timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return p.stdout if p.returncode == 0 else None


def freeze_lines(freeze: str) -> list:
    """The freeze's pins an index can serve (an editable or local-path line cannot be)."""
    return [ln.strip() for ln in freeze.splitlines()
            if "==" in ln and not ln.startswith(("-e", "#")) and " @ " not in ln]


def freeze_spec(fw: str, env: dict) -> str:
    """A spec pinning every package of a recorded freeze (specfile.py's format)."""
    pins = "\n".join(f"      - {ln}" for ln in freeze_lines(env.get("freeze", "")))
    return (f"# frameval reproduce: {fw} pinned to the report's freeze (exact versions; no hashes recorded)\n"
            f"name: frameval-{fw}\nchannels:\n  - conda-forge\ndependencies:\n"
            f"  - python={env.get('python') or '3.11'}\n  - pip\n  - pip:\n{pins}\n")


def _spec_name(env: dict) -> str:
    return Path(env.get("spec") or "").name


def _from_commit(commit: str, env: dict, folder: Path) -> bool:
    """The spec and lock at the report's commit into `folder`, if the lock's digest is the record's."""
    spec_rel, lock_rel = env.get("spec") or "", (env.get("lock") or {}).get("file") or ""
    spec_text, lock_text = _git_show(commit, spec_rel), _git_show(commit, lock_rel)
    if spec_text is None or lock_text is None:
        return False
    if hashlib.sha256(lockfile.body_of(lock_text).encode()).hexdigest() != env["lock"].get("sha256"):
        return False
    (folder / _spec_name(env)).write_text(spec_text)
    (folder / Path(lock_rel).name).write_text(lock_text)
    return True


def _user(fw: str, env: dict, plan: Rebuild) -> None:
    exe = env.get("python_executable") or ""
    if exe and Path(exe).exists() and os.access(exe, os.X_OK):
        plan.pythons[fw] = exe
        plan.notes.append(note("rep_n_env_user", fw=fw, python=exe))
        return
    version = env.get("python_version") or env.get("python") or ""
    plan.venvs.append((fw, ".".join(str(version).split(".")[:2]), env.get("freeze", "")))
    plan.notes.append(note("rep_n_env_venv", fw=fw, python=exe or "?", n=len(freeze_lines(env.get("freeze", ""))),
                           version=version or "?"))


def _runner(env: dict, plan: Rebuild) -> None:
    """The runner draws the report and runs no notebook: this clone's is used, and said where its lock differs."""
    from ..bootstrap import RUNNER_SPEC
    from .specfile import parse_spec
    here = lockfile.lock_digest(parse_spec(RUNNER_SPEC))
    same = bool(here) and here == (env.get("lock") or {}).get("sha256")
    plan.notes.append(note("rep_n_env_runner_same" if same else "rep_n_env_runner_differs"))


def plan_rebuild(record: dict, workdir: Path) -> Rebuild:
    """How each recorded environment is rebuilt (the module doc); nothing is built here."""
    plan, folder, device = Rebuild(), Path(workdir) / "envs", (record.get("plan") or {}).get("device", "cpu")
    commit = (record.get("frameval") or {}).get("commit", "")
    written = {}
    for fw, env in sorted((record.get("environments") or {}).items()):
        if fw == "runner":
            _runner(env, plan)
            continue
        lock = env.get("lock") or {}
        if env.get("provided_by_user") or lock.get("state") == "user":
            _user(fw, env, plan)
            continue
        if split_key(fw)[1]:
            plan.notes.append(note("rep_n_env_pinned", fw=fw))
            continue
        if lock.get("state") == "locked":
            here = lockfile.lock_digest(framework_spec(fw, device))
            if here and here == lock.get("sha256"):
                plan.notes.append(note("rep_n_env_lock", fw=fw, file=lock.get("file"), sha=here[:12]))
                continue
            folder.mkdir(parents=True, exist_ok=True)
            if _from_commit(commit, env, folder):
                written[fw] = "commit"
                plan.notes.append(note("rep_n_env_commit_lock", fw=fw, file=lock.get("file"), commit=commit[:12],
                                       sha=lock["sha256"][:12]))
                continue
        folder.mkdir(parents=True, exist_ok=True)
        (folder / (_spec_name(env) or f"{fw}.yml")).write_text(freeze_spec(fw, env))
        written[fw] = "freeze"
        why = lock.get("why")  # the record's own words on why it was unlocked
        plan.notes.append(note("rep_n_env_freeze", fw=fw, why=why) if why else note("rep_n_env_freeze_lost", fw=fw))
    if written:
        _fill(folder, written)
        plan.spec_dir = folder
    return plan


def _fill(folder: Path, written: dict) -> None:
    """Every other spec and lock of the clone beside the rebuilt ones (FRAMEVAL_ENV_SPECS is a whole folder)."""
    for p in sorted(ENVS_SPEC_DIR.glob("*.yml")) + sorted(ENVS_SPEC_DIR.glob(f"*{lockfile.SUFFIX}")):
        if not (folder / p.name).exists():
            shutil.copyfile(p, folder / p.name)
    for fw, how in written.items():
        if how == "freeze":  # no lock beside a freeze's spec: it builds from the spec, unlocked, and says so
            (folder / f"{fw}{lockfile.SUFFIX}").unlink(missing_ok=True)


def build_venv(fw: str, version: str, freeze: str, where: Path, echo=print) -> Path:
    """A venv at `where` with the recorded freeze's pins; its interpreter."""
    from .installers import EnvBuildError, install_packages
    from .pythons import find_python
    base = find_python(version) if version else None
    if base is None:
        raise EnvBuildError(f"{fw}: no Python {version or '?'} on this machine for the venv from its freeze")
    python = Path(where) / "bin" / "python"
    if not python.exists():
        subprocess.run([str(base), "-m", "venv", str(where)], check=True, stdin=subprocess.DEVNULL)
    with open(Path(where).with_suffix(".log"), "a") as log:
        install_packages(python, freeze_lines(freeze) + ["ipykernel"], log, echo=echo)
    return python

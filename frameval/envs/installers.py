"""Installing packages into an environment: with uv where it can be had (the
runner environment's, one on PATH, or one bootstrapped into the cache with
pip), else with pip, saying so in one line. uv does not read pip's
configuration, so the user's pip settings are passed to it (pipconf.py).
Also the line of a failed install's log that says why.

Standard library only: the runner's own environment is built with this module.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from ..bundle import offline
from ..locks import file_lock
from ..paths import user_cache_dir
from .pipconf import is_true, uv_options


class EnvBuildError(RuntimeError):
    """An environment, or packages into one, that did not install; the message says why."""


def run_logged(cmd, log, env=None, what: str = ""):
    """Run an install step with its output in the build log (timed); EnvBuildError if it fails."""
    log.write(f"$ {' '.join(map(str, cmd))}\n")
    log.flush()
    t0 = time.perf_counter()
    p = subprocess.run([str(c) for c in cmd], stdout=log, stderr=subprocess.STDOUT, env=env,
                       stdin=subprocess.DEVNULL)
    log.write(f"# exit {p.returncode} after {time.perf_counter() - t0:.1f} s\n")
    log.flush()
    if p.returncode != 0:
        raise EnvBuildError(f"{what or Path(str(cmd[0])).name} failed with exit {p.returncode}")


def requirements_file(lines) -> str:
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(lines) + "\n")
        return f.name


def pip_install(python: Path, lines, log, lock_file=None) -> None:
    """Install requirement lines with the environment's own pip; or, given
    `lock_file` (lockfile.py), that lock with every file's hash checked."""
    req = requirements_file(lines)
    lock_file, temp = offline.lock_file(lock_file) if lock_file else (None, False)
    source = ["--require-hashes", "-r", lock_file] if lock_file else ["-r", req]
    try:
        run_logged([python, "-m", "pip", "install", "--no-input", *offline.pip_args(), *source], log,
                   what="pip install")
    finally:
        os.unlink(req)
        if temp:
            os.unlink(lock_file)


# ------------------------------------------------------------------------ uv
_uv_lock = threading.Lock()
_uv_state: dict = {}


def _uv_works(exe) -> str:
    """uv's version if `exe` runs, else ""."""
    try:
        p = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    m = re.match(r"uv (\S+)", p.stdout.strip())
    return m.group(1) if p.returncode == 0 and m else ""


def _tools_uv() -> Path:
    return user_cache_dir() / "tools" / "uv" / ("Scripts/uv.exe" if os.name == "nt" else "bin/uv")


def _bootstrap_uv() -> Path:
    """Install the PyPI package `uv` into the cache's tools folder with this
    Python's pip (the standard library's path: the runner environment may not
    exist yet). Once per machine; the runner environment then has its own."""
    exe = _tools_uv()
    root = exe.parent.parent
    root.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(root.with_suffix(".lock")):
        if _uv_works(exe):
            return exe
        tmp = root.with_name(f"uv.tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        with open(root.with_suffix(".log"), "w") as log:
            run_logged([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
                        *offline.pip_args(), "--target", tmp, "uv"], log, what="pip install uv")
        shutil.rmtree(root, ignore_errors=True)
        os.replace(tmp, root)
    if not _uv_works(exe):
        raise EnvBuildError(f"{exe} does not run")
    return exe


def _find_uv():
    if os.environ.get("FRAMEVAL_INSTALLER", "").strip().lower() == "pip":
        return None, "", "FRAMEVAL_INSTALLER=pip"
    here = Path(sys.executable).parent / ("uv.exe" if os.name == "nt" else "uv")  # the runner env's own
    for cand in (os.environ.get("FRAMEVAL_UV"), here, shutil.which("uv"), _tools_uv()):
        if cand and Path(cand).exists():
            version = _uv_works(cand)
            if version:
                return str(cand), version, ""
    try:
        exe = _bootstrap_uv()
        return str(exe), _uv_works(exe), ""
    except (EnvBuildError, OSError) as e:
        return None, "", f"could not install it: {e}; see {_tools_uv().parent.parent.with_suffix('.log')}"


def uv_executable(echo=print) -> str | None:
    """The uv to install with, found or bootstrapped once per process; None
    (after one printed line) where there is none: then pip installs."""
    with _uv_lock:
        if "exe" not in _uv_state:
            _uv_state["exe"], _uv_state["version"], why = _find_uv()
            _uv_state["why"] = why
            if _uv_state["exe"] is None and echo:
                echo(f"uv unavailable ({why}); installing with pip instead, which is slower")
        return _uv_state["exe"]


def installer_name(echo=None) -> str:
    return f"uv {_uv_state.get('version', '')}".strip() if uv_executable(echo) else "pip"


def uv_found() -> str | None:
    """The uv this process has already found, without looking for one (a
    freeze must not bootstrap uv): None before the first look, or where there is none."""
    return _uv_state.get("exe")


def uv_cannot_be_installed() -> bool:
    """Whether the last look for uv tried to install it and failed (not merely FRAMEVAL_INSTALLER=pip)."""
    return _uv_state.get("why", "").startswith("could not install")


def uv_install(uv: str, python: Path, lines, log, lock_file=None) -> None:
    """Install requirement lines with uv; or, given `lock_file`, that lock, hash-checked."""
    args, env = uv_options()
    req = requirements_file(lines)
    lock_file, temp = offline.lock_file(lock_file) if lock_file else (None, False)
    source = ["--require-hashes", "-r", lock_file] if lock_file else ["-r", req]
    try:
        if is_true(os.environ.get("FRAMEVAL_COMPILE_BYTECODE")):
            args.append("--compile-bytecode")
        args += offline.uv_args()  # --offline BUNDLE: the bundle's wheels alone, no index
        cmd, env = [uv, "pip", "install", "--python", python, *args, *source], dict(os.environ, **env)
        cached = lock_file and not offline.active() and "--no-cache" not in args
        if not (cached and _from_uv_cache(cmd, log, env)):
            run_logged(cmd, log, what="uv pip install", env=env)
    finally:
        os.unlink(req)
        if temp:
            os.unlink(lock_file)


ONLINE_AGAIN = "# not every file is in uv's cache: installing with the index"


def _from_uv_cache(cmd, log, env) -> bool:
    """A hash-checked lock installed from uv's cache alone (`--offline`), where
    it holds every file: the same files, checked against the same hashes, with no
    index revalidated. Revalidating took 5-12 s of each environment's install
    here, eight installs asking the index at once and retrying its refusals,
    where the same install from the cache takes under a second. False (after a
    line in the log) where a file is missing: the caller installs online."""
    try:
        run_logged([*cmd, "--offline"], log, what="uv pip install --offline", env=env)
        return True
    except EnvBuildError:
        log.write(ONLINE_AGAIN + "\n")
        return False


def install_packages(python: Path, lines, log, echo=print) -> str:
    """Install requirement lines into an existing interpreter's environment with
    uv, else pip. Returns the installer used."""
    uv = uv_executable(echo)
    if uv:
        uv_install(uv, Path(python), lines, log)
        return installer_name()
    pip_install(python, lines, log)
    return "pip"


# ------------------------------------------------------------ a failed install
def failure_line(log_path: Path) -> str:
    """The line of a build log that says why it failed (pip's ERROR, uv's reason)."""
    try:
        lines = [ln.strip(" ×╰─▶│") for ln in log_path.read_text(errors="replace").splitlines()]
    except OSError:
        return ""
    if ONLINE_AGAIN in lines:  # the cache-only attempt's reason is not the install's
        lines = lines[len(lines) - lines[::-1].index(ONLINE_AGAIN):]
    lines = [ln.strip() for ln in lines if ln.strip() and not ln.startswith(("$ ", "# "))]
    because = [ln[ln.index("Because "):] for ln in lines if "Because " in ln]  # uv's reason
    if because:
        return because[0][:300]
    for pat in (r"^(ERROR|error):", r"(not found|No matching|unsatisfiable|No solution)"):
        hits = [ln for ln in lines if re.search(pat, ln)]
        if hits:
            return re.sub(r"^(ERROR|error):\s*", "", hits[-1])[:300]
    return ""

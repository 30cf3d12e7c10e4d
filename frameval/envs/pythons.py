"""Finding the Python a spec asks for ("3.11"), to create a venv with:
pyenv's versions folder first, then PATH. Standard library only.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

_python_cache: dict = {}


def _python_candidates(version: str):
    roots = [os.environ.get("PYENV_ROOT"), str(Path.home() / ".pyenv")]
    try:
        roots.append(subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip())
    except OSError:
        pass
    for root in dict.fromkeys(filter(None, roots)):
        vdir = Path(root) / "versions"
        if vdir.is_dir():
            key = lambda p: [int(x) if x.isdigit() else 0 for x in re.split(r"[.\-]", p.name)]
            for d in sorted(vdir.iterdir(), key=key, reverse=True):
                if re.fullmatch(rf"{re.escape(version)}\.\d+", d.name):
                    yield d / "bin" / "python"
    for name in (f"python{version}", "python3"):
        exe = shutil.which(name)
        if exe:
            yield Path(exe)
    yield Path(getattr(sys, "_base_executable", sys.executable))


def find_python(version: str) -> Path | None:
    """A working Python `version` (with venv): pyenv's versions folder first, then
    PATH. Each candidate is run once, since a pyenv shim on PATH may refuse."""
    if version in _python_cache:
        return _python_cache[version]
    found = None
    for exe in _python_candidates(version):
        if not exe.exists():
            continue
        try:
            out = subprocess.run([str(exe), "-c", "import sys, venv; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode == 0 and out.stdout.strip() == version:
            found = exe
            break
    _python_cache[version] = found
    return found

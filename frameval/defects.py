"""The framework defects frameval works around, each with a runnable reproduction.

`defects/<framework>/<id>.py` is the smallest standalone script that shows one
defect in that framework's environment: it prints its numbers, then a line
`defect present` or `defect fixed`, and exits 1 or 0 to match. A notebook (or
the framework's support module) that applies the workaround declares it with
`rec.workaround("<id>", ...)`, the same id.

`python3 run_all.py defects [--frameworks ...]` runs every script in its
framework's environment (`run_env` takes any environment, so other versions can
be added), prints present / fixed / could not run, and stores the table per
framework version under the user cache (`defects/<framework>-<version>.json`),
where the report reads it. A defect fixed in the pinned version makes its
workaround a candidate for removal, and the command says so.

Standard library only: it runs before the runner environment exists.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .files import atomic_write_json
from .paths import REPO, user_cache_dir
from . import frameworks
from .catalog import FRAMEWORKS

DEFECTS_DIR = REPO / "defects"
PRESENT, FIXED, NOT_RUN = "present", "fixed", "could not run"
TIMEOUT_S = 300
# Where a workaround is applied, by the code that applies it: a notebook or
# support module matching the pattern must declare the workaround there
# (tests/test_defects.py). Measurements (no workaround) are not listed. Each
# framework's patterns live in its record (frameworks/<fw>/__init__.py).
APPLIED = {(f.key, wid): f.defect(wid)["pattern"] for f in frameworks.records() for wid in f.workarounds
           if f.defect(wid).get("pattern")}


@dataclass(frozen=True)
class Defect:
    framework: str
    id: str
    path: Path

    @property
    def title(self) -> str:
        """The script's docstring's first line."""
        m = re.search(r'"""(.+?)\n', self.path.read_text(encoding="utf-8"))
        return m.group(1).strip() if m else self.id


def catalogue(frameworks=None) -> list:
    """Every reproduction under defects/, in framework order."""
    order = list(FRAMEWORKS)
    out = [Defect(p.parent.name, p.stem, p) for p in sorted(DEFECTS_DIR.glob("*/*.py"))]
    out = [d for d in out if frameworks is None or d.framework in frameworks]
    return sorted(out, key=lambda d: (order.index(d.framework) if d.framework in order else 99, d.id))


def support_file(framework: str) -> Path:
    return frameworks.folder(framework) / "support.py"


def workaround_sites(framework: str) -> dict:
    """{workaround id: [files that declare it]} in the framework's notebooks and support module."""
    files = sorted((REPO / "notebooks" / framework).glob("*.ipynb")) + [support_file(framework)]
    found: dict = {}
    for f in files:
        if f.is_file():
            for wid in re.findall(r"rec\.workaround\(\s*\\?[\"']([\w.-]+)", f.read_text(encoding="utf-8")):
                found.setdefault(wid, []).append(str(f.relative_to(REPO)))
    return found


# ------------------------------------------------------------------ running
def classify(returncode: int, output: str) -> str:
    """present / fixed only when the exit status and the printed verdict agree;
    anything else (an import error, a crash, a timeout) is "could not run"."""
    said = re.findall(r"^defect (present|fixed)\b", output, flags=re.M)
    if returncode == 1 and said[-1:] == [PRESENT]:
        return PRESENT
    if returncode == 0 and said[-1:] == [FIXED]:
        return FIXED
    return NOT_RUN


def run_one(defect: Defect, python, timeout: float = TIMEOUT_S) -> dict:
    """Run one reproduction with `python`, in a scratch folder, two threads."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2"))
    env.pop("PYTHONPATH", None)  # standalone: nothing of frameval's
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="frameval-defect-") as tmp:
        try:
            p = subprocess.run([str(python), str(defect.path)], cwd=tmp, env=env, capture_output=True, text=True,
                               timeout=timeout, stdin=subprocess.DEVNULL)
            code, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            code, out = None, (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            err = f"timed out after {timeout:g} s"
        except OSError as e:
            code, out, err = None, "", f"{type(e).__name__}: {e}"
    status = classify(code, out) if code is not None else NOT_RUN
    version = next(iter(re.findall(r"^version:\s*(\S+)", out, flags=re.M)), None)
    said = [ln for ln in out.splitlines() if ln.startswith("no verdict")]  # the script's own reason
    why = "" if status != NOT_RUN else (said or err.strip().splitlines() or [f"exit {code}"])[-1][:300]
    return {"framework": defect.framework, "id": defect.id, "title": defect.title, "status": status, "exit": code,
            "seconds": round(time.perf_counter() - t0, 1), "version": version, "why": why,
            "output": out.strip()[-1500:], "script": str(defect.path.relative_to(REPO))}


def run_env(framework: str, env, defects=None, label: str = "", echo=print) -> dict:
    """Every reproduction of `framework` in one environment (an envs.Env, or
    anything with `.python`): {"framework", "version", "label", "results", ...}."""
    results = []
    for d in defects if defects is not None else catalogue([framework]):
        r = run_one(d, env.python)
        echo(f"  {framework}/{d.id}: {r['status']} ({r['seconds']:.0f} s)" + (f": {r['why']}" if r["why"] else ""))
        results.append(r)
    versions = sorted({r["version"] for r in results if r["version"]})
    key = getattr(getattr(env, "spec", None), "key", None)
    return {"framework": framework, "version": versions[0] if versions else None, "label": label or "pinned",
            "env_key": key, "python": str(env.python), "ran": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "results": results}


# ------------------------------------------------------------------ the stored tables
def status_dir() -> Path:
    return user_cache_dir() / "defects"


def store(table: dict, root=None) -> Path:
    root = Path(root or status_dir())
    root.mkdir(parents=True, exist_ok=True)
    name = f"{table['framework']}-{re.sub(r'[^A-Za-z0-9._+-]', '_', str(table.get('version') or 'unknown'))}.json"
    return atomic_write_json(root / name, table)


def load_tables(root=None) -> list:
    """Every stored table (one per framework version that ran), newest last."""
    out = []
    for f in sorted(Path(root or status_dir()).glob("*.json")):
        try:
            t = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(t, dict) and isinstance(t.get("results"), list):
            out.append(t)
    return sorted(out, key=lambda t: str(t.get("ran") or ""))


def removal_candidates(table: dict) -> list:
    """Workarounds whose defect is fixed in this (pinned) version: lines to print."""
    if table.get("label") != "pinned":
        return []
    sites = workaround_sites(table["framework"])
    return [f"{table['framework']} {table.get('version')}: {r['id']} is fixed; its workaround "
            f"({', '.join(sites[r['id']])}) is a candidate for removal"
            for r in table["results"] if r["status"] == FIXED and r["id"] in sites]


def format_table(tables) -> str:
    rows = [("framework", "version", "defect", "status", "s")]
    for t in tables:
        for r in t["results"]:
            rows.append((t["framework"], str(t.get("version") or "?"), r["id"],
                         r["status"] + (f" ({r['why']})" if r["why"] else ""), f"{r['seconds']:.0f}"))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row[:4], widths)) + "  " + row[4] for row in rows)

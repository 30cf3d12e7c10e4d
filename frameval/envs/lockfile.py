"""Each environment spec's lock (issue #41): the spec's requirements resolved by
uv for linux x86_64 to exact versions with every file's SHA-256, committed
beside the spec (`envs/torch.yml` -> `envs/torch.lock.txt`, `environment.yml`
-> `environment.lock.txt`). The spec stays the human-readable source; the lock
is what environments are built from, hash-checked (backends.py), and what
bundles fetch (frameval/bundle/). `run_all.py lock [FW ...]` writes them.

The index policy (docs/reproduce.md): a lock is resolved against the package
index (the user's index-url, else PyPI) and the spec's own extra indexes, not
against this machine's local mirrors, so its hashes are the index's. A package
that no index serves (the CPU build of torch from a local find-links folder)
is locked with the version, the source and the hash seen here, and the lock
says that the hash cannot be checked elsewhere. Where a spec cannot be
resolved from here (Paddle's own GPU index is unreachable), the lock file says
so and why ("not made"), and its environment is built from the spec, unlocked,
saying so: a lock that was not made is never claimed.

A lock's first line of JSON (`# frameval-lock: {...}`) names the spec's key
(specfile.py), so a spec edited without locking again is seen: its lock is
stale and is not used (a fast test fails on it). Standard library only.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ..paths import REPO
from .index import DEFAULT_INDEX, file_version
from .installers import EnvBuildError, failure_line, installer_name, run_logged, uv_executable
from .pipconf import pip_settings, uv_options
from .specfile import EnvSpec

FORMAT = 1
SUFFIX = ".lock.txt"
PLATFORM = "x86_64-manylinux_2_28"  # uv's --python-platform: what the locks are resolved for
HEADER = "# frameval-lock: "
MADE, NOT_MADE = "made", "not made"


def lock_path(spec_path) -> Path:
    p = Path(spec_path)
    return p.with_name(p.name.rsplit(".", 1)[0] + SUFFIX)


def shown(path: Path) -> str:
    """A path as the clone names it (envs/torch.lock.txt), else as it is."""
    try:
        return Path(path).resolve().relative_to(REPO).as_posix()
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class Lock:
    path: Path
    meta: dict
    body: str  # the requirement lines with their hashes, comments left out

    @property
    def state(self) -> str:
        return self.meta.get("state", "")

    @property
    def spec_key(self) -> str:
        return self.meta.get("spec_key", "")

    @property
    def digest(self) -> str:
        """What the environment's cache key adds: the requirements and hashes, not the comments or date."""
        return hashlib.sha256(self.body.encode()).hexdigest()

    @property
    def pins(self) -> dict:
        """{package: version} as the lock pins them."""
        found = (re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==([^\s;\\]+)", ln)
                 for ln in self.body.splitlines())
        return {m.group(1): m.group(3) for m in found if m}


def body_of(text: str) -> str:
    lines = [ln.rstrip() for ln in text.splitlines()]
    return "\n".join(ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#"))


def read_lock(path) -> Lock | None:
    """The lock file at `path`, or None where there is none or it is not a frameval lock."""
    try:
        text = Path(path).read_text()
    except OSError:
        return None
    line = next((ln for ln in text.splitlines() if ln.startswith(HEADER)), "")
    try:
        meta = json.loads(line[len(HEADER):])
    except ValueError:
        return None
    return Lock(Path(path), meta, body_of(text)) if isinstance(meta, dict) else None


def applies_here() -> bool:
    """The locks are resolved for linux x86_64: elsewhere environments build from the spec."""
    return sys.platform.startswith("linux") and platform.machine().lower() in ("x86_64", "amd64")


def status(spec: EnvSpec) -> tuple:
    """(the Lock to build `spec` from, or None; "" or one line saying why it builds unlocked)."""
    lock, why, _ = _status(spec)
    return lock, why


def _status(spec: EnvSpec) -> tuple:
    """status(), and the reason in one word: "", none, pinned, stale, not made, platform."""
    path = lock_path(spec.path)
    lock = read_lock(path)
    again = f"`python3 run_all.py lock {lock_label(spec)}`"
    if lock is None:
        return None, f"no lock ({shown(path)}): built from the spec, unlocked; {again} makes one", "none"
    if lock.spec_key != spec.key:
        if spec.text.startswith("# frameval:"):  # a pinned version (spec.py's pinned_spec)
            return None, f"a pinned version is not the spec {shown(path)} locks: built from its spec, unlocked", "pinned"
        return None, (f"{shown(path)} is stale ({spec.path.name} changed since it was made): built from the spec, "
                      f"unlocked; {again} makes it again"), "stale"
    if lock.state != MADE:
        return None, (f"{shown(path)}: no lock could be made ({lock.meta.get('why', '?')}): built from the spec, "
                      "unlocked"), NOT_MADE
    if not applies_here():
        return None, f"{shown(path)} is for linux x86_64, not this machine: built from the spec, unlocked", "platform"
    return lock, "", ""


def build_key(spec: EnvSpec) -> str:
    """The environment's cache key: the spec's, and the lock's where it is built from one."""
    lock, _ = status(spec)
    return f"{spec.key}-{lock.digest[:8]}" if lock else spec.key


def lock_digest(spec: EnvSpec) -> str:
    """The digest of the lock `spec` builds from here ("" where it builds unlocked)."""
    lock, _ = status(spec)
    return lock.digest if lock else ""


def record(spec: EnvSpec) -> dict:
    """What an environment's marker says about its lock (the report's provenance reads it)."""
    lock, why, reason = _status(spec)
    if lock is None:
        return {"state": "unlocked", "why": why, "reason": reason}
    return {"state": "locked", "file": shown(lock.path), "sha256": lock.digest,
            "local": lock.meta.get("local", [])}


def lock_label(spec: EnvSpec) -> str:
    """The name `run_all.py lock` takes for a spec: runner, torch, torch-gpu."""
    name = spec.name[len("frameval-"):] if spec.name.startswith("frameval-") else spec.name
    return name


# ----------------------------------------------------------------- making one
def _gpu(spec: EnvSpec) -> bool:
    return spec.name.endswith("-gpu")


def resolve_options(spec: EnvSpec) -> tuple:
    """uv's index arguments for a lock: the index (the user's, else PyPI) and the
    spec's own extra indexes (in its lines), not this machine's extra mirrors, so
    that the hashes are the index's. The user's find-links folders count for CPU
    specs only: on this kind of machine they hold CPU builds (torch+cpu), which a
    GPU lock must not take."""
    s = dict(pip_settings())
    s.pop("extra-index-url", None)
    s["index-url"] = (s.get("index-url", "").split() or [DEFAULT_INDEX])[0]
    if _gpu(spec):
        s.pop("find-links", None)
    return uv_options(s)


def unreachable(spec: EnvSpec, timeout: float = 10) -> str:
    """The first extra index the spec names that cannot be reached from here ("" if none):
    said at once, rather than after uv's retries."""
    for line in spec.pip:
        m = re.match(r"\s*--extra-index-url[\s=]+(\S+)", line)
        if not m:
            continue
        try:
            urllib.request.urlopen(urllib.request.Request(m.group(1), method="HEAD"), timeout=timeout).close()
        except urllib.error.HTTPError:
            continue  # it answered
        except (OSError, ValueError) as e:
            return f"{m.group(1)} cannot be reached from here ({getattr(e, 'reason', None) or e})"
    return ""


def compile_lock(spec: EnvSpec, log) -> str:
    """uv's resolution of the spec's lines for linux x86_64, with hashes and each package's index."""
    uv = uv_executable(None)
    if not uv:
        raise EnvBuildError("uv is needed to make a lock (it could not be found or installed)")
    args, env = resolve_options(spec)
    with tempfile.TemporaryDirectory(prefix="frameval-lock-") as d:
        req, out = Path(d) / "requirements.in", Path(d) / "lock.txt"
        req.write_text("\n".join(spec.pip) + "\n")
        # uv keeps the versions already in an output file where the spec still allows them:
        # adding one package to a spec locks that package, not a newer everything
        old = read_lock(lock_path(spec.path))
        if old is not None and old.meta.get("state") == MADE and old.body.strip():
            out.write_text(old.body)
        run_logged([uv, "pip", "compile", "--generate-hashes", "--emit-index-annotation", "--no-header",
                    "--python-version", spec.python, "--python-platform", PLATFORM, *args, "--quiet",
                    req, "-o", out], log, env=dict(os.environ, **env), what="uv pip compile")
        return out.read_text()


def local_sources(compiled: str, spec: EnvSpec) -> list:
    """The locked packages no index serves: each from a find-links folder, with the hashes seen here."""
    s = pip_settings()
    folders = [] if _gpu(spec) else [Path(f) for f in s.get("find-links", "").split() if Path(f).is_dir()]
    out = []
    for block in re.split(r"\n(?=[A-Za-z0-9])", compiled):
        m = re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", block)
        if not m:
            continue
        name, version = m.groups()
        here = [f for d in folders for f in d.iterdir() if (fv := file_version(f.name, name)) and fv[0] == version]
        if here:
            out.append({"package": name, "version": version, "source": f"find-links {here[0].parent}",
                        "sha256": re.findall(r"--hash=sha256:([0-9a-f]{64})", block),
                        "checkable": "no: no public index serves this file; its hash is the one seen on the "
                                     "machine that made the lock"})
    return out


def lock_text(spec: EnvSpec, meta: dict, compiled: str = "") -> str:
    """The lock file: what it is in words, its JSON line, then uv's requirements (or nothing)."""
    head = [f"# The lock of {shown(spec.path)} for linux x86_64 ({PLATFORM}), Python {spec.python}.",
            f"# Made by `python3 run_all.py lock {lock_label(spec)}`; edit the spec, never this file, then lock again."]
    if meta["state"] == MADE:
        head.append("# Environments are built from it, every file checked against its SHA-256 (--require-hashes).")
        for loc in meta.get("local", []):
            head.append(f"# {loc['package']}=={loc['version']} comes from {loc['source']} on the machine that made "
                        "the lock, not from an index: its hash is that file's and cannot be checked against any "
                        "public index.")
    else:
        head.append(f"# No lock could be made from here: {meta.get('why', '?')}. Environments from this spec are "
                    "built from the spec itself, unlocked, and say so.")
    # the spec's own index lines stay in the lock: an install from it asks the same indexes
    indexes = [ln for ln in spec.pip if ln.lstrip().startswith("--")] if compiled else []
    return "\n".join(head + [HEADER + json.dumps(meta, sort_keys=True), *indexes, compiled.rstrip()]).rstrip() + "\n"


def make_lock(spec: EnvSpec, log) -> Lock:
    """Resolve `spec` and write its lock beside it (a "not made" lock with the reason where it cannot be)."""
    meta = {"format": FORMAT, "spec": spec.path.name, "spec_key": spec.key, "python": spec.python,
            "platform": PLATFORM, "made": time.strftime("%Y-%m-%d", time.gmtime())}
    why = unreachable(spec)
    compiled = ""
    if not why:
        try:
            compiled = compile_lock(spec, log)
        except EnvBuildError as e:
            log.flush()
            why = failure_line(Path(log.name)) or str(e)
    if why:
        meta.update(state=NOT_MADE, why=why)
    else:
        meta.update(state=MADE, uv=_uv_version(), local=local_sources(compiled, spec))
    path = lock_path(spec.path)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(lock_text(spec, meta, compiled))
    os.replace(tmp, path)
    return read_lock(path)


def _uv_version() -> str:
    return installer_name().replace("uv ", "")

"""Using a bundle on a machine with no network (`--offline BUNDLE`): every
install (uv, or pip where uv cannot be had, and the bootstrap of uv itself)
is told to take packages from the bundle's wheels alone, and the bundle's
data caches are copied into the data cache.

The bundle is named by FRAMEVAL_OFFLINE_BUNDLE, set once by `activate`: the
installers sit below the configuration (the runner's own environment is
built before any configuration exists) and the re-executed runner inherits
it. Standard library only.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..files import atomic_copy
from ..paths import data_cache_dir
from .manifest import WHEELS, read

VAR = "FRAMEVAL_OFFLINE_BUNDLE"


def activate(bundle) -> None:
    os.environ[VAR] = str(Path(bundle).expanduser().resolve())


def active() -> Path | None:
    value = os.environ.get(VAR, "").strip()
    return Path(value) if value else None


def uv_args() -> list:
    """uv's arguments for an install from the bundle alone: no index, no network."""
    bundle = active()
    return ["--offline", "--no-index", "--find-links", str(bundle / WHEELS)] if bundle else []


def lock_file(path) -> tuple:
    """(the lock to install from, whether it is a temporary copy). With a bundle:
    a copy of the lock in which each pin the bundle built from its sdist (no wheel
    on the index: the lock holds the sdist's hash) also takes the built wheel's
    hash, which the manifest holds and `--offline` checked; every other file is
    checked against the lock's hashes alone."""
    bundle = active()
    if not bundle:
        return path, False
    manifest = read(bundle)
    extra = {}
    for entry in manifest.get("environments", {}).values():
        for pin, wheel in (entry.get("built_from_sdist") or {}).items():
            sha = manifest.get("files", {}).get(f"{WHEELS}/{wheel}", {}).get("sha256")
            if sha:
                extra[pin.lower()] = sha
    if not extra:
        return path, False
    lines = []
    for line in Path(path).read_text().splitlines():
        lines.append(line)
        pin = line.split(" ")[0].lower()
        if pin in extra and line.endswith("\\"):
            lines.append(f"    --hash=sha256:{extra[pin]} \\")
    with tempfile.NamedTemporaryFile("w", suffix=".lock.txt", delete=False) as f:
        f.write("\n".join(lines) + "\n")
    return f.name, True


def pip_args() -> list:
    bundle = active()
    return ["--no-index", "--find-links", str(bundle / WHEELS)] if bundle else []


def install_data(bundle=None, cache_dir=None, echo=print) -> list:
    """Copy the bundle's data caches (each `.npz` with its `.json`) into the data
    cache where they are not there yet; returns the names copied. The manifest's
    hashes were checked before anything ran."""
    bundle = Path(bundle or active())
    cache = Path(cache_dir or data_cache_dir())
    cache.mkdir(parents=True, exist_ok=True)
    copied = []
    for rel in read(bundle).get("data", []):
        dst = cache / Path(rel).name
        if not dst.exists():
            atomic_copy(bundle / rel, dst)
            copied.append(dst.name)
    if copied:
        echo(f"frameval: data caches from the bundle: {', '.join(copied)}")
    return copied

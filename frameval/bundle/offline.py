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

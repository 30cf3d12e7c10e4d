"""A bundle's manifest (`manifest.json`): the target it was made for (Python
per environment, platform), each environment (its spec's hash, its pinned
requirements, its wheels) and every file's SHA-256 and size.

`check_bundle` is what `--offline BUNDLE` checks before anything runs: the
manifest, the target, every needed environment present for the spec this
clone has, and every file's hash. Standard library only: it runs before the
runner environment exists.
"""
from __future__ import annotations

import os
import platform
import re
from pathlib import Path

from ..files import read_json, sha256_file

NAME = "manifest.json"
FORMAT = 1
WHEELS = "wheels"
DATA = "data"


class BundleError(ValueError):
    """A bundle that cannot be used; the message is one line naming it."""


def file_entries(root: Path, rels) -> dict:
    """{relative path: {sha256, bytes}} of the files a manifest lists."""
    return {r: {"sha256": sha256_file(root / r), "bytes": (root / r).stat().st_size} for r in sorted(rels)}


def machine_platform() -> str:
    """This machine's wheel platform, as pip's --platform takes it: manylinux_2_36_x86_64
    from glibc's version, else the interpreter's own (macosx, win)."""
    machine = platform.machine().lower()
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError, AttributeError):
        libc = ""
    m = re.match(r"glibc (\d+)\.(\d+)", libc)
    if m:
        return f"manylinux_{m.group(1)}_{m.group(2)}_{machine}"
    import sysconfig
    return re.sub(r"[-.]", "_", sysconfig.get_platform())


def platform_fits(bundle_platform: str, here: str | None = None) -> bool:
    """Whether wheels for `bundle_platform` install here: same architecture and,
    for manylinux, a glibc at least as new as the bundle's."""
    here = here or machine_platform()
    pat = r"manylinux_(\d+)_(\d+)_(\w+)"
    a, b = re.fullmatch(pat, bundle_platform), re.fullmatch(pat, here)
    if a and b:
        return a.group(3) == b.group(3) and (int(a.group(1)), int(a.group(2))) <= (int(b.group(1)), int(b.group(2)))
    return bundle_platform == here


def read(bundle: Path) -> dict:
    path = Path(bundle) / NAME
    try:
        data = read_json(path)
    except FileNotFoundError:
        raise BundleError(f"--offline {bundle}: no {NAME} there (not a bundle made by `run_all.py bundle`)") from None
    except (OSError, ValueError) as e:
        raise BundleError(f"--offline {bundle}: {NAME} cannot be read ({e})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BundleError(f"--offline {bundle}: {NAME} is not a frameval bundle manifest of format {FORMAT}")
    return data


def find_env(manifest: dict, spec) -> dict:
    """The manifest's entry for `spec`, found by the spec's hash ({} where there is none)."""
    return next((e for e in manifest.get("environments", {}).values() if e.get("spec_key") == spec.key), {})


def check_env(bundle: Path, manifest: dict, label: str, spec, lock: str = "") -> None:
    """The environment `label` (its spec) is in the bundle, for the Python it will be built with,
    and from the lock it will be built from (`lock`: its digest, "" where it builds unlocked)."""
    entry = find_env(manifest, spec)
    if not entry:
        held = manifest.get("environments", {})
        why = (f"was made for another {spec.path.name} (the spec changed since)" if label in held
               else f"has no environment {label} (it holds: {', '.join(held) or 'none'})")
        again = "" if label == "runner" else f" --frameworks {label.replace('@', '==')}"
        raise BundleError(f"--offline {bundle}: the bundle {why}; make it again with "
                          f"`run_all.py bundle OUT{again}`")
    if entry.get("python") != spec.python and not entry.get("trimmed"):  # trimmed: on the user's Python
        raise BundleError(f"--offline {bundle}: the bundle was made for Python {entry.get('python')}, but "
                          f"{spec.path.name} builds {label} with Python {spec.python}; make it with "
                          f"--python-version {spec.python}")
    if lock and entry.get("lock") != lock:  # the build installs the lock, hash-checked: the bundle must hold it
        again = "" if label == "runner" else f" --frameworks {label.replace('@', '==')}"
        raise BundleError(f"--offline {bundle}: the bundle was made from another lock of {spec.path.name} than "
                          f"this clone's; make it again with `run_all.py bundle OUT{again}`")


def check_files(bundle: Path, manifest: dict) -> None:
    """Every file the manifest lists is there with its hash (a missing wheel or a flipped byte is refused)."""
    for rel, info in manifest.get("files", {}).items():
        path = Path(bundle) / rel
        if not path.is_file():
            raise BundleError(f"--offline {bundle}: {rel} is missing from the bundle (the manifest lists it)")
        if path.stat().st_size != info.get("bytes") or sha256_file(path) != info.get("sha256"):
            raise BundleError(f"--offline {bundle}: {rel} does not match its SHA-256 in {NAME} "
                              "(damaged or changed): copy the bundle again")


def check_bundle(bundle, needed) -> dict:
    """The checks of `--offline BUNDLE` before anything runs, for `needed`
    [(label, EnvSpec[, the digest of the lock it builds from])]; returns the manifest, or raises a one-line BundleError."""
    bundle = Path(bundle).expanduser()
    if not bundle.is_dir():
        raise BundleError(f"--offline {bundle}: no such folder")
    manifest = read(bundle)
    plat = manifest.get("platform", "")
    if not platform_fits(plat):
        raise BundleError(f"--offline {bundle}: the bundle was made for the platform {plat}, and this machine is "
                          f"{machine_platform()}; make it with --platform {machine_platform()}")
    for label, spec, *lock in needed:
        check_env(bundle, manifest, label, spec, *lock)
    check_files(bundle, manifest)
    return manifest

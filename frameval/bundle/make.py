"""`run_all.py bundle OUT`'s work, in the runner environment: each
environment's pins and wheels for the target, the data caches, and the
manifest (written last, so a bundle cut short has none and is refused).
Prints the size per environment; `dry_run` prints the sizes from the index's
metadata without downloading anything.
"""
from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from pathlib import Path

from ..envs import lockfile
from ..envs.index import file_version
from ..envs.installers import EnvBuildError
from ..files import atomic_write_json
from . import manifest as mf
from . import wheels as wh

CUDA_NOTE = ("the CUDA builds are large (PyPI's GPU wheels carry CUDA's libraries): "
             "--frameworks keeps a GPU bundle to the frameworks you need")


def mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def env_entry(label, spec, python, plat, out: Path, log, dry_run: bool, echo, trimmed=None) -> dict:
    """One environment: its pins resolved for the target (or, `trimmed`, those a target
    interpreter lacks: trim.py), and its files fetched (or only sized)."""
    t0 = time.perf_counter()
    built: dict = {}
    lock = None if trimmed else locked_for(spec, python, plat)
    pins = (trimmed.pins if trimmed else [f"{n}=={v}" for n, v in lock.pins.items()] if lock
            else wh.compile_pins(list(spec.pip), python, plat, log))
    if dry_run:
        files = wh.sizes(pins, python, plat)
    else:
        got, built_pins = wh.download(pins, python, plat, out, log)
        names = wh.move_into(got, out / mf.WHEELS)
        shutil.rmtree(got[0].parent if got else out / "none", ignore_errors=True)
        files = [(n, (out / mf.WHEELS / n).stat().st_size) for n in names]
        built = {pin: next((n for n in names if _is_wheel_of(n, pin)), "") for pin in built_pins}
    total = sum(b for _, b in files)
    big = ", ".join(f"{n.split('-')[0]} {mb(b)}" for n, b in sorted(files, key=lambda x: -x[1])[:3])
    echo(f"frameval: bundle: {label} (Python {python}): {len(files)} files, {mb(total)} "
         f"(largest: {big}) in {time.perf_counter() - t0:.0f} s")
    rels = [(f"{mf.WHEELS}/{n}", b) for n, b in files]
    # a wheel built here from a pin's sdist is not the file whose hash the lock holds: named, so that
    # --offline adds its hash (the manifest's) for that pin alone (offline.py)
    entry = {"spec": spec.path.name, "spec_key": spec.key, "python": python, "requirements": pins,
             "lock": lock.digest if lock else "", "built_from_sdist": built,
             "wheels": [r for r, _ in rels], "bytes": total}
    if trimmed:  # --offline installs these into a venv on the target interpreter (runner_venv.py)
        entry.update(lock=lockfile.lock_digest(spec), trimmed=True,
                     reused={n: have for n, have, _ in trimmed.reused}, left_out=dict(trimmed.left_out))
    return entry, rels


def trim_for(spec, target: dict, echo):
    """What the target interpreter lacks of the runner's lock, printed: packed, reused and left out, and why."""
    from . import trim as tr
    lock, _ = lockfile.status(spec)
    if not lock:
        raise EnvBuildError(f"a trimmed bundle needs the runner's lock ({spec.path.name}'s); make it with "
                            "`run_all.py lock runner`")
    t = tr.trim(lock.path.read_text(), spec.pip, tr.parse_freeze(target["freeze"]))
    p = "frameval: bundle:"
    echo(f"{p} target: Python {target['python']} on {target['platform']} ({target['source']}, "
         f"{target['packages']} packages): a run needs {len(t.packed) + len(t.reused)} of the lock's "
         f"{len(lock.pins)} packages; {len(t.reused)} reused from the target, {len(t.packed)} packed")
    echo(f"{p}   packed: " + ", ".join(f"{n} {v}" + ("" if why == "not in the target" else f" ({why})")
                                       for n, v, why in t.packed) + " (not in the target, unless said)")
    echo(f"{p}   reused (the target has them): " + ", ".join(
        f"{n} {have}" + ("" if have == v else f" (lock {v})") for n, have, v in t.reused))
    echo(f"{p}   left out (a run does not use them): " + "; ".join(f"{n}: {why}" for n, why in t.left_out))
    return t


def _is_wheel_of(filename: str, pin: str) -> bool:
    name, _, version = pin.partition("==")
    fv = file_version(filename, name)
    return bool(fv) and fv[0] == version


def locked_for(spec, python: str, plat: str):
    """The spec's lock where the bundle's target is the lock's (its Python, linux x86_64): the
    bundle then holds the lock's versions, which `--offline` installs hash-checked. Else None:
    the pins are resolved for the target here, and the environment builds from them unlocked."""
    lock, _ = lockfile.status(spec)
    return lock if lock and python == spec.python and plat.endswith("_x86_64") and "linux" in plat else None


def add_data(out: Path, full: bool, echo) -> list:
    """The data caches (prepared in the user's cache, as a run would) copied into the bundle."""
    from ..data import prepare_all
    paths = prepare_all(full=full, echo=echo)
    rels = []
    (out / mf.DATA).mkdir(parents=True, exist_ok=True)
    for p in paths.values():
        for f in (Path(p), Path(p).with_suffix(".json")):  # the .npz first: its .json marks it ready
            shutil.copyfile(f, out / mf.DATA / f.name)
            rels.append(f"{mf.DATA}/{f.name}")
    return rels


def make(out, targets, python_version: str, plat: str, device: str, full: bool = False,
         dry_run: bool = False, echo=print, target: dict | None = None) -> dict:
    """Write the bundle into `out` for `targets` [(label, EnvSpec)]; returns the manifest.
    `target` (bundle --target-python/--target-freeze: its python, platform, freeze, source): the
    runner's wheels only for what that interpreter lacks."""
    out = Path(out)
    envs, unique = {}, {}
    with contextlib.ExitStack() as held:
        # a dry run writes nothing: its log lives in a folder removed when it is done
        logs = Path(held.enter_context(tempfile.TemporaryDirectory(prefix="frameval-bundle-"))) if dry_run else out
        logs.mkdir(parents=True, exist_ok=True)
        log = held.enter_context(open(logs / "bundle.log", "a"))
        for label, spec in targets:
            trimmed = trim_for(spec, target, echo) if target and label == "runner" else None
            envs[label], rels = env_entry(label, spec, python_version or spec.python, plat, out, log, dry_run, echo,
                                          trimmed)
            unique.update(rels)
    total = sum(unique.values())
    if device == "gpu":
        echo(f"frameval: bundle: {CUDA_NOTE}")
        cpu = sorted({w.split("/")[-1] for w in unique if "+cpu" in w})
        if cpu:  # a find-links folder of CPU builds wins for an exact pin such as torch==2.13.0
            echo(f"frameval: bundle: warning: CPU builds in a GPU bundle: {', '.join(cpu)} (your pip settings' "
                 "find-links or index serve them; docs/offline.md)")
    if dry_run:
        echo(f"frameval: bundle --dry-run: {len(unique)} files, {mb(total)} for {', '.join(envs)} "
             f"(sizes from the index; the data caches add a few MB)")
        return {"environments": envs}
    data = add_data(out, full, echo)
    manifest = {"format": mf.FORMAT, "platform": plat, "device": device, "made": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                time.gmtime()), "environments": envs, "data": data,
                "target": {k: v for k, v in (target or {}).items() if k != "freeze"},
                "files": mf.file_entries(out, list(unique) + data)}
    atomic_write_json(out / mf.NAME, manifest)
    size = sum(f["bytes"] for f in manifest["files"].values())
    echo(f"frameval: bundle: {out}: {len(manifest['files'])} files, {mb(size)} in all "
         f"(wheels shared by several environments counted once); on a machine with no network: "
         f"python3 run_all.py --offline {out} ...")
    return manifest


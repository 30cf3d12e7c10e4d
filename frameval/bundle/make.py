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
from ..files import atomic_write_json
from . import manifest as mf
from . import wheels as wh

CUDA_NOTE = ("the CUDA builds are large (PyPI's GPU wheels carry CUDA's libraries): "
             "--frameworks keeps a GPU bundle to the frameworks you need")


def mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def env_entry(label, spec, python, plat, out: Path, log, dry_run: bool, echo) -> dict:
    """One environment: its pins resolved for the target, and its files fetched (or only sized)."""
    t0 = time.perf_counter()
    built: dict = {}
    lock = locked_for(spec, python, plat)
    pins = ([f"{n}=={v}" for n, v in lock.pins.items()] if lock
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
    return {"spec": spec.path.name, "spec_key": spec.key, "python": python, "requirements": pins,
            "lock": lock.digest if lock else "", "built_from_sdist": built,
            "wheels": [r for r, _ in rels], "bytes": total}, rels


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
         dry_run: bool = False, echo=print) -> dict:
    """Write the bundle into `out` for `targets` [(label, EnvSpec)]; returns the manifest."""
    out = Path(out)
    envs, unique = {}, {}
    with contextlib.ExitStack() as held:
        # a dry run writes nothing: its log lives in a folder removed when it is done
        logs = Path(held.enter_context(tempfile.TemporaryDirectory(prefix="frameval-bundle-"))) if dry_run else out
        logs.mkdir(parents=True, exist_ok=True)
        log = held.enter_context(open(logs / "bundle.log", "a"))
        for label, spec in targets:
            envs[label], rels = env_entry(label, spec, python_version or spec.python, plat, out, log, dry_run, echo)
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
                "files": mf.file_entries(out, list(unique) + data)}
    atomic_write_json(out / mf.NAME, manifest)
    size = sum(f["bytes"] for f in manifest["files"].values())
    echo(f"frameval: bundle: {out}: {len(manifest['files'])} files, {mb(size)} in all "
         f"(wheels shared by several environments counted once); on a machine with no network: "
         f"python3 run_all.py --offline {out} ...")
    return manifest


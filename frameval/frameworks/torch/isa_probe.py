"""Inductor's vector-ISA probe, built once with the environment (issue #50).

Before its first C++ kernel on the CPU, inductor builds a 459-byte test
program for each vector ISA the CPU offers (AVX2; AVX-512 too where there is
one) and loads it in a child process: 2.4-2.7 s of g++ in each torch run's
check on a 2-core EPYC, read by the report as that model's compile. Inductor
keeps the built programs in its cache folder, so a user pays this once per
machine, not once per model; each run here starts with an empty cache
(TORCHINDUCTOR_CACHE_DIR in the run's folder: every model's compile is cold).

So the environment's build runs the probe once (`build`, a warm entry of
torch's record) into a folder of its own, and a run copies those programs into
its cache before its first compile (`plant`). Only the probe's programs travel:
the graphs, the FX and AOTAutograd caches stay cold. Inductor still decides the
ISA in the run and still loads each program on the run's machine; the program's
cache key holds the ISA's compiler flags, so on another CPU (a Slurm node) the
key differs and the run builds its own.

Standard library at import; torch only inside `build`.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

# Beside the environment's site-packages: part of the environment, gone with it.
FOLDER = "frameval-inductor-isa"


def folder() -> Path:
    return Path(sys.prefix) / FOLDER


def build() -> None:
    """Run inductor's ISA probe with its cache in `folder()` (at build time). The
    variable is the process's: the warm imports that go on meanwhile (`start`)
    write nothing into inductor's cache."""
    before = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(folder())
    try:
        from torch._inductor import cpu_vec_isa
        isa = cpu_vec_isa.pick_vec_isa()
    finally:
        if before is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = before
    built = sum(f.suffix == ".so" for f in programs(folder()))
    print(f"inductor's ISA probe: {isa or 'no vector ISA'}; {built} program(s) in {folder()}", flush=True)


def start() -> None:
    """`build` beside the build's other warm imports (the warm entry): its g++
    runs on a core of its own while they go on (on 2 cores torch's environment
    builds last, alone on one core; run in line, the probe made that 2.7 s
    longer). The modules it needs are imported first, here, so the thread
    imports nothing while the warm imports do; a non-daemon thread, so the
    warm process waits for it."""
    import threading
    from torch._inductor import codecache, cpp_builder, cpu_vec_isa  # noqa: F401
    threading.Thread(target=build, name="inductor-isa-probe").start()


def programs(where: Path) -> list:
    """The probe's programs in `where`: each built library with its source."""
    return sorted(f for so in Path(where).rglob("*.so") for f in (so, so.with_suffix(".cpp")) if f.is_file())


def plant(cache_dir: str | os.PathLike | None) -> list:
    """Copy the environment's probe programs into `cache_dir` (inductor's cache
    for this run) where they are not there yet; -> the files copied."""
    src = folder()
    if not cache_dir or not src.is_dir():
        return []  # an environment built before this, or one the user provided: inductor builds them
    copied = []
    for f in programs(src):
        rel = f.relative_to(src)
        dest = Path(cache_dir) / rel
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dest)  # its time kept: the test tells the copy from a build
            copied.append(str(rel))
    return copied

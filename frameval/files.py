"""The names of the files frameval writes into an output folder, and the one
way every writer puts a file there: atomically (a reader sees the old file or
the new one, never half of one).

Standard library only: the runner uses it before its own environment exists,
and `frameval.nb` imports it inside the framework environments (numpy + stdlib).

An output folder:
    <out>/plan.json                       what was asked (PLAN)
    <out>/provenance.json                 what it was made from: commit, command, locks, freezes, data, machine (PROVENANCE)
    <out>/environments/<fw>.json          where each framework's environment came from (ENVIRONMENTS)
    <out>/runs/<fw>/<workload>-<mode>[-gpu][@<swept values>]/
        result.json                       the run's record (RESULT)
        result.partial.json               rewritten after every epoch while it runs (PARTIAL)
        result.replaced.json              a hand run replaced by one with the same parameters; not read (REPLACED)
        output.ipynb                      the executed notebook (OUTPUT_NB)
        papermill.log                     papermill's log of the run (PAPERMILL_LOG)
        work/                             the run's working folder: framework caches, compile dumps, saved models (WORK)
        work/checkpoint/                  -p resume_check: the state after epoch k and the rest of the run (CHECKPOINT)
        work/resumed/                     -p resume_check: the second kernel that resumed from it (RESUMED)
        grids/epoch_NNN.png               the DCGAN's image grid after each epoch (GRIDS)
"""
from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

RESULT = "result.json"
PARTIAL = "result.partial.json"
REPLACED = "result.replaced.json"
OUTPUT_NB = "output.ipynb"
REPLACED_NB = "output.replaced.ipynb"
PAPERMILL_LOG = "papermill.log"
WORK = "work"  # the run's working folder (framework caches, compile dumps), emptied before each execution
GRIDS = "grids"
CHECKPOINT = "checkpoint"  # under WORK: what a -p resume_check run saved after epoch k (frameval/nb/resume.py)
INDUCTOR_CACHE = "torchinductor"  # under WORK: torch inductor's compile cache (a resumed kernel reuses its run's)
RESUMED = "resumed"  # under WORK: the output folder of the kernel that resumed from CHECKPOINT
PLAN = "plan.json"
PROVENANCE = "provenance.json"  # what the report was made from (frameval/provenance.py)
RUNS = "runs"  # <out>/runs/<fw>/<run folder>/
ENVIRONMENTS = "environments"
OUT_LOCK = ".frameval.lock"


# Between the name=value pairs of a run folder's "@" suffix. Never a comma:
# PaddlePaddle's dy2static reads its own call stacks back by splitting the line
# on ",", so a comma anywhere in the path of the run's working folder (where its
# caches live) fails every graph-mode run with "invalid literal for int()".
TAG_SEP = "+"


def params_tag(values: dict) -> str:
    """{"threads": 1, "batch_size": 16} -> "batch_size=16+threads=1" (floats by repr)."""
    return TAG_SEP.join(f"{k}={values[k]!r}" if isinstance(values[k], float) else f"{k}={values[k]}"
                        for k in sorted(values))


def run_folder(workload: str, mode: str, device: str = "cpu", tag: str = "") -> str:
    """A run's folder name under runs/<fw>/: <workload>-<mode>[-gpu], and
    "@<tag>" for a sweep's value (e.g. lenet-graph@batch_size=16+threads=1)."""
    return f"{workload}-{mode}" + ("-gpu" if device == "gpu" else "") + (f"@{tag}" if tag else "")


SEED_DIR = "seed-{}"  # a --seeds replicate's folder inside its run's, for every seed but the notebook's own


def run_dir(out, framework: str, workload: str, mode: str, device: str = "cpu", repeat: int = 1,
            tag: str = "", seed_dir: str = "") -> Path:
    """<out>/runs/<fw>/<workload>-<mode>[-gpu][@tag]/, then seed-<n>/ for a
    --seeds replicate other than the notebook's own seed, then r<k>/ for repeat k > 1."""
    d = Path(out) / RUNS / framework / run_folder(workload, mode, device, tag)
    d = d / seed_dir if seed_dir else d
    return d if repeat <= 1 else d / f"r{repeat}"


@contextlib.contextmanager
def replacing(path, keep_suffix: bool = False):
    """Yield a temporary path beside `path`; once the block has written it, it
    replaces `path` in one step. On an error the temporary file is removed and
    `path` is left as it was. The temporary name ends in `.tmp`, so that a
    reader's glob (`*/*/result.json`, `environments/*.json`) never picks up one
    left by a killed writer; `keep_suffix` keeps the suffix instead, for tools
    that append theirs (numpy's savez adds `.npz` to a name without it)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tail = f".tmp{path.suffix}" if keep_suffix else f"{path.suffix}.tmp"
    tmp = path.with_name(f".{path.stem}.{os.getpid()}{tail}")
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def sha256_file(path) -> str:
    """A file's SHA-256, read a megabyte at a time (a wheel can be gigabytes): the
    one file hash of provenance, bundle manifests and the lab's notebook copies."""
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def atomic_write(path, data, fsync: bool = False) -> Path:
    """Write text (utf-8) or bytes to `path` atomically. `fsync` also flushes it
    to disk first (results, which must survive a machine that goes down)."""
    with replacing(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
    return Path(path)


def jsonable(o):
    """JSON for what `json` cannot write: numpy scalars and arrays (by duck
    typing, so this module stays standard library only; a non-finite float
    becomes null), paths and anything else as text."""
    if hasattr(o, "tolist") and hasattr(o, "dtype"):
        v = o.tolist()
        finite = not isinstance(v, float) or v - v == 0  # inf - inf and nan - nan are nan
        return v if finite else None
    return str(o)


def atomic_write_json(path, obj, default=jsonable, fsync: bool = True, **dump_kw) -> Path:
    """`obj` as JSON (indent 1 unless told), written atomically."""
    dump_kw.setdefault("indent", 1)
    return atomic_write(path, json.dumps(obj, default=default, **dump_kw), fsync=fsync)


_RAISE = object()


def read_json(path, default=_RAISE):
    """The JSON file at `path` (utf-8): the one way frameval reads one back.
    With `default`, a file that is missing, unreadable or not JSON reads as it;
    without, the OSError or ValueError is raised for the caller to name."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        if default is _RAISE:
            raise
        return default


def atomic_copy(src, dst) -> Path:
    import shutil
    with replacing(dst) as tmp:
        shutil.copyfile(src, tmp)
    return Path(dst)


def tail(path, n: int = 25) -> str:
    """The last `n` lines of a text file (a log), or "" if it cannot be read."""
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""

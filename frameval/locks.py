"""The one file lock: two runners never build the same environment at once,
and one output folder has one runner at a time.

It is the `filelock` package's wherever that is importable (the runner
environment has it). A small standard-library lock with the same behaviour
stands in only before the runner environment exists: `python3 run_all.py` on a
bare Python builds the runner environment itself (and bootstraps uv) under this
lock, before any third-party package can be imported. Both are advisory locks
on the same lock file (filelock uses flock on POSIX too), so the two exclude
each other.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path


class Busy(Exception):
    """The lock is held elsewhere and the caller asked not to wait."""


@contextlib.contextmanager
def file_lock(path, wait: bool = True):
    """Hold an exclusive lock on the file `path` for the block. `wait=False`
    raises Busy at once when another process holds it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import filelock
    except ImportError:
        with _stdlib_lock(path, wait):
            yield
        return
    lock = filelock.FileLock(str(path), timeout=-1 if wait else 0)
    try:
        lock.acquire()
    except filelock.Timeout:
        raise Busy(str(path)) from None
    try:
        yield
    finally:
        lock.release()


@contextlib.contextmanager
def _stdlib_lock(path: Path, wait: bool):
    with open(path, "a") as f:
        if os.name == "nt":
            import msvcrt
            mode = msvcrt.LK_LOCK if wait else msvcrt.LK_NBLCK
            try:
                msvcrt.locking(f.fileno(), mode, 1)
            except OSError:
                raise Busy(str(path)) from None
            try:
                yield
            finally:
                f.seek(0)
                msvcrt.locking(f.fileno(), msvcrt.LK_UNLCK, 1)
            return
        import fcntl
        try:
            fcntl.flock(f, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except OSError:
            raise Busy(str(path)) from None
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)

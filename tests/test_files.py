"""The one atomic writer and the one lock (frameval/files.py, frameval/locks.py)."""
import json
import subprocess
import sys
import textwrap

import pytest

from frameval import files, locks
from conftest import REPO

pytestmark = pytest.mark.fast


def test_atomic_write_replaces_whole_or_not_at_all(tmp_path):
    p = tmp_path / "sub" / "result.json"
    files.atomic_write_json(p, {"a": 1})
    assert json.loads(p.read_text()) == {"a": 1}
    with pytest.raises(RuntimeError):
        with files.replacing(p) as tmp:
            tmp.write_text('{"a": 2, "half')
            raise RuntimeError("the writer died half way")
    assert json.loads(p.read_text()) == {"a": 1}
    assert sorted(x.name for x in p.parent.iterdir()) == ["result.json"]  # no temporary file left


def test_temporary_names_match_no_reader_glob(tmp_path):
    with files.replacing(tmp_path / "environments" / "torch.json") as tmp:
        assert not tmp.match("*.json") and tmp.name.startswith(".")
        tmp.write_text("{}")


def test_replacing_keeps_the_suffix_numpy_needs(tmp_path):
    import numpy as np
    p = tmp_path / "cache.npz"
    with files.replacing(p, keep_suffix=True) as tmp:
        np.savez(tmp, x=np.arange(3))  # savez appends .npz unless the name ends with it
    assert np.load(p)["x"].tolist() == [0, 1, 2] and [x.name for x in tmp_path.iterdir()] == ["cache.npz"]


HOLD = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {repo!r})
    if {block_filelock}:
        sys.modules["filelock"] = None  # as on a bare Python, before the runner environment exists
    from frameval import locks
    with locks.file_lock(sys.argv[1]):
        print("held", flush=True)
        time.sleep(3600)  # until the test kills it: a holder that lets go by itself races a slow test
""")


@pytest.mark.parametrize("holder", ["stdlib", "filelock"])
def test_the_two_lock_implementations_exclude_each_other(tmp_path, holder):
    """The bare-Python lock (building the runner env) and filelock (everything
    after) guard the same files, so each must see the other's lock."""
    lock = tmp_path / "env.lock"
    code = HOLD.format(repo=str(REPO), block_filelock=holder == "stdlib")
    proc = subprocess.Popen([sys.executable, "-c", code, str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(locks.Busy):  # this process: filelock (the runner env has it)
            with locks.file_lock(lock, wait=False):
                pass
        with pytest.raises(locks.Busy):  # this process, with the standard-library path
            with locks._stdlib_lock(lock, wait=False):
                pass
    finally:
        proc.kill()
        proc.wait()
    with locks.file_lock(lock, wait=False):  # released when the holder is gone
        pass

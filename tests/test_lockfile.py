"""Each environment spec's lock (frameval/envs/lockfile.py, docs/reproduce.md):
every spec in the clone has one, made for the spec as it is now (a spec edited
without `run_all.py lock` fails here), honest about what it could not lock;
a stale lock is never built from; the cache key follows the lock."""
import json
import re
import shutil

import pytest

from conftest import REPO
from frameval import envs
from frameval.envs import lockfile
from frameval.envs.specfile import parse_spec

pytestmark = pytest.mark.fast

def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


SPECS = [REPO / "environment.yml", *sorted((REPO / "envs").glob("*.yml"))]


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.name)
def test_every_spec_has_a_lock_made_for_it_as_it_is(path):
    spec = parse_spec(path)
    lock = lockfile.read_lock(lockfile.lock_path(path))
    assert lock is not None, f"{path.name} has no lock: python3 run_all.py lock {lockfile.lock_label(spec)}"
    assert lock.spec_key == spec.key, (f"{path.name} changed since {lock.path.name} was made: "
                                       f"python3 run_all.py lock {lockfile.lock_label(spec)}")
    assert lock.meta["python"] == spec.python and lock.meta["platform"] == lockfile.PLATFORM
    if lock.state == lockfile.MADE:
        # every requirement exactly pinned, every one with its hashes
        blocks = [b for b in lock.body.split("\n") if not b.startswith((" ", "-"))]
        assert blocks and all("==" in b for b in blocks), blocks
        assert lock.body.count("--hash=sha256:") >= len(lock.pins) == len(blocks) > 0
        pip_names = {norm(re.split(r"[\[<>=!~;\s]", ln.strip())[0]) for ln in spec.pip if not ln.startswith("-")}
        assert pip_names <= {norm(n) for n in lock.pins}, pip_names - {norm(n) for n in lock.pins}
    else:  # a lock that was not made says why, and holds no requirement
        assert lock.state == lockfile.NOT_MADE and lock.meta.get("why") and not lock.body


def test_a_cpu_lock_holds_the_cpu_torch_and_says_where_it_came_from():
    lock = lockfile.read_lock(REPO / "envs" / "torch.lock.txt")
    local = {x["package"]: x for x in lock.meta["local"]}
    assert lock.pins["torch"].endswith("+cpu") and local["torch"]["version"] == lock.pins["torch"]
    assert local["torch"]["sha256"] and "cannot be checked" in lock.path.read_text()
    gpu = lockfile.read_lock(REPO / "envs" / "torch-gpu.lock.txt")
    assert gpu.state != lockfile.MADE or "+cpu" not in gpu.pins.get("torch", "")


def _copy(tmp_path, name="mxnet"):
    for suffix in (".yml", lockfile.SUFFIX):
        shutil.copyfile(REPO / "envs" / f"{name}{suffix}", tmp_path / f"{name}{suffix}")
    return tmp_path / f"{name}.yml"


def test_an_edited_spec_makes_its_lock_stale_and_builds_unlocked(tmp_path):
    path = _copy(tmp_path)
    spec = parse_spec(path)
    lock, why = lockfile.status(spec)
    assert lock is not None and not why
    assert envs.env_for(spec, envs.BACKENDS["venv"]).prefix.name.endswith(f"{spec.key}-{lock.digest[:8]}")
    path.write_text(path.read_text().replace("numpy<1.24", "numpy<1.23"))
    edited = parse_spec(path)
    lock, why = lockfile.status(edited)
    assert lock is None and "stale" in why and "run_all.py lock mxnet" in why
    assert envs.env_for(edited, envs.BACKENDS["venv"]).prefix.name.endswith(edited.key)
    assert lockfile.record(edited)["state"] == "unlocked"


def test_a_lock_not_made_is_never_built_from(tmp_path):
    path = _copy(tmp_path)
    spec = parse_spec(path)
    meta = dict(lockfile.read_lock(lockfile.lock_path(path)).meta, state=lockfile.NOT_MADE, why="no index")
    lockfile.lock_path(path).write_text(lockfile.lock_text(spec, meta))
    lock, why = lockfile.status(spec)
    assert lock is None and "no lock could be made (no index)" in why
    text = lockfile.lock_path(path).read_text()
    assert "No lock could be made from here: no index" in text and "--hash" not in text


def test_the_key_ignores_the_locks_comments(tmp_path):
    path = _copy(tmp_path)
    before = lockfile.build_key(parse_spec(path))
    lp = lockfile.lock_path(path)
    lp.write_text("# another comment\n" + lp.read_text().replace('"made": "', '"made": "x'))
    assert lockfile.build_key(parse_spec(path)) == before


def test_a_pinned_version_builds_unlocked_and_says_why():
    spec = envs.spec.framework_spec("paddle@3.2.2")
    lock, why = lockfile.status(spec)
    assert lock is None and "pinned version" in why


def test_lock_header_is_one_json_line(tmp_path):
    path = _copy(tmp_path)
    lines = [ln for ln in lockfile.lock_path(path).read_text().splitlines() if ln.startswith(lockfile.HEADER)]
    assert len(lines) == 1 and json.loads(lines[0][len(lockfile.HEADER):])["spec"] == "mxnet.yml"

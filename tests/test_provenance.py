"""<out>/provenance.json (frameval/provenance.py): every field is there, and
each equals what the run used: the commit and the clone's state, the command
line, each environment's lock and freeze, every run's parameters and seed,
the data files' hashes, the machine; and the report's "Reproduce" section
shows it, in both languages."""
import hashlib
import json
import subprocess

import pytest

from conftest import REPO
from frameval import cpu, envs, files, provenance
from frameval.config import RunConfig
from frameval.envs import lockfile

pytestmark = pytest.mark.fast

ARGV = ["--frameworks", "torch,mxnet", "--workloads", "lenet", "-p", "epochs=1", "--repeats", "2"]


def fake_env(tmp_path, fw, user=False):
    """An environment as the pipeline holds it once built: its marker (with its lock) and its freeze."""
    spec = envs.framework_spec(fw)
    prefix = tmp_path / "envs" / fw
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "python").write_text("")
    if user:
        return envs.Env(spec, prefix, "user", python_path=prefix / "bin" / "python",
                        user={"freeze": f"{fw}==9.9\nnumpy==1.0\n"})
    (prefix / envs.MARKER).write_text(json.dumps({"installer": "uv 0.0", "lock": lockfile.record(spec)}))
    (prefix / "frameval-freeze.txt").write_text(f"{'torch==2.13.0+cpu' if fw == 'torch' else 'mxnet==1.9.1'}\nsix==1\n")
    return envs.Env(spec, prefix, "venv")


def data_cache(tmp_path):
    npz = tmp_path / "data" / "mnist.npz"
    npz.parent.mkdir()
    npz.write_bytes(b"digits")
    npz.with_suffix(".json").write_text(json.dumps({"sha256": "abc", "source": "test"}))
    return {"mnist-embedded": npz}


def test_every_field_is_there_and_equals_what_the_run_used(tmp_path):
    cfg = RunConfig(frameworks="torch,mxnet", workloads="lenet", param=["epochs=1"], repeats=2, dry_run=True,
                    argv=ARGV)
    env_by_fw = {"torch": fake_env(tmp_path, "torch"), "mxnet": fake_env(tmp_path, "mxnet", user=True)}
    (tmp_path / "machine.json").write_text(json.dumps({"peak_gflops_1": 12.5}))
    rec = provenance.write(tmp_path, cfg, env_by_fw, data_cache(tmp_path))
    assert json.loads((tmp_path / files.PROVENANCE).read_text()) == json.loads(json.dumps(rec, default=files.jsonable))
    assert set(rec) == {"format", "frameval", "command", "environments", "plan", "data", "machine"}
    # the commit, and whether the clone differed from it
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    status = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", *provenance.WATCHED],
                            capture_output=True, text=True).stdout
    assert rec["frameval"]["commit"] == head and rec["frameval"]["dirty"] == bool(status.strip())
    # the exact command line
    assert rec["command"]["argv"] == ARGV and rec["command"]["line"].startswith("python3 run_all.py --frameworks")
    # each environment: its lock as built (or the user's freeze) and its freeze
    torch = rec["environments"]["torch"]
    lock = lockfile.status(envs.framework_spec("torch"))[0]
    assert torch["lock"]["state"] == "locked" and torch["lock"]["sha256"] == lock.digest
    assert torch["lock"]["file"] == "envs/torch.lock.txt" and torch["framework_version"] == "2.13.0+cpu"
    assert torch["freeze"] == env_by_fw["torch"].freeze
    assert torch["freeze_sha256"] == hashlib.sha256(env_by_fw["torch"].freeze.encode()).hexdigest()
    mx = rec["environments"]["mxnet"]
    assert mx["provided_by_user"] and mx["lock"]["state"] == "user" and mx["freeze"] == "mxnet==9.9\nnumpy==1.0\n"
    # the plan: every run, with all of its parameters, its seed and its repeat
    assert [r["name"] for r in rec["plan"]["runs"]] == [r.name for r in cfg.runs]
    for got, run in zip(rec["plan"]["runs"], cfg.runs):
        assert got["params"] == run.params and got["repeat"] == run.repeat
        assert got["seed"] == run.params.get("seed") and got["params"]["epochs"] == 1
    assert rec["plan"]["repeats"] == 2 and {r["repeat"] for r in rec["plan"]["runs"]} == {1, 2}
    # the data files' hashes
    d = rec["data"]["mnist-embedded"]
    assert d["sha256"] == hashlib.sha256(b"digits").hexdigest() and d["content_sha256"] == "abc"
    # the machine: CPU, its flags, cores, the caps in effect, GPU; the measured peak
    m = rec["machine"]
    assert m["cpu"] == cpu.identity() and m["caps"] == cpu.caps() and m["peak"] == {"peak_gflops_1": 12.5}
    assert isinstance(m["flags"], list) and isinstance(m["gpus"], list)
    assert hashlib.sha256(" ".join(sorted(m["flags"])).encode()).hexdigest()[:12] == m["cpu"]["flags_sha"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_reproduce_section_shows_the_record(tmp_path, lang):
    from frameval.report.context import provenance_view
    from frameval.report.i18n import Strings
    cfg = RunConfig(frameworks="torch", workloads="lenet", dry_run=True, argv=["--frameworks", "torch"])
    provenance.write(tmp_path, cfg, {"torch": fake_env(tmp_path, "torch")}, data_cache(tmp_path))
    view = provenance_view([str(tmp_path)], Strings(lang))
    rec = provenance.read(tmp_path)
    assert view["commit"] == rec["frameval"]["commit"] and view["command"] == "python3 run_all.py --frameworks torch"
    assert "envs/torch.lock.txt" in view["envs"][0]["lock"] and view["envs"][0]["version"] == "2.13.0+cpu"
    assert view["data"][0]["sha"] == rec["data"]["mnist-embedded"]["sha256"][:12]
    assert cpu.model() in view["machine"]
    assert view["reproduce"] == f"python3 run_all.py reproduce {tmp_path}"  # the command that exists now
    assert provenance_view([str(tmp_path / "none")], Strings(lang)) is None


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_metadata_says_a_dirty_clone_beside_its_commit(tmp_path, lang):
    """The metadata's commit is not the code that ran where the clone differed
    from it (the H100 run of a working tree said "commit fbb9d6a" alone): it says
    so there, and "Reproduce" names the files; a clean clone's row says nothing more."""
    from datetime import datetime, timezone
    from frameval.report.context import metadata
    from frameval.report.i18n import Strings
    S = Strings(lang)
    cfg = RunConfig(frameworks="torch", workloads="lenet", dry_run=True, argv=["--frameworks", "torch"])
    provenance.write(tmp_path, cfg, {"torch": fake_env(tmp_path, "torch")}, data_cache(tmp_path))
    rec = provenance.read(tmp_path)
    request = {"sources": [str(tmp_path)], "title": "t", "author": "", "repo": REPO}

    def row(dirty):
        rec["frameval"]["dirty"] = dirty
        files.atomic_write_json(tmp_path / files.PROVENANCE, rec)
        meta = metadata(request, [], [{"git_commit": "abc1234"}], {}, [], False, S, datetime.now(timezone.utc))
        return dict(meta)[S("meta_frameval")]
    assert row(True).endswith(f"abc1234, {S('meta_dirty')})")
    assert row(False).endswith("abc1234)") and S("meta_dirty") not in row(False)

"""Teaching sessions: `run_all.py lab` serves JupyterLab with the project's
kernels on a per-user working copy of notebooks/; a notebook runs through the
server in its own framework's kernel, writes into the hand-runs folder and is
saved beside its result; `--report-only --from <hand runs>` makes the report;
the clone stays clean; shutting down leaves no process behind."""
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid

import psutil
import pytest

from frameval import envs, lab
from frameval import notebook as nbfile
from frameval.nb import record
from conftest import REPO


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api(base, path, token, method="GET", body=None):
    req = urllib.request.Request(f"{base}{path}", method=method, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": f"token {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        raw = r.read()
        return json.loads(raw) if raw else None


def test_every_notebook_names_a_registered_kernel(matrix):
    registered = set(envs.registered_kernels())
    for path in (REPO / "notebooks").glob("*/*.ipynb"):
        assert nbfile.read(path)["metadata"]["kernelspec"]["name"] in registered, path


def wait_until_serving(base, token, server, log_path, seconds=300):
    """The URL is printed once the socket is bound; wait until the API answers.
    A server that died instead fails here with its exit code and its log."""
    deadline, last = time.time() + seconds, None
    while time.time() < deadline:
        assert server.poll() is None, f"the lab server exited ({server.returncode}):\n{log_path.read_text()[-3000:]}"
        try:
            return api(base, "/api/status", token)
        except OSError as e:  # URLError is an OSError
            last = e
            time.sleep(0.5)
    raise AssertionError(f"the lab server did not answer in {seconds} s ({last}):\n{log_path.read_text()[-3000:]}")


def execute(ws, code, session) -> tuple:
    """Run one cell through the kernel websocket: (reply content, nbformat outputs)."""
    msg_id = uuid.uuid4().hex
    ws.send(json.dumps({"header": {"msg_id": msg_id, "username": "test", "session": session,
                                   "msg_type": "execute_request", "version": "5.3"},
                        "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
                        "content": {"code": code, "silent": False, "store_history": True,
                                    "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}}))
    outputs, reply, idle = [], None, False
    while reply is None or not idle:
        m = json.loads(ws.recv())
        if m.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        t, c = m["msg_type"], m["content"]
        if t == "execute_reply":
            reply = c
        elif t == "status":
            idle = c["execution_state"] == "idle"
        elif t == "stream":
            if outputs and outputs[-1]["output_type"] == "stream" and outputs[-1]["name"] == c["name"]:
                outputs[-1]["text"] += c["text"]
            else:
                outputs.append({"output_type": "stream", "name": c["name"], "text": c["text"]})
        elif t in ("execute_result", "display_data"):
            o = {"output_type": t, "data": c["data"], "metadata": c.get("metadata", {})}
            if t == "execute_result":
                o["execution_count"] = c["execution_count"]
            outputs.append(o)
        elif t == "error":
            outputs.append({"output_type": "error", "ename": c["ename"], "evalue": c["evalue"],
                            "traceback": c["traceback"]})
    return reply, outputs


def run_by_hand(base, port, token, path, changes: str, repo, shutdown=True):
    """What a student does: open the notebook, change the parameters cell, run
    all cells, save. Returns the setup cell's printed text."""
    model = api(base, f"/api/contents/{path}", token)
    nb = model["content"]
    kernel = api(base, "/api/kernels", token, "POST", {"name": nb["metadata"]["kernelspec"]["name"]})
    import websocket
    ws = websocket.create_connection(f"ws://127.0.0.1:{port}/api/kernels/{kernel['id']}/channels?token={token}",
                                     timeout=600)
    session, printed = uuid.uuid4().hex, ""
    defaults = nbfile.source(nbfile.tagged(nbfile.read(repo / "notebooks" / path), "parameters")[0])
    try:
        for n, c in enumerate(nbfile.code_cells(nb), 1):
            if "parameters" in nbfile.tags(c):
                c["source"] = defaults + "\n" + changes
            reply, outputs = execute(ws, nbfile.source(c), session)
            assert reply["status"] == "ok", (nbfile.source(c)[:200], reply, outputs)
            c["outputs"], c["execution_count"] = outputs, n
            if "setup" in nbfile.tags(c):
                printed = "".join(o.get("text", "") for o in outputs)
    finally:
        ws.close()
        if shutdown:
            api(base, f"/api/kernels/{kernel['id']}", token, "DELETE")
    api(base, f"/api/contents/{path}", token, "PUT", {"type": "notebook", "format": "json", "content": nb})
    return printed


def snapshot_clone(dst):
    """A clone of the working tree as it is now (uncommitted files included),
    committed, so that its `git status` is empty before the session: other
    people's edits in the real clone cannot blur what the session leaves."""
    files = subprocess.run(["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard", "-z"],
                           capture_output=True, check=True).stdout.decode().split("\0")
    for f in filter(None, files):
        src = REPO / f
        if src.is_file() or src.is_symlink():
            (dst / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / f, follow_symlinks=False)
    git = ["git", "-C", str(dst), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "snapshot", "--no-verify"]):
        subprocess.run(git + cmd, check=True, capture_output=True)
    return dst


def git_status(repo=REPO) -> set:
    out = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=all"],
                         capture_output=True, text=True, check=True).stdout
    return set(out.splitlines())


def test_teaching_session_ends_in_a_report_and_the_clone_stays_clean(tmp_path):
    clone = snapshot_clone(tmp_path / "clone")
    before, real_before = git_status(clone), (REPO / "notebooks/torch/lstm.ipynb").read_bytes()
    repo_nb = (clone / "notebooks/torch/lstm.ipynb").read_bytes()
    data_home = tmp_path / "data-home"
    env = dict(os.environ, XDG_DATA_HOME=str(data_home), PYTHONPATH=str(clone))
    for var in ("FRAMEVAL_HAND_RUNS", "FRAMEVAL_JUPYTER_DIR", "JUPYTER_PATH"):
        env.pop(var, None)
    hand = data_home / "frameval" / "notebook-runs"
    port = free_port()
    log = open(tmp_path / "lab.log", "w+")
    server = subprocess.Popen([sys.executable, str(clone / "run_all.py"), "lab", "--frameworks", "torch",
                               "--port", str(port), "--no-browser"], stdout=log, stderr=subprocess.STDOUT, env=env,
                              cwd=clone)
    try:
        token, deadline = None, time.time() + 300
        while token is None and time.time() < deadline and server.poll() is None:
            time.sleep(1)
            m = re.search(rf"http://127\.0\.0\.1:{port}/lab\?token=(\w+)", (tmp_path / "lab.log").read_text())
            token = m.group(1) if m else None
        text = (tmp_path / "lab.log").read_text()
        assert token, text[-3000:]
        # where hand runs go, and the one command that makes the report from them
        assert f"hand runs go to {hand}/runs/" in text
        command = re.search(r"frameval: report from them: (.+)", text).group(1)
        assert command == f"python3 run_all.py --report-only --from {shlex.quote(str(hand))} --out reports/hand"
        work = data_home / "frameval" / "lab" / "notebooks"
        assert (work / "torch" / "lstm.ipynb").read_bytes() == repo_nb  # the working copy
        assert (hand / "runs").is_dir() and (hand / "plan.json").is_file()

        base = f"http://127.0.0.1:{port}"
        wait_until_serving(base, token, server, tmp_path / "lab.log")
        specs = api(base, "/api/kernelspecs", token)["kernelspecs"]
        assert "frameval-torch" in specs
        assert api(base, "/api/contents/torch/lstm.ipynb", token)["content"]["metadata"]["kernelspec"]["name"] == \
            "frameval-torch"

        tiny = "epochs = 2\nmax_train_samples = 128\nmode = 'eager'\n"
        first = run_by_hand(base, port, token, "torch/lstm.ipynb", tiny, clone)
        run1 = hand / "runs/torch/lstm-eager@epochs=2+max_train_samples=128"
        assert str(run1) in first and "replaces" not in first, first
        second = run_by_hand(base, port, token, "torch/lstm.ipynb", tiny + "lr = 0.002\n", clone)
        run2 = hand / "runs/torch/lstm-eager@epochs=2+lr=0.002+max_train_samples=128"
        assert str(run2) in second and "replaces" not in second, second
        # the same parameters again replace the first run, and say so
        r1_before = json.loads((run1 / "result.json").read_text())
        again = run_by_hand(base, port, token, "torch/lstm.ipynb", tiny, clone, shutdown=False)
        assert str(run1) in again and "replaces the earlier run" in again, again
        assert (run1 / "result.replaced.json").is_file()
        for d, lr in ((run1, 0.001), (run2, 0.002)):
            result = json.loads((d / "result.json").read_text())
            assert result["status"] == "ok" and result["framework"] == "torch" and result["workload"] == "lstm"
            assert result["params"]["lr"] == lr and len(result["epochs"]) == 2
            assert result["hand_run"]["defaults_from"] == "notebooks/torch/lstm.ipynb"
            saved = nbfile.read(d / "output.ipynb")  # the post-save hook put the executed notebook beside it
            assert str(d / "result.json") in json.dumps(saved) and nbfile.has_outputs(saved)
        assert json.loads((run1 / "result.json").read_text())["started"] >= r1_before["started"]
        # the saves went to the working copy, never into the clone
        assert nbfile.has_outputs(nbfile.read(work / "torch" / "lstm.ipynb"))
        assert (clone / "notebooks/torch/lstm.ipynb").read_bytes() == repo_nb

        children = psutil.Process(server.pid).children(recursive=True)
        assert children, "the kernel should be a child of the server"
        try:
            api(base, "/api/shutdown", token, "POST")
        except Exception:
            pass
        server.wait(timeout=60)
        gone, alive = psutil.wait_procs(children, timeout=30)
        assert not alive, f"left behind: {alive}"
    finally:
        if server.poll() is None:
            server.kill()
        log.close()

    # the printed command makes the report, with the hand runs told apart by their parameters
    out = tmp_path / "report"
    argv = shlex.split(command)[2:]
    argv[argv.index("--out") + 1] = str(out)
    p = subprocess.run([sys.executable, str(clone / "run_all.py"), *argv], capture_output=True, text=True,
                       env=env, cwd=clone, timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    md = (out / "report.md").read_text()
    for d in (run1, run2):
        r2 = json.loads((d / "result.json").read_text())["val_r2"]
        assert f"{r2:.4f}" in md, (r2, md[:3000])
    assert "lr=0.001" in md and "lr=0.002" in md
    # mixed with a run_all.py output folder
    mixed = tmp_path / "mixed"
    p = subprocess.run([sys.executable, str(clone / "run_all.py"), "--report-only", "--from",
                        str(clone / "tests/fixtures/report/cpu"), "--from", str(hand), "--out", str(mixed)],
                       capture_output=True, text=True, env=env, cwd=clone, timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    md = (mixed / "report.md").read_text()
    r2 = json.loads((run2 / "result.json").read_text())["val_r2"]
    assert f"{r2:.4f}" in md

    after = git_status(clone)
    assert after == before == set(), f"the session left this in the clone: {sorted(after - before)}"
    assert not list((clone / "notebooks").rglob(".ipynb_checkpoints"))
    assert (REPO / "notebooks/torch/lstm.ipynb").read_bytes() == real_before


@pytest.mark.fast
def test_hand_runs_are_kept_apart_by_their_parameters(tmp_path, capsys):
    d = dict(mode="eager", device="cpu", epochs=20, batch_size=32, lr=0.001, seed=0, threads=0,
             max_train_samples=0, window=20, hidden=32, series="co2", out_dir="")
    default = record.hand_run_folder("torch", "lstm", "eager", "cpu", d, root=tmp_path)
    assert default["dir"] == tmp_path / "runs/torch/lstm-eager" and default["changed"] == {}
    a = record.hand_run_folder("torch", "lstm", "graph", "gpu", dict(d, epochs=20.0, lr=3e-4), root=tmp_path)
    assert a["dir"].name == "lstm-graph-gpu@lr=0.0003" and a["changed"] == {"lr": 3e-4}   # 20.0 == 20: not changed
    two = record.hand_run_folder("torch", "lstm", "eager", "cpu", dict(d, epochs=2, lr=0.002), root=tmp_path)
    assert two["dir"].name == "lstm-eager@epochs=2+lr=0.002"  # never a comma: Paddle's dy2static splits paths on it
    plus = record.hand_run_folder("torch", "lstm", "eager", "cpu", dict(d, series="a+b"), root=tmp_path)
    assert re.fullmatch(r"lstm-eager@p[0-9a-f]{10}", plus["dir"].name)  # a value holding the separator: a hash
    odd = record.hand_run_folder("torch", "lstm", "eager", "cpu", dict(d, series="my data/x"), root=tmp_path)
    assert re.fullmatch(r"lstm-eager@p[0-9a-f]{10}", odd["dir"].name)
    other = record.hand_run_folder("torch", "lstm", "eager", "cpu", dict(d, series="my data/y"), root=tmp_path)
    assert other["dir"] != odd["dir"]
    default["dir"].mkdir(parents=True)
    (default["dir"] / "result.json").write_text("{}")
    capsys.readouterr()
    again = record.hand_run_folder("torch", "lstm", "eager", "cpu", d, root=tmp_path)
    assert again["dir"] == default["dir"] and again["replaced"]
    assert "replaces the earlier run" in capsys.readouterr().out
    assert not (default["dir"] / "result.json").exists() and (default["dir"] / "result.replaced.json").exists()
    plan = json.loads(record.write_hand_plan(tmp_path).read_text())
    assert plan["hand_runs"] and plan["runs"] == []


@pytest.mark.fast
def test_a_pinned_kernels_hand_runs_go_beside_the_other_versions(tmp_path, monkeypatch):
    from frameval.paths import FRAMEWORK_KEY_ENV
    d = dict(nbfile.parameters(REPO / "notebooks/paddle/lenet.ipynb"), mode="graph")  # the notebook's defaults
    monkeypatch.setenv(FRAMEWORK_KEY_ENV, "paddle@3.2.2")  # what the pinned kernel's kernel.json sets
    pinned = record.hand_run_folder("paddle", "lenet", "graph", "cpu", d, root=tmp_path)
    assert pinned["dir"] == tmp_path / "runs/paddle@3.2.2/lenet-graph"
    other = record.hand_run_folder("torch", "lenet", "graph", "cpu", d, root=tmp_path)  # another framework's key
    assert other["dir"] == tmp_path / "runs/torch/lenet-graph"
    monkeypatch.delenv(FRAMEWORK_KEY_ENV)
    assert record.hand_run_folder("paddle", "lenet", "graph", "cpu", d, root=tmp_path)["dir"] == \
        tmp_path / "runs/paddle/lenet-graph"


@pytest.mark.fast
def test_lab_pin_the_index_lacks_exits_2_before_anything_is_built(tmp_path):
    env = dict(os.environ, XDG_DATA_HOME=str(tmp_path / "data"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    p = subprocess.run([sys.executable, str(REPO / "run_all.py"), "lab", "--frameworks", "paddle==9.9.9",
                        "--no-browser"], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "paddlepaddle 9.9.9 is not in the package index" in p.stderr
    assert not (tmp_path / "data").exists() and not (tmp_path / "cache").exists()


@pytest.mark.fast
def test_working_copy_refresh_rules(tmp_path):
    src, dst, said = tmp_path / "repo", tmp_path / "copy", []
    (src / "torch").mkdir(parents=True)
    (src / "torch" / "a.ipynb").write_text("v1")
    (src / "torch" / "b.ipynb").write_text("v1")
    lab.sync_notebooks(src, dst, echo=said.append)
    assert (dst / "torch" / "a.ipynb").read_text() == "v1" and "copied 2" in said[0]
    (dst / "torch" / "b.ipynb").write_text("mine")                 # edited in the lab
    (src / "torch" / "a.ipynb").write_text("v2")                   # the repository moved on
    said.clear()
    lab.sync_notebooks(src, dst, echo=said.append)
    assert (dst / "torch" / "a.ipynb").read_text() == "v2" and any("a.ipynb: refreshed" in s for s in said)
    assert (dst / "torch" / "b.ipynb").read_text() == "mine" and not any("b.ipynb" in s for s in said)
    (src / "torch" / "b.ipynb").write_text("v2")
    said.clear()
    lab.sync_notebooks(src, dst, echo=said.append)
    assert (dst / "torch" / "b.ipynb").read_text() == "mine"
    assert any("b.ipynb: the repository's version changed" in s and "kept yours" in s for s in said)
    (dst / "torch" / "b.ipynb").unlink()
    lab.sync_notebooks(src, dst, echo=said.append)
    assert (dst / "torch" / "b.ipynb").read_text() == "v2"


@pytest.mark.fast
def test_post_save_hook_copies_only_into_hand_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("FRAMEVAL_HAND_RUNS", str(tmp_path / "hand"))
    run = tmp_path / "hand/runs/torch/lenet-eager"
    elsewhere = tmp_path / "elsewhere/runs/torch/lenet-eager"
    for d in (run, elsewhere):
        d.mkdir(parents=True)
        (d / "result.json").write_text("{}")
    nb = {"cells": [{"cell_type": "code", "source": "", "metadata": {}, "outputs": [
        {"output_type": "stream", "name": "stdout", "text": f"{run / 'result.json'}\nfirst_epoch_s=1\n"},
        {"output_type": "execute_result", "data": {"text/plain": f"PosixPath('{elsewhere / 'result.json'}')"},
         "metadata": {}, "execution_count": 1}]}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    saved = tmp_path / "lenet.ipynb"
    saved.write_text(json.dumps(nb))
    assert lab.result_paths(nb) == [str(run / "result.json"), str(elsewhere / "result.json")]
    lab.post_save_hook(model={}, os_path=str(saved), contents_manager=None)
    assert (run / "output.ipynb").read_text() == saved.read_text()
    assert not (elsewhere / "output.ipynb").exists()


@pytest.mark.fast
def test_lab_refuses_bad_input():
    p = subprocess.run([sys.executable, str(REPO / "run_all.py"), "lab", "--frameworks", "caffe"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "unknown framework 'caffe'" in p.stderr

"""Teaching sessions: `run_all.py lab` serves JupyterLab with the project's
kernels; a notebook runs through the server in its own framework's kernel; and
shutting down leaves no process behind."""
import json
import re
import socket
import subprocess
import sys
import time
import urllib.request
import uuid

import psutil

from frameval import envs
from frameval import notebook as nbfile
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


def test_lab_serves_kernels_and_runs_a_notebook(matrix, tmp_path):
    port = free_port()
    log = open(tmp_path / "lab.log", "w+")
    server = subprocess.Popen([sys.executable, str(REPO / "run_all.py"), "lab", "--frameworks", "torch",
                               "--port", str(port), "--no-browser"], stdout=log, stderr=subprocess.STDOUT)
    try:
        token, deadline = None, time.time() + 180
        while token is None and time.time() < deadline and server.poll() is None:
            time.sleep(1)
            m = re.search(rf"http://127\.0\.0\.1:{port}/lab\?token=(\w+)", (tmp_path / "lab.log").read_text())
            token = m.group(1) if m else None
        assert token, (tmp_path / "lab.log").read_text()[-3000:]
        base = f"http://127.0.0.1:{port}"
        specs = api(base, "/api/kernelspecs", token)["kernelspecs"]
        for name in envs.registered_kernels():
            assert name in specs, f"{name} not visible in lab"

        kernel = api(base, "/api/kernels", token, "POST", {"name": "frameval-torch"})
        import websocket
        ws = websocket.create_connection(f"ws://127.0.0.1:{port}/api/kernels/{kernel['id']}/channels?token={token}",
                                         timeout=300)
        session = uuid.uuid4().hex
        nb = nbfile.read(REPO / "notebooks/torch/lenet.ipynb")
        cells = [nbfile.source(c) for c in nbfile.code_cells(nb)]
        # what papermill would inject after the parameters cell
        cells.insert(1, f"epochs = 1\nmax_train_samples = 256\nmode = 'eager'\nout_dir = {str(tmp_path / 'run')!r}")
        for code in cells:
            msg_id = uuid.uuid4().hex
            ws.send(json.dumps({"header": {"msg_id": msg_id, "username": "test", "session": session,
                                           "msg_type": "execute_request", "version": "5.3"},
                                "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
                                "content": {"code": code, "silent": False, "store_history": True,
                                            "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}}))
            while True:
                reply = json.loads(ws.recv())
                if reply.get("parent_header", {}).get("msg_id") == msg_id and reply["msg_type"] == "execute_reply":
                    assert reply["content"]["status"] == "ok", (code[:200], reply["content"])
                    break
        ws.close()
        result = json.loads((tmp_path / "run" / "result.json").read_text())
        assert result["status"] == "ok" and result["param_counts"] == {"lenet": 61706}
        assert result["framework"] == "torch" and len(result["epochs"]) == 1

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


def test_lab_refuses_bad_input():
    p = subprocess.run([sys.executable, str(REPO / "run_all.py"), "lab", "--frameworks", "caffe"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "unknown framework 'caffe'" in p.stderr

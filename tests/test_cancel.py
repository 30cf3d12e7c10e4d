"""Ctrl-C against one run's life, step by step, without a kernel: a fake run
stands in for papermill, and SIGINT is sent to this process at each step
(the handler, as the pipeline's, sets the run's `Cancel`). Whatever the step,
a run whose process ended by itself keeps the record its notebook wrote;
only a run that was stopped is recorded as interrupted; and a Ctrl-C before
a run starts leaves its folder as it was."""
import json
import os
import signal

import pytest

from frameval import execute, files
from frameval.result import store as results
from frameval.plan import build_plan

pytestmark = pytest.mark.fast

STEPS = ["before", "clearing", "starting", "waiting", "recorded", "exited", "completing", "after"]
STOPPED = {"clearing", "starting", "waiting", "recorded"}  # the run had not ended by itself


class FakeRun:
    """A run that writes its notebook's record when waited on, unless killed first."""

    def __init__(self, d, at):
        self.d, self.at, self.returncode, self.killed = d, at, None, False

    def kill(self):
        self.killed = True
        if self.returncode is None:
            self.returncode = -9

    def poll(self):
        return self.returncode

    def wait(self, timeout=None):
        self.at("waiting")
        if self.returncode is None:
            files.atomic_write_json(self.d / files.RESULT, {"framework": "torch", "workload": "lenet",
                                                            "mode": "graph", "status": "ok", "by": "notebook"})
            self.at("recorded")
            if not self.killed:
                self.returncode = 0
        self.at("exited")
        return self.returncode


@pytest.fixture
def cancel():
    c = execute.Cancel()
    old = signal.signal(signal.SIGINT, lambda *a: c.cancel())
    yield c
    signal.signal(signal.SIGINT, old)


@pytest.mark.parametrize("step", STEPS)
def test_ctrl_c_at_each_step_never_overwrites_a_finished_run(step, tmp_path, monkeypatch, cancel):
    run = build_plan("torch", "lenet", "graph", "cpu", "quick", [], 1)[0]
    d = tmp_path / "run"
    files.atomic_write_json(d / files.RESULT, {"framework": "torch", "workload": "lenet", "mode": "graph",
                                               "status": "failed", "by": "the last invocation"})
    procs = []

    def at(where):
        if where == step:
            os.kill(os.getpid(), signal.SIGINT)  # the handler runs before the next line

    def start(*a, **k):
        procs.append(FakeRun(d, at))
        at("starting")
        return procs[-1]

    clear, complete = results.clear_for_run, results.complete
    monkeypatch.setattr(execute, "load_papermill", lambda: None)
    monkeypatch.setattr(execute, "start_papermill", start)
    monkeypatch.setattr(results, "clear_for_run", lambda dd: (clear(dd), at("clearing")))
    monkeypatch.setattr(results, "complete", lambda *a, **k: (at("completing"), complete(*a, **k))[1])
    at("before")
    if step in STOPPED or step == "before":
        with pytest.raises(execute.Interrupted):
            execute.execute(run, d, "k", {}, cancel=cancel)
    else:
        assert execute.execute(run, d, "k", {}, cancel=cancel).status == "ok"
        at("after")
    rec = json.loads((d / files.RESULT).read_text())
    assert cancel.is_set()
    if step == "before":
        assert procs == [] and rec["by"] == "the last invocation"
    elif procs[0].returncode == 0:  # ended by itself: the notebook's record stands
        assert step not in STOPPED and rec["status"] == "ok" and rec["by"] == "notebook", rec
    else:
        assert step in STOPPED and procs[0].killed and rec["error"]["type"] == "Interrupted", rec
    assert cancel.proc is None


def test_a_cancelled_collector_still_starts(cancel):
    """After Ctrl-C the report is still written: the collector is not killed on
    registration, only by a second Ctrl-C while it runs."""
    proc = FakeRun(None, lambda where: None)
    cancel.cancel()
    with cancel.running(proc, kill_if_cancelled=False):
        assert not proc.killed
        os.kill(os.getpid(), signal.SIGINT)
        assert proc.killed

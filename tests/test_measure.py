"""Measurement fidelity: the recorder's times and memory figures, measured
through the real path (papermill, a framework kernel, frameval.nb.Recorder)
on tests/notebooks/measure.ipynb, and the NVML probe driven by a fake pynvml.

Speed targets live in bench/, not here: these tests check that the numbers
are right, not that they are small."""
import json
import os
import re
import subprocess
import sys
import threading
import time
import types

import pytest

from conftest import REPO
from frameval import energy, envs
from frameval.nb import measure
from frameval.nb.record import Recorder

NOTEBOOK = REPO / "tests" / "notebooks" / "measure.ipynb"
MB = 1e6
# The real path in the torch kernel; any other framework kernel if it is missing.
KERNELS = [("frameval-torch", "torch")] + [(f"frameval-{fw}", fw) for fw in
                                           ("tensorflow", "paddle", "mxnet", "megengine", "mindspore")]


@pytest.fixture(autouse=True)
def _restore_environ():
    """The Recorder pins thread counts and cache folders in os.environ: keep
    that from leaking into later tests' subprocesses."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def _kernel():
    """A registered framework kernel; with none, the torch environment is built
    here (as `run_all.py --setup-only --frameworks torch` would): never a skip."""
    have = set(envs.registered_kernels())
    for name, module in KERNELS:
        if name in have:
            return name, module
    built = envs.ensure_frameworks(["torch"], "cpu")["torch"]
    assert isinstance(built, envs.Env), f"the torch environment could not be built: {built}"
    assert "frameval-torch" in envs.registered_kernels()
    return KERNELS[0]


def run_measure(tmp_path, **params) -> dict:
    kernel, module = _kernel()
    out = tmp_path / "run"
    out.mkdir()
    cmd = [sys.executable, "-m", "papermill", str(NOTEBOOK), str(out / "output.ipynb"), "-k", kernel,
           "--cwd", str(out), "--no-progress-bar", "--log-level", "WARNING",
           "-p", "framework", module, "-p", "out_dir", str(out)]
    for k, v in params.items():
        cmd += ["-p", k, str(v)]
    p = subprocess.run(cmd, env=envs.jupyter_env(), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"papermill failed:\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}"
    return json.loads((out / "result.json").read_text())


@pytest.fixture(scope="module")
def timing_run(tmp_path_factory):
    """Four epochs: a 1.0 s first one (a stand-in warm-up), then 0.5 s ones."""
    return run_measure(tmp_path_factory.mktemp("timing"), epochs=4, first_sleep_s=1.0, sleep_s=0.5)


@pytest.fixture(scope="module")
def memory_run(tmp_path_factory):
    """One epoch that writes a 200 MB numpy array."""
    return run_measure(tmp_path_factory.mktemp("memory"), epochs=1, first_sleep_s=0.2, alloc_mb=200)


# ------------------------------------------------------------------ memory
def test_peak_rss_delta_is_the_allocation(memory_run):
    r = memory_run
    assert r["status"] == "ok"
    assert r["rss_after_import_mb"] and r["peak_rss_mb"]
    delta = r["peak_rss_mb"] - r["rss_after_import_mb"]
    assert abs(delta - 200) <= 20, f"peak RSS delta {delta:.1f} MB for a 200 MB allocation " \
                                   f"(peak {r['peak_rss_mb']}, after import {r['rss_after_import_mb']})"


@pytest.mark.fast
def test_host_memory_needs_no_sampling_thread(tmp_path):
    before = threading.active_count()
    rec = Recorder("torch", "lenet", {"mode": "eager", "device": "cpu"}, out_dir=str(tmp_path), chdir=False)
    rec.after_import("none")
    for _ in range(3):
        with rec.epoch(samples=1):
            assert threading.active_count() == before
    rec.write()
    assert threading.active_count() == before


# ------------------------------------------------------------------ timing
def test_sleep_timed_within_5_percent(timing_run):
    r = timing_run
    assert r["status"] == "ok"
    secs = [e["seconds"] for e in r["epochs"]]
    assert len(secs) == 4
    assert secs[0] == pytest.approx(1.0, rel=0.05)
    for s in secs[1:]:
        assert s == pytest.approx(0.5, rel=0.05)


def test_warm_up_kept_apart(timing_run):
    r = timing_run
    secs = [e["seconds"] for e in r["epochs"]]
    assert r["first_epoch_s"] == secs[0]
    assert r["steady_epoch_s"] == pytest.approx(sorted(secs[1:])[1])  # median of epochs 2-4
    assert r["steady_epoch_s"] == pytest.approx(0.5, rel=0.05)
    assert r["steady_min_s"] == min(secs[1:]) and r["steady_max_s"] == max(secs[1:])
    assert r["samples_per_s"] == pytest.approx(1 / r["steady_epoch_s"])
    assert not any("one epoch" in n for n in r["notes"])


def test_one_epoch_run_reports_only_a_first_epoch(memory_run):
    r = memory_run
    assert len(r["epochs"]) == 1
    assert r["first_epoch_s"] is not None and r["first_epoch_s"] >= 0.2
    assert r["steady_epoch_s"] is None and r["samples_per_s"] is None
    assert r["steady_min_s"] is None and r["steady_max_s"] is None
    assert any("one epoch only" in n for n in r["notes"]), r["notes"]


@pytest.mark.fast
def test_stopwatch_syncs_before_each_clock_read():
    calls = []
    w = measure.Stopwatch(lambda: calls.append(time.perf_counter()))
    w.start()
    assert len(calls) == 1 and calls[0] <= w.t0
    time.sleep(0.01)
    s = w.stop()
    assert len(calls) == 2 and s >= 0.01


@pytest.mark.fast
def test_recorder_syncs_and_resets_device_peak(tmp_path):
    events = []
    rec = Recorder("torch", "lenet", {"mode": "eager", "device": "cpu"}, out_dir=str(tmp_path), chdir=False)
    rec.after_import("none", sync=lambda: events.append("sync"), reset_device_peak=lambda: events.append("reset"))
    for _ in range(2):
        with rec.epoch(samples=1):
            events.append("work")
    # the allocator peak is reset once, before training; a sync brackets every epoch
    assert events == ["reset", "sync", "work", "sync", "sync", "work", "sync"]


# ------------------------------------------------------------------ GPU memory (NVML, faked)
class FakeNvml(types.SimpleNamespace):
    """pynvml's functions the probe uses. `script` is a list of samples, each a
    list of (pid, used bytes or None) per compute process; graphics processes
    come from `graphics`."""

    def __init__(self, script, graphics=(), fail_init=False):
        super().__init__()
        self.script, self.graphics, self.fail_init = list(script), list(graphics), fail_init
        self.calls = 0
        self.inited = self.shut = False

    def nvmlInit(self):
        if self.fail_init:
            raise RuntimeError("NVML Shared Library Not Found")
        self.inited = True

    def nvmlShutdown(self):
        self.shut = True

    def nvmlDeviceGetHandleByIndex(self, i):
        return ("handle", i)

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        sample = self.script[min(self.calls, len(self.script) - 1)]
        self.calls += 1
        return [types.SimpleNamespace(pid=p, usedGpuMemory=u) for p, u in sample]

    def nvmlDeviceGetGraphicsRunningProcesses(self, h):
        return [types.SimpleNamespace(pid=p, usedGpuMemory=u) for p, u in self.graphics]

    # energy: a counter in mJ that each reading advances by `energy_step`, and a constant draw
    energy_mj, energy_step, power_mw = 1_000_000.0, 0.0, 70_000

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        self.energy_mj += self.energy_step
        return self.energy_mj

    def nvmlDeviceGetPowerUsage(self, h):
        return self.power_mw


ME, OTHER = 4242, 9999


@pytest.mark.fast
def test_nvml_peak_from_per_process_samples():
    fake = FakeNvml([[(ME, 100 * MB), (OTHER, 5000 * MB)],
                     [(ME, 300 * MB), (OTHER, 7000 * MB)],
                     [(OTHER, 100 * MB)],                      # this process absent: no sample
                     [(ME, None)],                              # not reported: ignored
                     [(ME, 200 * MB)]])
    probe = measure.NvmlProbe(fake, pid=ME)
    samples = [probe.sample() for _ in range(5)]
    assert samples == [100, 300, None, None, 200]
    assert probe.peak == 300  # other processes never counted


@pytest.mark.fast
def test_nvml_adds_compute_and_graphics_of_this_process():
    fake = FakeNvml([[(ME, 100 * MB)]], graphics=[(ME, 50 * MB), (OTHER, 900 * MB)])
    probe = measure.NvmlProbe(fake, pid=ME)
    assert probe.sample() == pytest.approx(150)


@pytest.mark.fast
def test_nvml_probe_thread_start_stop():
    fake = FakeNvml([[(ME, 10 * MB)], [(ME, 40 * MB)], [(ME, 25 * MB)]])
    probe = measure.NvmlProbe(fake, pid=ME, interval=0.005)
    probe.start()
    assert fake.inited
    time.sleep(0.1)
    peak = probe.stop()
    assert peak == 40.0 and fake.shut
    assert not any(t.name == "frameval-nvml" for t in threading.enumerate())


@pytest.mark.fast
def test_recorder_gpu_run_uses_nvml(tmp_path, monkeypatch):
    fake = FakeNvml([[(os.getpid(), 64 * MB)], [(os.getpid(), 512 * MB)], [(os.getpid(), 128 * MB)]])
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    rec = Recorder("torch", "lenet", {"mode": "eager", "device": "gpu"}, out_dir=str(tmp_path), chdir=False)
    rec._nvml.interval = 0.005
    rec.after_import("none", device_peak_mb=lambda: 123.4)
    with rec.epoch(samples=1):
        time.sleep(0.05)
    r = json.loads(rec.write().read_text())
    assert r["peak_device_driver_mb"] == 512.0
    assert r["peak_device_mb"] == 123.4


@pytest.mark.fast
def test_energy_per_epoch_from_the_counter_at_its_edges_less_idle(tmp_path, monkeypatch):
    """#48: each epoch's energy is the counter's difference between the epoch's
    edges, its evaluations' taken off; the idle draw times its seconds is
    subtracted; the summary is the steady epochs' median, and per sample."""
    fake = FakeNvml([[(os.getpid(), 64 * MB)]])
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    rec = Recorder("torch", "lenet", {"mode": "eager", "device": "gpu", "epochs": 3}, out_dir=str(tmp_path), chdir=False)
    rec._nvml.interval = 10  # no sampling thread readings between the edges
    rec.after_import("none")
    for d in (4_000.0, 4_500.0, 4_000.0):  # mJ by which each epoch's work moves the counter
        with rec.epoch(samples=100):
            fake.energy_mj += d
    r = json.loads(rec.write().read_text())
    e = r["energy"]
    assert e["available"] is True and e["idle_w"] == 70.0
    got = [x["energy_j"] for x in r["epochs"]]
    assert got == [4.0, 4.5, 4.0]
    for x in r["epochs"]:
        assert x["energy_above_idle_j"] == pytest.approx(x["energy_j"] - 70.0 * x["seconds"], abs=1e-3)
    # these epochs are far shorter than the counter needs: no figure, and why
    assert "epoch_j" not in e and "under the 1 s" in e["why_none"] and e["epochs"] == "steady"
    # the same readings over long enough epochs: the steady epochs' mean, less idle, per sample
    long = [dict(x, seconds=x["seconds"] + 1.0) for x in r["epochs"]]
    got = energy.summary(long, 70.0)
    assert got["epoch_j"] == 4.25 and got["epochs"] == "steady"
    above = [x["energy_j"] - 70.0 * x["seconds"] for x in long[1:]]
    assert got["epoch_above_idle_j"] == pytest.approx(sum(above) / 2, abs=1e-3)
    assert got["above_idle_mj_per_sample"] == pytest.approx(1000 * got["epoch_above_idle_j"] / 100, abs=0.01)
    assert energy.summary(long[:1], None) == {"epochs": "first (one epoch only)", "seconds": round(long[0]["seconds"], 3),
                                              "epoch_j": 4.0}


@pytest.mark.fast
def test_an_evaluations_energy_is_taken_off_its_epochs(tmp_path, monkeypatch):
    fake = FakeNvml([[(os.getpid(), 64 * MB)]])
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    rec = Recorder("torch", "lenet", {"mode": "eager", "device": "gpu", "epochs": 2}, out_dir=str(tmp_path), chdir=False)
    rec._nvml.interval = 10
    rec.after_import("none")

    def evaluate():
        fake.energy_mj += 1_000.0  # the evaluation's work: not the training's
        return {"test_acc": 0.5}
    rec.evaluate_during_training(evaluate, per_epoch=2)
    for _ in range(2):
        with rec.epoch(samples=4) as ep:
            for _ in ep.timed([[0, 1], [2, 3]]):
                fake.energy_mj += 2_000.0
    r = json.loads(rec.write().read_text())
    assert len(r["evaluation"]["points"]) == 4
    assert [x["energy_j"] for x in r["epochs"]] == [4.0, 4.0]


@pytest.mark.fast
def test_energy_not_available_on_the_cpu_or_without_a_counter(tmp_path, monkeypatch):
    rec = Recorder("torch", "lenet", {"mode": "eager", "device": "cpu"}, out_dir=str(tmp_path / "c"), chdir=False)
    rec.after_import("none")
    with rec.epoch(samples=1):
        pass
    r = json.loads(rec.write().read_text())
    assert r["energy"]["available"] is False and "CPU" in r["energy"]["why"]
    assert "energy_j" not in r["epochs"][0]

    class NoCounter(FakeNvml):
        def nvmlDeviceGetTotalEnergyConsumption(self, h):
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
    monkeypatch.setitem(sys.modules, "pynvml", NoCounter([[(os.getpid(), 1 * MB)]]))
    rec = Recorder("torch", "lenet", {"mode": "eager", "device": "gpu"}, out_dir=str(tmp_path / "g"), chdir=False)
    rec.after_import("none")
    with rec.epoch(samples=1):
        pass
    r = json.loads(rec.write().read_text())
    assert r["energy"] == {"available": False, "why": "no NVML total-energy counter on this device or driver"}


@pytest.mark.fast
def test_no_gpu_records_not_available(tmp_path):
    rec = Recorder("torch", "lenet", {"mode": "eager", "device": "cpu"}, out_dir=str(tmp_path), chdir=False)
    assert type(rec._nvml) is measure.DeviceMemoryProbe
    rec.after_import("none", device_peak_mb=lambda: 0.0)  # a CPU build's zero is not a measurement
    with rec.epoch(samples=1):
        pass
    r = json.loads(rec.write().read_text())
    assert r["peak_device_mb"] is None and r["peak_device_driver_mb"] is None


@pytest.mark.fast
def test_gpu_run_without_pynvml_records_not_available(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    assert type(measure.nvml_probe("gpu")) is measure.DeviceMemoryProbe
    rec = Recorder("torch", "lenet", {"mode": "eager", "device": "gpu"}, out_dir=str(tmp_path), chdir=False)
    rec.after_import("none")
    with rec.epoch(samples=1):
        pass
    r = json.loads(rec.write().read_text())
    assert r["peak_device_driver_mb"] is None and r["peak_device_mb"] is None


@pytest.mark.fast
def test_gpu_run_with_broken_nvml_records_not_available(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml([[]], fail_init=True))
    rec = Recorder("torch", "lenet", {"mode": "eager", "device": "gpu"}, out_dir=str(tmp_path), chdir=False)
    rec.after_import("none")
    with rec.epoch(samples=1):
        pass
    r = json.loads(rec.write().read_text())
    assert r["peak_device_driver_mb"] is None


# ------------------------------------------------------------------ the notebooks' device hooks
FRAMEWORK_NOTEBOOKS = sorted((REPO / "notebooks").glob("*/*.ipynb"))  # notebooks/<fw>/<workload>.ipynb


@pytest.mark.fast
@pytest.mark.parametrize("path", FRAMEWORK_NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_notebook_gives_the_recorder_its_device_hooks(path):
    """Every framework notebook hands the recorder a device sync (called before
    each clock read) and, where it reads an allocator peak, the matching reset
    (called once before training); the epochs are timed by rec.epoch()."""
    from frameval import notebook as nbfile
    nb = nbfile.read(path)
    setup = "".join(nbfile.source(c) for c in nbfile.tagged(nb, "setup"))
    train = "".join(nbfile.source(c) for c in nbfile.tagged(nb, "train"))
    support = path.parents[2] / "frameval" / "frameworks" / path.parent.name / "support.py"
    if "rec.after_import(" not in setup:  # setup delegates to the support module: fw.setup(rec, ...)
        assert re.search(r"fw\.setup\(rec\b", setup), "rec.after_import is never called"
        setup += support.read_text()
    assert "rec.after_import(" in setup, "rec.after_import is never called"
    if "sync=" not in setup:  # the hooks come from the framework's support module (frameval/frameworks/<fw>/support.py)
        assert re.search(r"rec\.after_import\([^)]*\*\*", setup), "no device sync passed to rec.after_import"
        setup += support.read_text()
    assert "sync=" in setup, "no device sync passed to rec.after_import"
    if "device_peak_mb=" in setup:
        assert "reset_device_peak=" in setup, "allocator peak read but never reset before training"
    assert "rec.epoch(" in train

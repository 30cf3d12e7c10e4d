"""The framework-neutral pieces every notebook calls: the parameter check, the
DCGAN grids and the LSTM's end-of-run figures."""
import json

import numpy as np
import pytest

from frameval import files, nb
from frameval.workloads.lstm import quality

pytestmark = pytest.mark.fast


def params(**kv):
    return dict(dict(mode="graph", device="cpu", epochs=1, batch_size=32, lr=1e-3, seed=0, threads=1,
                     max_train_samples=0, window=20, hidden=32, series="co2", out_dir=""), **kv)


def test_parameters_refuse_an_unknown_mode_or_device():
    assert nb.parameters(params(), "lstm")["mode"] == "graph"
    with pytest.raises(ValueError, match=r"mode must be one of 'graph', 'eager', not 'graf'"):
        nb.parameters(params(mode="graf"), "lstm")
    with pytest.raises(ValueError, match=r"device must be one of 'cpu', 'gpu', not 'cuda'"):
        nb.parameters(params(device="cuda"), "lstm")


def test_r2_and_rmse_against_hand_figures():
    true, pred = np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.5, 2.0, 2.5, 4.0])
    # SS_res = 0.25 + 0 + 0.25 + 0 = 0.5; SS_tot = 2.25 + 0.25 + 0.25 + 2.25 = 5
    assert quality.r2(true, pred) == pytest.approx(0.9)
    assert quality.rmse(true, pred) == pytest.approx(0.125 ** 0.5)
    assert quality.r2(true, np.full(4, true.mean())) == pytest.approx(0.0)


class Windows:  # what forecast reads from nb.load_co2's result
    def __init__(self, y_val, mean, std, x_val=None):
        self.y_val, self.mean, self.std = y_val, mean, std
        # each window's last value one step behind the target: the persistence forecast
        self.x_val = x_val if x_val is not None else np.asarray(y_val, np.float32)[:, None, :] - 0.5

    def to_units(self, y):
        return np.asarray(y, dtype=np.float64) * self.std + self.mean


def test_forecast_records_figures_in_ppm(tmp_path):
    rec = nb.Recorder("torch", "lstm", params(), out_dir=str(tmp_path), chdir=False)
    data = Windows(np.array([[-1.0], [0.0], [1.0], [2.0]], dtype=np.float32), mean=400.0, std=2.0)
    model = rec.work_file("lstm.pt")
    assert model.parent == tmp_path / files.WORK
    model.write_bytes(b"x" * 1234)
    figures = nb.forecast(rec, data, np.array([[-1.0], [0.5], [1.0], [2.0]], dtype=np.float32),
                          predict_s=0.008, model_path=model, load_s=0.25, model_format="test")
    true_ppm, pred_ppm = [398.0, 400.0, 402.0, 404.0], [398.0, 401.0, 402.0, 404.0]
    assert figures["val_r2"] == pytest.approx(1 - 1.0 / 20.0)  # SS_tot = 9 + 1 + 1 + 9
    assert figures["val_rmse"] == pytest.approx(0.5)            # sqrt(1 / 4) ppm
    assert figures["predict_ms"] == pytest.approx(2.0) and figures["load_ms"] == pytest.approx(250.0)
    assert figures["model_bytes"] == 1234
    r = rec.result
    assert r["series"] == {"val_true": true_ppm, "val_pred": pred_ppm, "val_persistence": [397.0, 399.0, 401.0, 403.0]}
    assert r["model_format"] == "test" and r["persistence_r2"] == pytest.approx(1 - 4.0 / 20.0)
    assert {k: r[k] for k in figures} == figures


def test_save_grid_writes_pngs_the_result_lists(tmp_path, capsys):
    rec = nb.Recorder("torch", "dcgan", dict(mode="eager", device="cpu"), out_dir=str(tmp_path), chdir=False)
    images = np.linspace(-1, 1, 16 * 28 * 28, dtype=np.float32).reshape(16, 1, 28, 28)
    for epoch in range(2):
        path = nb.save_grid(rec, epoch, images)
        assert path == tmp_path / files.GRIDS / f"epoch_{epoch + 1:03d}.png"
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert rec.result["grids"] == ["grids/epoch_001.png", "grids/epoch_002.png"]
    nb.show_last_grid(rec)  # outside Jupyter: at most IPython's repr, and no error
    capsys.readouterr()
    rec.finish()
    out = capsys.readouterr().out.splitlines()
    assert out[0] == str(tmp_path / files.RESULT) and "first_epoch_s=" in out[1]
    assert json.loads((tmp_path / files.RESULT).read_text())["grids"] == rec.result["grids"]


def _recorder(tmp_path, epochs):
    return nb.Recorder("torch", "dcgan", {"epochs": epochs, "mode": "graph", "device": "cpu"}, out_dir=str(tmp_path),
                       chdir=False)


def test_timing_windows_reach_five_steady_ones(tmp_path):
    """Whole epochs where five or more are steady; else windows of steps, with
    a sync at each window's edge only, and the remainder joined to the last."""
    import time
    rec = _recorder(tmp_path, epochs=3)
    synced = []
    rec.sync = lambda: synced.append(1)
    assert rec.window_steps(10) == 3 and rec.window_steps(2) == 1
    assert _recorder(tmp_path, epochs=6).window_steps(10) == 10
    for epoch in range(3):
        with rec.epoch(samples=10 * 4) as ep:
            for idx in ep.timed(nb.batches(40, 4, 0, epoch)):
                # 30 ms a step: every window of 3 or 4 steps reaches speed.MIN_WINDOW_S, none is merged
                time.sleep(0.03 if (epoch, idx[0]) != (2, 0) else 0.0)
    rec.write()
    r = json.loads((tmp_path / files.RESULT).read_text())
    t = r["timing"]
    assert t["window"] == "steps" and [w["steps"] for w in t["windows"] if w["epoch"] == 2] == [3, 3, 4]
    assert t["steady_windows"] == 6 and all(w["samples"] == 4 * w["steps"] for w in t["windows"])
    rates = sorted(w["samples"] / w["seconds"] for w in t["windows"] if w["epoch"] > 1)
    assert r["samples_per_s"] == pytest.approx((rates[2] + rates[3]) / 2, rel=1e-4)  # seconds stored to 1 us
    assert len(synced) >= 9  # three window edges an epoch, plus the epoch clock's own
    m = r["machine"]
    assert m["cores"] >= 1 and len(m["load_before"]) == 3 and len(m["load_after"]) == 3
    assert m["steal_fraction"] is not None and 0 <= m["steal_fraction"] < 1


def test_an_outlier_window_is_counted_not_dropped(tmp_path):
    import time
    rec = _recorder(tmp_path, epochs=7)
    for epoch in range(7):
        with rec.epoch(samples=8) as ep:
            for _ in ep.timed(nb.batches(8, 4, 0, epoch)):
                time.sleep(0.08 if epoch == 4 else 0.005)
    rec.write()
    t = json.loads((tmp_path / files.RESULT).read_text())["timing"]
    assert t["window"] == "steps" and t["steady_windows"] == 6 and t["outlier_windows"] == 1
    assert len(t["windows"]) == 7


def test_other_processes_share_is_measured_not_our_own(tmp_path):
    """A busy loop in this process is its own work (share near 0); one in a
    separate process is other work (share near 1/cores)."""
    import os
    import subprocess
    import sys
    import time
    from frameval.nb import measure
    before = measure.machine_before()  # what else runs on this machine now: the baseline
    time.sleep(1.0)
    base = measure.machine_state(before)["other_share"]
    before = measure.machine_before()
    t = time.perf_counter()
    while time.perf_counter() - t < 1.0:
        pass
    own = measure.machine_state(before)
    # the hog says when it is busy and spins until killed: its interpreter's start-up
    # (slow on a loaded machine) is outside the measured second
    hog = subprocess.Popen([sys.executable, "-c", "print('busy', flush=True)\nwhile True: pass"],
                           stdout=subprocess.PIPE, text=True)
    try:
        assert hog.stdout.readline().strip() == "busy"
        before = measure.machine_before()
        time.sleep(1.2)
        other = measure.machine_state(before)
    finally:
        hog.kill()
        hog.wait()
    assert own["other_share"] < base + 0.25, (own, base)
    assert other["other_share"] > base + 0.6 / os.cpu_count() or other["other_share"] > 0.95, (other, base)


@pytest.mark.fast
def test_the_persistence_forecast_is_each_windows_last_value_in_ppm(tmp_path):
    """The LSTM's naive baseline (issue #49): next = the window's last value, in the series' units,
    so a reader can judge R² 0.93 against what no model at all reaches."""
    import numpy as np
    from frameval.workloads.lstm import quality
    from frameval.workloads.lstm.data import Windows
    x_val = np.array([[[0.0], [1.0]], [[1.0], [2.0]], [[2.0], [3.0]]], dtype=np.float32)
    w = Windows(x_val, np.zeros((3, 1), np.float32), x_val, np.array([[2.0], [3.0], [4.5]], np.float32),
                mean=300.0, std=2.0, source="t", sha256="t", n_points=5)
    assert quality.persistence(w).tolist() == [302.0, 304.0, 306.0]

    class Rec:
        def set(self, **kv):
            self.kv = kv
    model = tmp_path / "m"
    model.write_bytes(b"x")
    rec = Rec()
    quality.forecast(rec, w, np.array([2.0, 3.0, 4.0]), predict_s=0.1, model_path=model, load_s=0.01)
    truth = [304.0, 306.0, 309.0]
    assert rec.kv["series"]["val_persistence"] == [302.0, 304.0, 306.0] and rec.kv["series"]["val_true"] == truth
    assert rec.kv["persistence_r2"] == pytest.approx(quality.r2(truth, [302.0, 304.0, 306.0]))

"""The framework-neutral pieces every notebook calls: the parameter check, the
DCGAN grids and the LSTM's end-of-run figures."""
import json

import numpy as np
import pytest

from frameval import files, nb
from frameval.nb import quality

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


class Windows:  # the two things forecast reads from nb.load_co2's result
    def __init__(self, y_val, mean, std):
        self.y_val, self.mean, self.std = y_val, mean, std

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
    assert r["series"] == {"val_true": true_ppm, "val_pred": pred_ppm} and r["model_format"] == "test"
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

"""The LSTM's report media (frameval/report/media.py asks the record's
`media` hook): the validation prediction of every run beside the truth and the
persistence baseline. The report's code, not a kernel's: it runs in the
runner's environment, and the run cache key leaves it out (frameval/sources.py)."""
from __future__ import annotations

from ...report import fmt
from ...report.media import figure
from ...result import as_list


def prediction(wrows, S, charts, name, assets_dir, problems, out: dict) -> None:
    truth, base, base_r2, ser = None, None, None, []
    for w in wrows:
        s = w.result.series
        if w.ok and as_list(s.get("val_pred")):
            truth = truth or as_list(s.get("val_true"))
            ser.append((w.label, w.fw, w.mode, s["val_pred"]))
            if base is None and as_list(s.get("val_persistence")):  # the same data in every run
                base, base_r2 = as_list(s["val_persistence"]), fmt.num(w.result.raw.get("persistence_r2"))
    cap = S("chart_prediction")
    if base is not None and base_r2 is not None:
        cap = S("chart_prediction_baseline", r2=f"{base_r2:.4f}")
    out["prediction"] = figure(
        problems, S, cap, charts.prediction, "lstm-prediction", cap, S("axis_val_index"), S("axis_ppm"),
        S("series_truth"), truth, ser, (S("series_persistence", r2=f"{base_r2:.4f}"), base)
        if base is not None and base_r2 is not None else None)

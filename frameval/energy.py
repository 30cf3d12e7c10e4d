"""A GPU run's energy figures from its per-epoch counter readings (standard
library only: the notebooks' recorder and the report both use it, so an older
record is read by today's rule). The readings come from NVML's total-energy
counter at each epoch's edges (frameval/nb/measure.py, record.py)."""
from __future__ import annotations

# NVML refreshes its total-energy counter at the power-sampling period (tens to
# hundreds of ms): on the H100 a 48 ms DCGAN epoch read 0 J. Below this many
# seconds of steady epochs in all, no energy figure is given.
ENERGY_MIN_S = 1.0


def summary(epochs: list, idle_w) -> dict:
    """The energy figures from the per-epoch readings (record.py's energy_j and
    energy_above_idle_j): the mean over the steady epochs (all after the first,
    or the first where there is one), as their sum over their count, so the
    counter's coarse steps average out; {"why_none"} where they are too short."""
    got = [e for e in epochs if isinstance(e, dict) and isinstance(e.get("energy_j"), (int, float))]
    steady = got[1:] if len(got) > 1 else got
    if not steady:
        return {"why_none": "no epoch has an energy reading"}
    secs = sum(float(e.get("seconds") or 0) for e in steady)
    which = "steady" if len(got) > 1 else "first (one epoch only)"
    if secs < ENERGY_MIN_S:
        return {"epochs": which, "why_none": f"the {which} epochs lasted {secs:.3g} s in all, under the {ENERGY_MIN_S:g} s "
                                             "NVML's energy counter needs (it moves in steps of its power-sampling period)"}
    n = len(steady)
    out = {"epochs": which, "seconds": round(secs, 3), "epoch_j": round(sum(e["energy_j"] for e in steady) / n, 3)}
    if isinstance(idle_w, (int, float)):
        above = sum(e["energy_j"] - idle_w * float(e.get("seconds") or 0) for e in steady) / n
        samples = sum(int(e.get("samples") or 0) for e in steady) / n
        out["epoch_above_idle_j"] = round(above, 3)
        out["above_idle_mj_per_sample"] = round(1000 * above / samples, 4) if samples else None
    return out

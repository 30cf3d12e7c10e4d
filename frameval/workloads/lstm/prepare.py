"""The runner's preparation of the LSTM's data cache (its record's
`prepare_data` hook; frameval/data.py calls it beside the shared MNIST).
Runner side: statsmodels lives in the runner's environment, and the run cache
key leaves this file out (frameval/sources.py: the cache's checksum is in the
key instead)."""
from __future__ import annotations

from pathlib import Path

from ...data import save_cache
from ...paths import data_cache_dir


def caches(cache_dir=None) -> dict:
    return {"co2": prepare_co2(cache_dir)}


def prepare_co2(cache_dir=None, force=False) -> Path:
    """The runner prepares it once (statsmodels, in the runner's environment); notebooks only read it."""
    path = Path(cache_dir or data_cache_dir()) / "series-co2.npz"
    if path.exists() and path.with_suffix(".json").exists() and not force:
        return path
    import numpy as np
    import statsmodels
    from statsmodels.datasets import co2
    df = co2.load_pandas().data
    missing = int(df["co2"].isna().sum())
    s = df["co2"].interpolate(method="linear").to_numpy(dtype=np.float64)
    dates = np.array([d.strftime("%Y-%m-%d") for d in df.index])
    return save_cache(path, {"source": f"statsmodels {statsmodels.__version__} co2 (weekly Mauna Loa, "
                                  f"{len(s)} points, {missing} gaps filled linearly)",
                        "missing_filled": missing, "first": str(dates[0]), "last": str(dates[-1])},
                 values=s, dates=dates)

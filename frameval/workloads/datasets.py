"""The data sets the workloads train on, as the workload records see them:
their sizes, known before any cache is prepared (the runner checks parameter
combinations against them before it builds anything; a test compares them
with the prepared caches), the name of their cache file, and a draw of check
samples. Standard library only (see base.py); arrays come through the Kit."""
from __future__ import annotations

MNIST_SIZES = {"embedded": {"train": 4000, "test": 1000}, "full": {"train": 60000, "test": 10000}}
SERIES_POINTS = {"co2": 2284}   # statsmodels' weekly Mauna Loa CO2, gaps filled
SERIES_TRAIN_FRACTION = 0.75    # the LSTM's chronological split of its windows


# ------------------------------------------------------------------ MNIST
def mnist_name(params: dict) -> str:
    return f"mnist-{params.get('dataset', 'embedded')}"


def mnist_train(params: dict) -> int:
    return MNIST_SIZES.get(params.get("dataset", "embedded"), {}).get("train", 0)


def no_problem(params: dict) -> str:
    return ""


def mnist_too_few(params: dict, n_train: int) -> str:
    return f"dataset={params.get('dataset')} has {n_train} training samples"


def mnist_sample(kit, seed, size):
    """`size` embedded training images (x, labels) and where they came from;
    random images where the cache is missing (the check then says so)."""
    np = kit.np
    rng = np.random.RandomState([seed, 3])
    try:
        d = kit.data.load_mnist("embedded")
        idx = rng.permutation(len(d.y_train))[:size]
        return d.x_train[idx].copy(), d.y_train[idx].copy(), f"mnist embedded: {len(idx)} training images"
    except Exception:
        x = rng.uniform(-1, 1, (size, 1, 28, 28)).astype(np.float32)
        return x, rng.randint(0, 10, size).astype(np.int64), "random (MNIST cache missing)"


# ------------------------------------------------------------------ a series
def series_name(params: dict) -> str:
    return f"series-{params.get('series', 'co2')}"


def series_windows(params: dict) -> int:
    """How many windows the series gives (0 or less: too short)."""
    return SERIES_POINTS.get(params.get("series", "co2"), 0) - int(params.get("window", 20))


def series_train(params: dict) -> int:
    n = series_windows(params)
    return int(n * SERIES_TRAIN_FRACTION) if n > 0 else 0


def series_problem(params: dict) -> str:
    """The windows must leave a validation split of at least one window."""
    n = series_windows(params)
    if n <= 0 or n - int(n * SERIES_TRAIN_FRACTION) < 1:
        series, window = params.get("series", "co2"), int(params.get("window", 20))
        return (f"-p window={window}: the {series} series has {SERIES_POINTS.get(series, 0)} points, too few for "
                f"windows of {window} plus a validation split")
    return ""


def series_too_few(params: dict, n_train: int) -> str:
    return f"-p window={params.get('window')} leaves {n_train} training windows"


def labelled_batch(kit, x, y, seed, k):
    return {"x": x, "y": y}

"""The facts the report audits against (from docs/workloads.md). The parameter
counts come from `frameval.workloads` (SPEC_PARAM_COUNTS, LSTM_TWO_BIAS_COUNT)
so the spec is written down once; the numbers below are the fallback."""
from __future__ import annotations

FRAMEWORKS = ("torch", "tensorflow", "paddle", "mindspore", "megengine", "mxnet")
FRAMEWORK_NAMES = {"torch": "PyTorch", "tensorflow": "TensorFlow", "paddle": "PaddlePaddle",
                   "mindspore": "MindSpore", "megengine": "MegEngine", "mxnet": "MXNet", "jax": "JAX"}
# The pip package that carries each framework's version, to pick out of a freeze.
FRAMEWORK_PACKAGES = {"torch": ("torch",), "tensorflow": ("tensorflow", "tensorflow-cpu", "keras"),
                      "paddle": ("paddlepaddle", "paddlepaddle-gpu"), "mindspore": ("mindspore",),
                      "megengine": ("megengine",), "mxnet": ("mxnet", "mxnet-cu"), "jax": ("jax", "jaxlib", "flax", "optax")}
WORKLOADS = ("lenet", "dcgan", "lstm")
MODES = ("eager", "graph")

# Trainable parameters per network, as the spec gives them.
PARAM_COUNTS = {
    "lenet": {"lenet": 61_706},
    "dcgan": {"generator": 2_280_896, "discriminator": 212_865},
    "lstm": {"lstm": 4_385},
}
# Counts that differ from the spec for a structural reason, not a mismatch.
STRUCTURAL = {("lstm", "lstm", 4_513): "two_bias"}
# Where a network's result key is spelled differently by a notebook.
PARAM_ALIASES = {"generator": ("generator", "gen", "g", "netg"), "discriminator": ("discriminator", "disc", "d", "netd"),
                 "lenet": ("lenet", "model", "total"), "lstm": ("lstm", "model", "total")}

# Full-run values from the spec (shown in the audit's "spec" row).
SPEC_SETTINGS = {
    "lenet": {"batch_size": 64, "lr": 1e-3, "optimizer": "Adam", "betas": [0.9, 0.999], "adam_eps": 1e-8,
              "dtype": "float32", "epochs": 5},
    "dcgan": {"batch_size": 256, "lr": 1e-4, "optimizer": "Adam", "betas": [0.9, 0.999], "adam_eps": 1e-8,
              "dtype": "float32", "epochs": 50, "leaky_relu": 0.2, "bn_momentum": 0.9, "bn_eps": 1e-5,
              "dropout": 0.3, "noise_dim": 100},
    "lstm": {"batch_size": 32, "lr": 1e-3, "optimizer": "Adam", "betas": [0.9, 0.999], "adam_eps": 1e-8,
             "dtype": "float32", "epochs": 20, "window": 20, "hidden": 32},
}

# Epoch metrics per workload (as in frameval.results.EPOCH_METRICS).
EPOCH_METRICS = {"lenet": ("train_loss", "train_acc", "test_loss", "test_acc"),
                 "dcgan": ("gen_loss", "disc_loss"),
                 "lstm": ("train_mse", "val_mse")}

try:  # one definition for the project: frameval/workloads.py
    from .. import workloads as _wl  # type: ignore
    PARAM_COUNTS = getattr(_wl, "SPEC_PARAM_COUNTS", PARAM_COUNTS)
    if getattr(_wl, "LSTM_TWO_BIAS_COUNT", None):
        STRUCTURAL = {("lstm", "lstm", int(_wl.LSTM_TWO_BIAS_COUNT)): "two_bias"}
    FRAMEWORKS = tuple(getattr(_wl, "FRAMEWORKS", FRAMEWORKS))
except Exception:  # noqa: BLE001 - module absent or incomplete: keep the numbers above
    pass


def framework_name(fw: str) -> str:
    return FRAMEWORK_NAMES.get(fw, fw)


def order_key(fw: str) -> tuple:
    return (FRAMEWORKS.index(fw) if fw in FRAMEWORKS else len(FRAMEWORKS), fw)


def match_counts(workload: str, counts: dict) -> dict:
    """{spec network: recorded count or None} for a result's `param_counts`."""
    spec = PARAM_COUNTS.get(workload, {})
    counts = {str(k).lower(): v for k, v in (counts or {}).items()}
    out = {}
    for net in spec:
        val = None
        for alias in PARAM_ALIASES.get(net, (net,)):
            if alias in counts:
                val = counts[alias]
                break
        if val is None and len(spec) == 1 and len(counts) == 1:
            val = next(iter(counts.values()))
        out[net] = val
    return out


def audit_count(workload: str, net: str, value) -> str:
    """'ok', 'structural' (explained), 'mismatch' or 'missing'."""
    expected = PARAM_COUNTS.get(workload, {}).get(net)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value or value in (float("inf"), float("-inf")):
        return "missing"
    if int(value) == expected:
        return "ok"
    if (workload, net, int(value)) in STRUCTURAL:
        return "structural"
    return "mismatch"

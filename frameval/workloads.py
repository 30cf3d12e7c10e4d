"""What the matrix is made of: frameworks, workloads, modes, devices, the spec's
parameter counts, and the profiles that size a run.

A profile only overrides notebook parameters; the notebooks' own defaults are
the spec's full sizes, so `full` overrides nothing.
"""
from __future__ import annotations

# The seeds' six, then JAX (Flax + optax), the seventh.
FRAMEWORKS = ("torch", "tensorflow", "paddle", "mindspore", "megengine", "mxnet", "jax")
# Frameworks that run when named (--frameworks X) but are not in "all", the
# default matrix. Empty: JAX joined the default once the quick report of all
# seven fitted in ten minutes on 2 cores.
OPT_IN_FRAMEWORKS: tuple = ()
# How the report and the kernels' display names write each framework.
DISPLAY_NAMES = {"torch": "PyTorch", "tensorflow": "TensorFlow", "paddle": "PaddlePaddle", "mindspore": "MindSpore",
                 "megengine": "MegEngine", "mxnet": "MXNet", "jax": "JAX"}
ALIASES = {"flax": "jax", "pytorch": "torch", "tf": "tensorflow", "paddlepaddle": "paddle", "ms": "mindspore",
           "mge": "megengine", "mx": "mxnet"}
WORKLOADS = ("lenet", "dcgan", "lstm")
MODES = ("graph", "eager")
DEVICES = ("cpu", "gpu")

# The parameters every notebook of a workload declares, in every framework
# (ilkarman-style shared params). A test checks each notebook's parameters cell.
COMMON_PARAMS = ("mode", "device", "epochs", "batch_size", "lr", "seed", "threads", "max_train_samples", "out_dir")
WORKLOAD_PARAMS = {
    "lenet": COMMON_PARAMS + ("dataset",),
    "dcgan": COMMON_PARAMS + ("dataset",),
    "lstm": COMMON_PARAMS + ("window", "hidden", "series"),
}

# Trainable parameter counts from docs/workloads.md, per network.
SPEC_PARAM_COUNTS = {
    "lenet": {"lenet": 61706},
    "dcgan": {"generator": 2280896, "discriminator": 212865},
    "lstm": {"lstm": 4385},
}
# A framework that keeps two LSTM bias vectors has 128 more: structural, not a mismatch.
LSTM_TWO_BIAS_COUNT = 4513

# Quick: the whole default matrix (7 frameworks x 3 workloads, graph mode) in
# under ten minutes on a 2-core CPU, with equal work in every framework (the
# same samples, batch and epochs) and quality figures that mean something:
# LeNet on all 4,000 embedded training digits for 5 epochs (>= 95% test
# accuracy), the LSTM for 15 epochs (validation R^2 0.93; 0.96 at 20). The
# DCGAN trains 2 epochs of 128 samples (2 steps of 64 each; MegEngine, the
# slowest here, takes ~13 s a step on 2 cores): the first epoch carries the
# compile, the second is the steady one. Enough to time it, far from enough to
# draw digits (that takes about an epoch of full MNIST: the full profile, on a
# GPU). Measured idle with all seven: 9 min 47 s with the DCGAN at 3 epochs and
# the LSTM at 20, too close to the target; these sizes leave a margin.
PROFILES = {
    "quick": {
        "lenet": {"epochs": 5, "max_train_samples": 0},
        "dcgan": {"epochs": 2, "batch_size": 64, "max_train_samples": 128},
        "lstm": {"epochs": 15},
    },
    "full": {"lenet": {}, "dcgan": {}, "lstm": {}},
}
# Per-framework overrides of a profile. Empty on purpose: a smaller size for a
# slower framework makes its epochs incomparable (the report ranks per sample,
# but equal work is the honest default).
PROFILE_FRAMEWORK_OVERRIDES: dict = {}


def canonical_framework(name: str) -> str:
    return ALIASES.get(name.lower(), name.lower())

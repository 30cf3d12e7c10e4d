"""What the matrix is made of: frameworks, workloads, modes, devices, the spec's
parameter counts, and the profiles that size a run.

A profile only overrides notebook parameters; the notebooks' own defaults are
the spec's full sizes, so `full` overrides nothing.
"""
from __future__ import annotations

FRAMEWORKS = ("torch", "tensorflow", "paddle", "mindspore", "megengine", "mxnet")
ALIASES = {"pytorch": "torch", "tf": "tensorflow", "paddlepaddle": "paddle", "ms": "mindspore",
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

# Trainable parameter counts from workloads.md, per network.
SPEC_PARAM_COUNTS = {
    "lenet": {"lenet": 61706},
    "dcgan": {"generator": 2280896, "discriminator": 212865},
    "lstm": {"lstm": 4385},
}
# A framework that keeps two LSTM bias vectors has 128 more: structural, not a mismatch.
LSTM_TWO_BIAS_COUNT = 4513

# Quick: the whole default matrix (6 frameworks x 3 workloads, graph mode) in
# about ten minutes on a 2-core CPU. Three epochs, so that a steady epoch
# (median of epochs 2-3) exists apart from the warm-up one.
PROFILES = {
    "quick": {
        "lenet": {"epochs": 3, "max_train_samples": 1024},
        "dcgan": {"epochs": 3, "batch_size": 64, "max_train_samples": 256},
        "lstm": {"epochs": 3},
    },
    "full": {"lenet": {}, "dcgan": {}, "lstm": {}},
}
# Frameworks whose CPU kernels are far slower get a smaller quick size, which
# the report states (framework-notes.md: MindSpore's CPU convolutions run a
# reference kernel by default; MegEngine's DCGAN is ~10x PyTorch's on this CPU):
# fewer samples per epoch, the same batch size, so samples/s still compare.
PROFILE_FRAMEWORK_OVERRIDES = {
    "quick": {
        ("mindspore", "dcgan"): {"max_train_samples": 128},
        ("megengine", "dcgan"): {"max_train_samples": 128},
    },
}


def canonical_framework(name: str) -> str:
    return ALIASES.get(name.lower(), name.lower())

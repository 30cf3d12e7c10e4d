"""MegEngine: its record (standard library only; frameval/frameworks/__init__.py)."""
from ..record import Framework

FRAMEWORK = Framework(
    "megengine", "MegEngine", order=5, aliases=("mge",), packages=("megengine",), notes="megengine.md",
    # float32 as the framework computes by default, or strictly (nb/precision.py); both modes (#68)
    offers={"precision": {"cpu": ("default", "highest"), "gpu": ("default", "highest")},
            "mode": {"cpu": ("graph", "eager"), "gpu": ("graph", "eager")}},
    colour="#9467bd",
    cpu_kernel_env={"MGE_DEFAULT_DEVICE": "cpu0"},  # CPU kernel only; the GPU one picks gpu0
    workarounds={
        "lstm-weight-grad": r"class LSTM\(M\.Module\)",
        "max-pool-tied-grad": r"F\.indexing_one_hot\(",
        "batchnorm-backward-precision": r"fw\.BatchNorm2d\(",
        "mha-is-causal-cpu": r"fw\.causal_mask\(",
    })

"""MXNet: its record (standard library only; frameval/frameworks/__init__.py)."""
from ..record import Framework

FRAMEWORK = Framework(
    "mxnet", "MXNet", order=6, aliases=("mx",), packages=("mxnet", "mxnet-cu"), notes="mxnet.md",
    # float32 as the framework computes by default, or strictly (nb/precision.py); both modes (#68)
    offers={"precision": {"cpu": ("default", "highest"), "gpu": ("default", "highest")},
            "mode": {"cpu": ("graph", "eager"), "gpu": ("graph", "eager")}},
    high_api="mxnet.gluon.contrib.estimator.Estimator", colour="#17becf",
    workarounds={
        "deconv-1ch-input-grad": r"F\.Convolution\(",
        "adam-eps": r"fw\.Adam\(",
        "no-adamw": r"fw\.AdamW\(",
    })

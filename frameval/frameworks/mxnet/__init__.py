"""MXNet: its record (standard library only; frameval/frameworks/__init__.py)."""
from ..record import Framework

FRAMEWORK = Framework(
    "mxnet", "MXNet", order=6, aliases=("mx",), packages=("mxnet", "mxnet-cu"), notes="mxnet.md",
    # float32 as the framework computes by default, or strictly (nb/precision.py); bf16 on the CPU by
    # mxnet.contrib.amp (#69; its bfloat16 path is oneDNN, CPU only); both modes (#68)
    offers={"precision": {"cpu": ("default", "highest", "bf16"), "gpu": ("default", "highest")},
            "mode": {"cpu": ("graph", "eager"), "gpu": ("graph", "eager")}},
    high_api="mxnet.gluon.contrib.estimator.Estimator", colour="#17becf",
    workarounds={
        "deconv-1ch-input-grad": {
            "pattern": r"F\.Convolution\(",
            "summary": "oneDNN cannot compute the input gradient of a transposed convolution with one output channel (could not create a primitive descriptor for a reorder primitive); the generator's last layer is zero insertion + Convolution with the flipped kernel",
            "versions": "1.9.1",
            "found_by": "the DCGAN notebook's backward raised",
            "cost": "an ordinary convolution over the zero-inserted (4x larger) input",
            "substitute": "transposed convolution as zero insertion + Convolution",
        },
        "adam-eps": {
            "pattern": r"fw\.Adam\(",
            "summary": "Adam adds epsilon before the bias correction (epsilon scaled by 1/sqrt(1-b2^t), the Keras form); fw.Adam passes epsilon*sqrt(1-b2^t) to the same fused nd.adam_update, the spec's update",
            "versions": "1.9.1",
            "found_by": "the check's update errors (small gradients)",
            "cost": "none: the same fused kernel",
        },
        "no-adamw": {
            "pattern": r"fw\.AdamW\(",
            "summary": "mx.optimizer has no AdamW (Adam's wd is an L2 term through the gradient); fw.AdamW calls the fused contrib.adamw_update with the bias correction in its lr and eps*sqrt(1-b2^t), the spec's decoupled update",
            "versions": "1.9.1",
            "found_by": "the spec (AdamW, decoupled decay 0.1)",
            "cost": "none: one fused kernel per parameter, as Adam's",
        },
    })

"""TensorFlow: its record (standard library only; frameval/frameworks/__init__.py)."""
from ..record import Framework

FRAMEWORK = Framework(
    "tensorflow", "TensorFlow", order=2, aliases=("tf",), packages=("tensorflow", "tensorflow-cpu", "keras"),
    # float32 as the framework computes by default, or strictly (nb/precision.py); both modes (#68)
    offers={"precision": {"cpu": ("default", "highest"), "gpu": ("default", "highest")},
            "mode": {"cpu": ("graph", "eager"), "gpu": ("graph", "eager")}},
    notes="tensorflow.md", high_api="keras.Model.fit", colour="#ff8f00",
    kernel_env={"TF_CPP_MIN_LOG_LEVEL": "3"},
    # issue #48: TensorFlow takes all of a GPU's memory up front by default, so its peak read the pool's size
    gpu_kernel_env={"TF_FORCE_GPU_ALLOW_GROWTH": "true"},
    # numpy.random's pickling support, loaded in the first run
    warm_imports=("numpy.random",),
    workarounds={
        "adam-eps": r"fw\.SpecAdamW?\(",
        "same-padding-asymmetric": r"ZeroPadding2D\(2\)",
    })

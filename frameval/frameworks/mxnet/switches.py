"""MXNet's determinism switches (frameval/nb/determinism.py). It exposes no precision
switch: its TF32 follows the CUDA libraries' defaults and NVIDIA_TF32_OVERRIDE
(frameval/nb/precision.py). Standard library only."""
from frameval.nb.determinism import env_var

DETERMINISM = (
    ("MXNET_ENFORCE_DETERMINISM", env_var("MXNET_ENFORCE_DETERMINISM")),
    ("MXNET_CUDNN_AUTOTUNE_DEFAULT", env_var("MXNET_CUDNN_AUTOTUNE_DEFAULT")),
)
PRECISION = ()

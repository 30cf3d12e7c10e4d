"""MegEngine's determinism switch (frameval/nb/determinism.py). It exposes no precision
switch: its TF32 follows the CUDA libraries' defaults and NVIDIA_TF32_OVERRIDE
(frameval/nb/precision.py). Standard library only."""
from frameval.nb.determinism import attr

DETERMINISM = (("megengine.config.deterministic_kernel", attr("config.deterministic_kernel")),)
PRECISION = ()

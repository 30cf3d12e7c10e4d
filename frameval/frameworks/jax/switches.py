"""JAX's determinism and precision switches (read by frameval/nb/determinism.py and
frameval/nb/precision.py, whose docstrings say why). Standard library only: read
from the framework the notebook already imported."""
import os

from frameval.nb.precision import Switch


def _xla_deterministic(mod):
    return "--xla_gpu_deterministic_ops=true" in (os.environ.get("XLA_FLAGS") or "")


def _read_precision(m):
    # Unset (None) is "default": TF32 for float32 on NVIDIA GPUs since Ampere, full float32 on the CPU.
    v = m.config.jax_default_matmul_precision
    return "default" if v is None else v


def _write_precision(m, v):
    m.config.update("jax_default_matmul_precision", None if v == "default" else v)


DETERMINISM = (("XLA_FLAGS --xla_gpu_deterministic_ops", _xla_deterministic),)

PRECISION = (
    Switch("jax_default_matmul_precision", _read_precision, "highest", _write_precision,
           strict_also=("float32", "HIGHEST"), obeys_nvidia_override=False),
)

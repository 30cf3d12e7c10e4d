"""JAX (Flax + optax), the seventh: its record (standard library only; frameval/frameworks/__init__.py)."""
from ..record import Framework

FRAMEWORK = Framework(
    "jax", "JAX", order=7, aliases=("flax",), packages=("jax", "jaxlib", "flax", "optax"), notes="jax.md",
    # float32 as the framework computes by default, or strictly (nb/precision.py); both modes (#68)
    offers={"precision": {"cpu": ("default", "highest", "bf16"), "gpu": ("default", "highest")},
            "mode": {"cpu": ("graph", "eager"), "gpu": ("graph", "eager")}},
    colour="#6a3d9a",
    # issue #48: XLA preallocates 75% of a GPU's memory by default, so its peak read the
    # pool's size (JAX "184 MB, driver 64,416 MB" on the first H100 run), not what the run used
    gpu_kernel_env={"XLA_PYTHON_CLIENT_PREALLOCATE": "false"},
    # loaded lazily at the first jit (MLIR dialects): compiled at build time
    warm_imports=("jax.experimental.multihost_utils", "jaxlib.mlir.dialects.mhlo", "jaxlib.mlir.dialects.builtin",
                  "jaxlib.mlir.extras.meta"),
    workarounds={
        "flax-batchnorm-biased-var": {
            "pattern": r"fw\.SpecBatchNorm\(",
            "summary": "Flax's BatchNorm updates the running variance with the biased batch variance (E[x^2]-E[x]^2); fw.SpecBatchNorm keeps Flax's names and momentum with the two-pass, unbiased running update",
            "versions": "0.12.8 (flax)",
            "found_by": "the check's running-statistics comparison",
            "cost": "an own BatchNorm module (not measured)",
            "substitute": "SpecBatchNorm",
        },
    })

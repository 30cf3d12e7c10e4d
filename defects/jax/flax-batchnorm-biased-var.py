"""Flax: nn.BatchNorm updates the running variance with the biased batch variance.

The spec (and PyTorch) update the running variance with the unbiased batch
variance (m/(m-1)); Flax uses the biased one (and E[x^2]-E[x]^2 by default).
frameval's JAX DCGAN uses fw.SpecBatchNorm. A convention, not a crash: exit 1
while Flax's running variance is the biased one, 0 once it matches the spec.
"""
import os
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
import numpy as np
import jax
import jax.numpy as jnp
import flax
import flax.linen as nn

print("version:", jax.__version__, "flax", flax.__version__)
x = np.random.default_rng(0).standard_normal((8, 4, 4, 3)).astype(np.float32)  # m = 128 values per channel
bn = nn.BatchNorm(use_running_average=False, momentum=0.9, epsilon=1e-5)
variables = bn.init(jax.random.PRNGKey(0), jnp.asarray(x))
_, new = bn.apply(variables, jnp.asarray(x), mutable=["batch_stats"])
got = np.asarray(new["batch_stats"]["var"])
m = x.shape[0] * x.shape[1] * x.shape[2]
spec = 0.9 * 1.0 + 0.1 * x.reshape(-1, 3).astype(np.float64).var(axis=0, ddof=1)
biased = 0.9 * 1.0 + 0.1 * x.reshape(-1, 3).astype(np.float64).var(axis=0, ddof=0)
err = float(np.abs(got - spec).max())
print(f"running variance after one step (m = {m}): Flax {np.round(got, 6).tolist()}, "
      f"spec (unbiased) {np.round(spec, 6).tolist()}, biased {np.round(biased, 6).tolist()}")
present = err > 1e-5
print("defect", "present" if present else "fixed", f"(difference from the spec {err:.2e})")
sys.exit(1 if present else 0)

"""JAX's spelling of the common mistakes (frameval/envscripts/mistakes.py: what each is), one line
each where it can be: the line that raises here is "the user's line". numpy + standard library + the framework."""
from __future__ import annotations

import os

import numpy as np


def spellings():
    """{mistake id: the line that makes it, or the reason it cannot be made here}."""
    os.environ["JAX_PLATFORMS"] = "cpu"
    import jax
    import jax.numpy as jnp
    import optax
    from flax import linen as nn
    o, key = jnp.ones, jax.random.PRNGKey(0)

    def conv():
        m = nn.Conv(2, (3, 3))
        params = m.init(key, o((1, 8, 8, 6)))
        return m.apply(params, o((1, 8, 8, 4)))

    def dense_int():
        m = nn.Dense(2)
        params = m.init(key, o((1, 4)))
        return m.apply(params, o((1, 4), dtype=jnp.int32))
    return {"matmul_shapes": lambda: jnp.matmul(o((3, 4)), o((5, 6))),
            "conv_channels": conv,
            "reshape_size": lambda: o((2, 3)).reshape((4, 2)),
            "concat_shapes": lambda: jnp.concatenate([o((2, 3)), o((2, 4))], 0),
            "index_out_of_range": lambda: o(5)[7],
            "int_into_float_layer": dense_int,
            "backward_twice": "jax.grad is a function transform: no graph is kept between calls to run backward twice",
            "non_scalar_loss": lambda: jax.grad(lambda x: x * x)(o(3)),
            "negative_learning_rate": lambda: optax.sgd(-0.1)}

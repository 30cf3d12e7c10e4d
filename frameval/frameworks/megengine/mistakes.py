"""MegEngine's spelling of the common mistakes (frameval/envscripts/mistakes.py: what each is), one line
each where it can be: the line that raises here is "the user's line". numpy + standard library + the framework."""
from __future__ import annotations

import numpy as np


def spellings():
    """{mistake id: the line that makes it, or the reason it cannot be made here}."""
    import megengine as mge
    import megengine.functional as F
    import megengine.module as M
    from megengine.autodiff import GradManager

    def o(*shape, dtype="float32"):
        return mge.tensor(np.ones(shape, dtype=dtype))

    def backward_twice():
        x = mge.Parameter(np.ones(3, dtype="float32"))
        gm = GradManager().attach([x])
        with gm:
            loss = (x * x).sum()
            gm.backward(loss)
            gm.backward(loss)

    def non_scalar():
        x = mge.Parameter(np.ones(3, dtype="float32"))
        gm = GradManager().attach([x])
        with gm:
            gm.backward(x * x)
        return x.grad
    return {"matmul_shapes": lambda: F.matmul(o(3, 4), o(5, 6)),
            "conv_channels": lambda: M.Conv2d(6, 2, 3)(o(1, 4, 8, 8)),
            "reshape_size": lambda: F.reshape(o(2, 3), (4, 2)),
            "concat_shapes": lambda: F.concat([o(2, 3), o(2, 4)], 0),
            "index_out_of_range": lambda: o(5)[7],
            "int_into_float_layer": lambda: M.Linear(4, 2)(o(1, 4, dtype="int32")),
            "backward_twice": backward_twice, "non_scalar_loss": non_scalar,
            "negative_learning_rate": lambda: mge.optimizer.SGD(M.Linear(4, 2).parameters(), lr=-0.1)}

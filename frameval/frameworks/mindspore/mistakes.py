"""MindSpore's spelling of the common mistakes (frameval/envscripts/mistakes.py: what each is), one line
each where it can be: the line that raises here is "the user's line". numpy + standard library + the framework."""
from __future__ import annotations

import os


def spellings():
    """{mistake id: the line that makes it, or the reason it cannot be made here}."""
    os.environ.setdefault("GLOG_v", "4")
    import mindspore as ms
    from mindspore import nn, ops
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_device("CPU")

    def o(*shape, dtype=ms.float32):
        return ops.ones(shape, dtype)
    return {"matmul_shapes": lambda: ops.matmul(o(3, 4), o(5, 6)),
            "conv_channels": lambda: nn.Conv2d(6, 2, 3)(o(1, 4, 8, 8)),
            "reshape_size": lambda: ops.reshape(o(2, 3), (4, 2)),
            "concat_shapes": lambda: ops.cat((o(2, 3), o(2, 4)), 0),
            "index_out_of_range": lambda: o(5)[7],
            "int_into_float_layer": lambda: nn.Dense(4, 2)(o(1, 4, dtype=ms.int64)),
            "backward_twice": "ms.grad is a function transform: no graph is kept between calls to run backward twice",
            "non_scalar_loss": lambda: ms.grad(lambda x: x * x)(o(3)),
            "negative_learning_rate": lambda: nn.SGD(nn.Dense(4, 2).trainable_params(), learning_rate=-0.1)}

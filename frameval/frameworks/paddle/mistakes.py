"""PaddlePaddle's spelling of the common mistakes (frameval/envscripts/mistakes.py: what each is), one line
each where it can be: the line that raises here is "the user's line". numpy + standard library + the framework."""
from __future__ import annotations

import os


def spellings():
    """{mistake id: the line that makes it, or the reason it cannot be made here}."""
    os.environ.setdefault("GLOG_v", "0")
    os.environ.setdefault("GLOG_minloglevel", "2")
    import paddle
    paddle.set_device("cpu")
    o, nn = paddle.ones, paddle.nn

    def backward_twice():
        x = o([3])
        x.stop_gradient = False
        loss = (x * x).sum()
        loss.backward()
        loss.backward()

    def non_scalar():
        x = o([3])
        x.stop_gradient = False
        (x * x).backward()
        return x.grad
    return {"matmul_shapes": lambda: paddle.matmul(o([3, 4]), o([5, 6])),
            "conv_channels": lambda: nn.Conv2D(6, 2, 3)(o([1, 4, 8, 8])),
            "reshape_size": lambda: paddle.reshape(o([2, 3]), [4, 2]),
            "concat_shapes": lambda: paddle.concat([o([2, 3]), o([2, 4])], 0),
            "index_out_of_range": lambda: o([5])[7],
            "int_into_float_layer": lambda: nn.Linear(4, 2)(o([1, 4], dtype="int64")),
            "backward_twice": backward_twice, "non_scalar_loss": non_scalar,
            "negative_learning_rate": lambda: paddle.optimizer.SGD(learning_rate=-0.1,
                                                                   parameters=nn.Linear(4, 2).parameters())}

"""MXNet's spelling of the common mistakes (frameval/envscripts/mistakes.py: what each is), one line
each where it can be: the line that raises here is "the user's line". numpy + standard library + the framework."""
from __future__ import annotations


def spellings():
    """{mistake id: the line that makes it, or the reason it cannot be made here}."""
    import mxnet as mx
    from mxnet import autograd, gluon, nd
    o = nd.ones

    def layer(block, *shape, dtype="float32"):
        block.initialize()
        return block(nd.ones(shape, dtype=dtype)).wait_to_read()  # MXNet is asynchronous: the error shows at a read

    def backward_twice():
        x = o(3)
        x.attach_grad()
        with autograd.record():
            loss = (x * x).sum()
        loss.backward()
        loss.backward()

    def non_scalar():
        x = o(3)
        x.attach_grad()
        with autograd.record():
            y = x * x
        y.backward()
        return x.grad.asnumpy()
    return {"matmul_shapes": lambda: nd.dot(o((3, 4)), o((5, 6))).wait_to_read(),
            "conv_channels": lambda: layer(gluon.nn.Conv2D(2, 3, in_channels=6), 1, 4, 8, 8),
            "reshape_size": lambda: o((2, 3)).reshape((4, 2)).wait_to_read(),
            "concat_shapes": lambda: nd.concat(o((2, 3)), o((2, 4)), dim=0).wait_to_read(),
            "index_out_of_range": lambda: o(5)[7].wait_to_read(),
            "int_into_float_layer": lambda: layer(gluon.nn.Dense(2, in_units=4), 1, 4, dtype="int64"),
            "backward_twice": backward_twice, "non_scalar_loss": non_scalar,
            "negative_learning_rate": lambda: mx.optimizer.SGD(learning_rate=-0.1)}

"""TensorFlow's spelling of the common mistakes (frameval/envscripts/mistakes.py: what each is), one line
each where it can be: the line that raises here is "the user's line". numpy + standard library + the framework."""
from __future__ import annotations


def spellings():
    """{mistake id: the line that makes it, or the reason it cannot be made here}."""
    from frameval.frameworks.tensorflow import support  # noqa: F401 - its log silencing
    import tensorflow as tf
    o, L = tf.ones, tf.keras.layers

    def conv():
        layer = L.Conv2D(2, 3)
        layer.build((None, 8, 8, 6))
        return layer(o((1, 8, 8, 4)))

    def dense_int():
        layer = L.Dense(2)
        layer.build((None, 4))
        return layer(tf.ones((1, 4), dtype=tf.int64))

    def backward_twice():
        x = tf.Variable(o(3))
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(x * x)
        tape.gradient(loss, x)
        tape.gradient(loss, x)

    def non_scalar():
        x = tf.Variable(o(3))
        with tf.GradientTape() as tape:
            y = x * x
        return tape.gradient(y, x)
    return {"matmul_shapes": lambda: tf.matmul(o((3, 4)), o((5, 6))),
            "conv_channels": conv,
            "reshape_size": lambda: tf.reshape(o((2, 3)), (4, 2)),
            "concat_shapes": lambda: tf.concat([o((2, 3)), o((2, 4))], 0),
            "index_out_of_range": lambda: o(5)[7],
            "int_into_float_layer": dense_int,
            "backward_twice": backward_twice, "non_scalar_loss": non_scalar,
            "negative_learning_rate": lambda: tf.keras.optimizers.SGD(learning_rate=-0.1)}

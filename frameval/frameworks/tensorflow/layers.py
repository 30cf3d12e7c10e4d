"""TensorFlow's side of the layer timing (frameval/envscripts/layers.py): one
layer of a workload's step, built as the TensorFlow notebooks build it (Keras 3
layers on NHWC images for LeNet, the DCGAN and the LSTM; the GPT's layers
written out in tf ops over canonical-layout weights), run forward and
backward with `tf.GradientTape` (the notebooks' backward) for what one use of
it needs. Graph mode traces that function alone with `fw.compile_step`
(`tf.function`, no XLA), as the notebooks trace their whole step. TensorFlow's
eager executor is synchronous on the CPU (the runs' device), so run() returns
when its kernels have run. Standard library + the framework, loaded only in
its own environment."""
from __future__ import annotations

import math

import numpy as np

from frameval.frameworks.tensorflow import support as fw  # imports TensorFlow and Keras 3 quietly
import keras  # noqa: E402  (after support: it sets the Keras backend)
import tensorflow as tf  # noqa: E402
from keras import layers  # noqa: E402

HOW = {"graph": "tf.function (no XLA) of the layer's forward and GradientTape.gradient", "eager": "eager"}
LOSSES = ("softmax_ce", "bce_logits", "mse")


def setup(threads: int, mode: str) -> str:
    # as fw.set_threads, then fw.choose_device: both pools before the first op, every GPU hidden
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    fw.choose_device("cpu")
    return tf.__version__


def substitutes(mode: str) -> dict:
    # the DCGAN's workaround 'same-padding-asymmetric'; keyed by kind, so LeNet's stride-1 convolutions and
    # the DCGAN's stride-1 transposed one show a built-in cell too: there it is the run's own layer
    return {"conv2d": "at stride 2 (DCGAN D): ZeroPadding2D(2) + Conv2D 'valid', as Keras' 'same' pads 1 before "
                      "and 2 after; at stride 1 the run's layer is the built-in 'same'/'valid' itself",
            "tconv2d": "at stride 2 (DCGAN G): Conv2DTranspose 'valid' + Cropping2D(((2, 1), (2, 1))), as Keras' "
                       "'same' crops 1 at the start and 2 at the end; at stride 1 the built-in 'same' itself"}


def _arg(op, name, default=None):
    return op["args"].get(name, default)


def substitute(op: dict, mode: str):
    """Only the stride-2 convolutions are substituted: elsewhere the run's layer is the built-in itself."""
    return substitutes(mode).get(op["kind"]) if _arg(op, "stride", 1) == 2 else None


def _conv(op, builtin):
    """Conv2D as the notebooks pad it: 'valid', 'same' where that is the spec's padding (stride 1, pad k // 2),
    otherwise ZeroPadding2D + 'valid'; built-in: Keras' 'same' for any padding."""
    out, k, s, pad = _arg(op, "out"), _arg(op, "k"), _arg(op, "stride", 1), _arg(op, "pad", 0)
    conv = lambda padding: layers.Conv2D(out, k, s, padding, use_bias=_arg(op, "bias", True))  # noqa: E731
    if pad == 0:
        return [conv("valid")]
    if builtin or (s == 1 and 2 * pad == k - 1):
        return [conv("same")]
    return [layers.ZeroPadding2D(pad), conv("valid")]


def _tconv(op, builtin):
    """Conv2DTranspose as the DCGAN's generator builds it: 'same' at stride 1, the full 'valid' output cropped
    at stride 2 (crop `pad` at the start, pad - output_pad at the end); built-in: Keras' 'same'."""
    out, k, s, pad = _arg(op, "out"), _arg(op, "k"), _arg(op, "stride", 1), _arg(op, "pad", 0)
    tconv = lambda padding: layers.Conv2DTranspose(out, k, s, padding, use_bias=_arg(op, "bias", False))  # noqa: E731
    if builtin or (s == 1 and 2 * pad == k - 1):
        return [tconv("same")]
    end = pad - _arg(op, "output_pad", 0)
    return [tconv("valid"), layers.Cropping2D(((pad, end), (pad, end)))]


def _keras(op, builtin):
    """The Keras layers of LeNet, the DCGAN and the LSTM, in the order they run."""
    k = op["kind"]
    if k == "conv2d":
        return _conv(op, builtin)
    if k == "tconv2d":
        return _tconv(op, builtin)
    return [{"dense": lambda: layers.Dense(_arg(op, "out"), use_bias=_arg(op, "bias", True)),
             "batchnorm2d": lambda: layers.BatchNormalization(momentum=_arg(op, "momentum"), epsilon=_arg(op, "eps")),
             "leaky_relu": lambda: layers.LeakyReLU(_arg(op, "slope")),
             "tanh": lambda: layers.Activation("tanh"),
             "maxpool2d": lambda: layers.MaxPooling2D(_arg(op, "k")),
             "dropout": lambda: layers.Dropout(_arg(op, "rate")),
             "recurrent": lambda: layers.LSTM(_arg(op, "hidden"))}[k]()]


def _attention(heads):
    """The GPT notebook's attention after its q, k, v projection: scores, causal mask, softmax, weighted sum."""
    def f(x):
        b, t, c = tf.shape(x)[0], tf.shape(x)[1], x.shape[-1] // 3
        q, k, v = (tf.transpose(tf.reshape(z, (b, t, heads, c // heads)), (0, 2, 1, 3)) for z in tf.split(x, 3, -1))
        s = tf.matmul(q, k, transpose_b=True) / math.sqrt(c // heads)
        causal = tf.linalg.band_part(tf.ones((t, t)), -1, 0) > 0  # key <= query
        p = tf.nn.softmax(tf.where(causal, s, tf.fill(tf.shape(s), -1e30)), axis=-1)
        return tf.reshape(tf.transpose(tf.matmul(p, v), (0, 2, 1, 3)), (b, t, c))
    return f


def _written(op, owner):
    """The GPT's weighted layers as its notebook writes them: weights added to a Keras layer by name, in the
    canonical layouts (dense: (out, in)), applied with plain tf ops."""
    k, n = op["kind"], op["shape"][-1]
    add = lambda shape, init: owner.add_weight(shape=shape, initializer=init)  # noqa: E731
    if k == "embedding":
        wte, wpe = (add((_arg(op, rows), _arg(op, "width")), "random_normal") for rows in ("vocab", "context"))
        return lambda idx: tf.gather(wte, idx) + wpe[: tf.shape(idx)[1]]
    if k == "layernorm":
        w, b, eps = add((n,), "ones"), add((n,), "zeros"), _arg(op, "eps")

        def norm(x):
            mu = tf.reduce_mean(x, -1, keepdims=True)
            var = tf.reduce_mean(tf.square(x - mu), -1, keepdims=True)  # biased, as the spec's LayerNorm
            return (x - mu) * tf.math.rsqrt(var + eps) * w + b
        return norm
    w = add((_arg(op, "out"), n), "glorot_uniform")
    if not _arg(op, "bias", True):  # the output layer, tied to the token embedding
        return lambda x: tf.matmul(x, w, transpose_b=True)
    b = add((_arg(op, "out"),), "zeros")
    return lambda x: tf.matmul(x, w, transpose_b=True) + b


def _layer(op, builtin):
    """The layer as a callable of its input, and the Keras layers that own its weights."""
    k = op["kind"]
    plain = {"relu": keras.activations.relu,  # LeNet's activation="relu"
             "gelu": tf.nn.gelu,  # exact (erf), the GPT's
             "attention": _attention(_arg(op, "heads", 1))}
    if k in plain:
        return plain[k], []
    if k in ("embedding", "layernorm") or (k == "dense" and len(op["shape"]) == 2):  # the GPT's (T, N) inputs
        owner = layers.Layer()
        return _written(op, owner), [owner]
    stack = _keras(op, builtin)

    def fwd(x):
        for layer in stack:
            x = layer(x, training=True)  # the notebooks' training call: batch statistics, dropout on
        return x
    return fwd, stack


def _loss(k, target):
    """The notebooks' losses, mean over the batch (the DCGAN's bce fills its target, 1 for the fake's G step)."""
    if k == "softmax_ce":
        return lambda x: tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=target, logits=x))
    if k == "bce_logits":
        return lambda x: tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.fill(tf.shape(x), 1.0),
                                                                                logits=x))
    return lambda x: tf.reduce_mean(tf.square(x - target))


def _inputs(op, batch):
    """The layer's input (and a loss's target), the same numbers every run; images NHWC, as the notebooks."""
    rng = np.random.default_rng(0)
    shape = op["shape"]
    shape = (batch, *(shape[1:] + shape[:1] if len(shape) == 3 else shape))  # (C, H, W) -> (H, W, C)
    k = op["kind"]
    if k == "embedding":
        return tf.constant(rng.integers(0, _arg(op, "vocab"), shape), tf.int32), None
    x = tf.constant(rng.standard_normal(shape), tf.float32)
    if k == "softmax_ce":
        return x, tf.constant(rng.integers(0, shape[-1], shape[:-1]), tf.int32)
    if k == "mse":
        return x, tf.constant(rng.random(shape), tf.float32)
    return x, None


def build(op: dict, batch: int, input_grad: bool, weight_grad: bool, mode: str, builtin: bool = False):
    """run(): one forward of the layer at `batch`, and the backward the use needs."""
    keras.utils.set_random_seed(0)  # as the notebooks' setup: weights and dropout masks
    k = op["kind"]
    x, target = _inputs(op, batch)
    fwd, owners = (_loss(k, target), []) if k in LOSSES else _layer(op, builtin)
    probe = fwd(x)  # Keras builds its weights on the first call: eagerly, before any trace
    weights = [w for o in owners for w in o.trainable_variables] if weight_grad else []
    input_grad = input_grad and x.dtype.is_floating  # never for the embedding's ids
    rng = np.random.default_rng(1)
    upstream = tf.constant(rng.standard_normal(probe.shape), tf.float32) if probe.shape.rank else None  # loss: 1

    def step(x):
        wrt = ([x] if input_grad else []) + weights
        if not wrt:
            return fwd(x)
        # only what the use asks is watched (weights as the notebooks' tape watches them: when accessed); graph
        # mode prunes the gradients nobody asks for, eager runs each op's whole gradient function, as the eager
        # notebooks do (Conv2D's computes the input gradient for a weights-only use too)
        with tf.GradientTape(watch_accessed_variables=bool(weights)) as tape:
            if input_grad:
                tape.watch(x)
            out = fwd(x)
        # the output too: Grappler prunes a forward whose result nothing reads (a convolution's or a dense
        # layer's gradients do not read its output), and the layer would be timed without it
        return out, tape.gradient(out, wrt, output_gradients=upstream)

    fn = fw.compile_step(step, mode)
    return lambda: fn(x)

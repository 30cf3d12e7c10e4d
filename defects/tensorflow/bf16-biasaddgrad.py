"""TensorFlow: the CPU BiasAddGrad kernel at bfloat16 accumulates in bfloat16 (a measurement, no workaround: a bf16 run's bias gradients carry it).

Under Keras' mixed_bfloat16 policy a Conv2D or Dense layer adds its bias with
BiasAdd in bfloat16, and the bias gradient is BiasAddGrad of the bfloat16
output gradient: the sum over batch and positions. tf.reduce_sum of the same
bfloat16 tensor accumulates in float32 and rounds once (relative error about
2^-9); BiasAddGrad's error grows like sqrt(K) * 2^-8 with the reduction length
K, as a bfloat16 accumulator's does (here K = 64 * 7 * 7 = 3136, the DCGAN
discriminator's conv2 bias at batch 64: 0.26 relative). The DCGAN's eager bf16
check shows it (discriminator.conv2.bias 0.22; 0.024 in graph mode, whose
optimised graph was not examined further). Exit 1 while BiasAddGrad
is off the exact sum of its bfloat16 inputs by more than 4 * 2^-8 (float32
accumulation and one rounding stay near 2^-9), 0 once it accumulates in float32.
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf

print("version:", tf.__version__)
rng = np.random.default_rng(0)
g = tf.cast(tf.constant(rng.standard_normal((64, 7, 7, 128)).astype(np.float32) + 0.3), tf.bfloat16)
exact = tf.cast(g, tf.float64).numpy().sum((0, 1, 2))  # the exact sum of the bfloat16 values


def rel(x):
    return float(np.linalg.norm(tf.cast(x, tf.float64).numpy() - exact) / np.linalg.norm(exact))


with tf.device("/CPU:0"):
    bias_grad = rel(tf.raw_ops.BiasAddGrad(out_backprop=g, data_format="NHWC"))
    reduce_sum = rel(tf.reduce_sum(g, (0, 1, 2)))
print(f"bfloat16 (64, 7, 7, 128) summed over 3136 rows on the CPU: BiasAddGrad relative error {bias_grad:.3g}, "
      f"tf.reduce_sum {reduce_sum:.3g} (bfloat16's unit roundoff 2^-8 = {2 ** -8:.3g})")
present = bias_grad > 4 * 2 ** -8
print("defect", "present" if present else "fixed")
sys.exit(1 if present else 0)

"""TensorFlow: 'SAME' padding is asymmetric at stride 2 (1 before, 2 after for a 5x5 kernel on 28x28).

The spec's convolutions pad 2 on every side (PyTorch's padding=2). 'SAME' gives
the same output shape and different numbers. frameval's DCGAN pads explicitly
(ZeroPadding2D(2) + 'valid', and crops the transposed convolutions). This is
TensorFlow's documented convention, a trap rather than a bug: exit 1 while
'SAME' differs from the symmetric padding, 0 if it ever matches.
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf

print("version:", tf.__version__)
rng = np.random.default_rng(0)
x = tf.constant(rng.standard_normal((2, 28, 28, 3)).astype(np.float32))
k = tf.constant(rng.standard_normal((5, 5, 3, 4)).astype(np.float32))
same = tf.nn.conv2d(x, k, strides=2, padding="SAME")
sym = tf.nn.conv2d(x, k, strides=2, padding=[[0, 0], [2, 2], [2, 2], [0, 0]])
diff = float(tf.reduce_max(tf.abs(same - sym)))
print(f"5x5 stride-2 conv on 28x28: 'SAME' {tuple(same.shape)}, symmetric pad 2 {tuple(sym.shape)}, "
      f"max difference {diff:.3g}")
present = same.shape == sym.shape and diff > 1e-4
print("defect", "present" if present else "fixed")
sys.exit(1 if present else 0)

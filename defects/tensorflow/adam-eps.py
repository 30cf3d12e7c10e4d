"""Keras: Adam adds epsilon before the bias correction, not the spec's (PyTorch's) form.

keras.optimizers.Adam computes lr*sqrt(1-b2^t)/(1-b1^t) * m/(sqrt(v) + eps) (and
defaults to eps 1e-7): the spec's update with epsilon scaled by 1/sqrt(1-b2^t).
Where gradients are small the steps differ. frameval's notebooks use
fw.SpecAdam (epsilon * sqrt(1-b2^t) into the same kernel). Exit 1 while Keras'
Adam differs from the spec's, 0 once it matches.
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf
import keras

print("version:", tf.__version__, "keras", keras.__version__)
lr, b1, b2, eps, g = 0.1, 0.9, 0.999, 1e-8, 1e-8
w = tf.Variable([0.0], dtype=tf.float32)
opt = keras.optimizers.Adam(learning_rate=lr, beta_1=b1, beta_2=b2, epsilon=eps)
opt.apply_gradients([(tf.constant([g], tf.float32), w)])
got = -float(w.numpy()[0])
spec = lr * g / (np.sqrt(g * g) + eps)
print(f"one Adam step with gradient {g:g}, lr {lr}, eps {eps:g}: Keras moves the weight by {got:.4g}, "
      f"the spec's Adam by {spec:.4g}")
present = abs(got - spec) > 1e-3 * spec
print("defect", "present" if present else "fixed")
sys.exit(1 if present else 0)

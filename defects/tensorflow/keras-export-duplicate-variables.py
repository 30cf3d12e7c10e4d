"""Keras: Model.export (keras.export.ExportArchive) stores every weight twice in the SavedModel.

On the TensorFlow backend the archive tracks the model's Keras variables
(`variables/N` in the checkpoint) and, apart, the tf.Variables inside them that
the endpoint's function captures (`_all_variables/M`). The two are different
trackable objects over the same buffer, so the checkpoint's de-duplication by
object misses them: the SavedModel's variables file is twice the weights, and a
process that loads it restores two buffers per weight (keras-team/keras#23553).
frameval's TensorFlow export (frameval/frameworks/tensorflow/support.py) writes
the same SavedModel with tf.saved_model.save of a tf.Module that tracks the
tf.Variables alone. Exit 1 while Model.export's checkpoint holds more values
than the model has, 0 once it holds each weight once.
"""
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["KERAS_BACKEND"] = "tensorflow"
import numpy as np
import tensorflow as tf
import keras

print("version:", tf.__version__, "keras", keras.__version__)
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4), keras.layers.BatchNormalization(),
                          keras.layers.Dense(3)])


def stored(path):
    """(values in the SavedModel's checkpoint, its variables file in bytes)"""
    shapes = tf.train.load_checkpoint(os.path.join(path, "variables", "variables")).get_variable_to_shape_map()
    values = sum(int(np.prod(s)) for k, s in shapes.items() if k != "_CHECKPOINTABLE_OBJECT_GRAPH")
    size = sum(os.path.getsize(os.path.join(path, "variables", f)) for f in os.listdir(os.path.join(path, "variables")))
    return values, size


with tempfile.TemporaryDirectory() as tmp:
    exported = os.path.join(tmp, "export")
    model.export(exported, format="tf_saved_model", verbose=False)
    keras_values, keras_bytes = stored(exported)
    module = tf.Module()  # the same function, the tf.Variables tracked alone
    module.tf_variables = [v.value for v in model.weights]
    module.serve = tf.function(lambda x: model(x, training=False),
                               input_signature=[tf.TensorSpec([None, 8], tf.float32)], autograph=False)
    saved = os.path.join(tmp, "saved")
    tf.saved_model.save(module, saved)
    tf_values, tf_bytes = stored(saved)
weights = model.count_params()
print(f"a model of {weights} weight values: Model.export's checkpoint holds {keras_values} values ({keras_bytes} "
      f"bytes), tf.saved_model.save of the tf.Variables {tf_values} ({tf_bytes} bytes)")
present = keras_values > weights
print("defect", "present" if present else "fixed")
sys.exit(1 if present else 0)

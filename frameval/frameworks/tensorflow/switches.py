"""TensorFlow's determinism and precision switches (read by frameval/nb/determinism.py and
frameval/nb/precision.py, whose docstrings say why). Standard library only: read
from the framework the notebook already imported."""
from frameval.nb.determinism import env_var
from frameval.nb.precision import Switch


def _op_determinism(mod):
    from tensorflow.python.framework import config  # private, but the only reader there is
    return config.is_op_determinism_enabled()


DETERMINISM = (
    ("tf.config.experimental.enable_op_determinism", _op_determinism),
    ("TF_DETERMINISTIC_OPS", env_var("TF_DETERMINISTIC_OPS")),
    ("TF_ENABLE_ONEDNN_OPTS", env_var("TF_ENABLE_ONEDNN_OPTS")),
)

PRECISION = (
    Switch("tf.config.experimental.tensor_float_32_execution_enabled()",
           lambda m: m.config.experimental.tensor_float_32_execution_enabled(), False,
           lambda m, v: m.config.experimental.enable_tensor_float_32_execution(v)),
)

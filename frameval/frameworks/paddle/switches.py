"""PaddlePaddle's determinism and precision switches (read by frameval/nb/determinism.py and
frameval/nb/precision.py, whose docstrings say why). Standard library only: read
from the framework the notebook already imported."""
from frameval.nb.precision import Switch


def _flag(flag):
    return lambda mod: mod.get_flags([flag])[flag]


def _core_switch(name):
    return Switch(f"paddle.base.core.{name}()", lambda m: getattr(m.base.core, name)(), False,
                  lambda m, v: getattr(m.base.core, name.replace("get_", "set_"))(v))


DETERMINISM = (
    ("FLAGS_cudnn_deterministic", _flag("FLAGS_cudnn_deterministic")),
    ("FLAGS_cpu_deterministic", _flag("FLAGS_cpu_deterministic")),
    ("FLAGS_embedding_deterministic", _flag("FLAGS_embedding_deterministic")),
)

PRECISION = (_core_switch("get_cublas_switch"), _core_switch("get_cudnn_switch"))

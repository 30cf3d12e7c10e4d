"""MindSpore's determinism and precision switches (read by frameval/nb/determinism.py and
frameval/nb/precision.py, whose docstrings say why). Standard library only: read
from the framework the notebook already imported."""
from frameval.nb.precision import SET_HERE, Switch, path


def _gpu_precision(name, default):
    # MindSpore has setters only (mindspore.device_context.gpu.op_precision); the
    # value read back is what frameval set, else the documented default.
    def write(m, v):
        conf = path(m, "device_context.gpu.op_precision")
        if not hasattr(conf, "GPUOpPrecisionConf"):  # a CPU build: its setter would ignore the first call, then fail
            raise RuntimeError("MindSpore's CPU build has no GPUOpPrecisionConf: no GPU precision to set")
        getattr(conf, name)(v)
        SET_HERE[("mindspore", name)] = v
    return Switch(f"mindspore.device_context.gpu.op_precision.{name}",
                  lambda m: SET_HERE.get(("mindspore", name), default), False, write, default=default)


DETERMINISM = (("mindspore.set_context(deterministic=)", lambda mod: mod.get_context("deterministic")),)

PRECISION = (_gpu_precision("matmul_allow_tf32", False), _gpu_precision("conv_allow_tf32", True))

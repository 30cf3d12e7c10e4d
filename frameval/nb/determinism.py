"""Each framework's determinism switches, read as the run had them (issue #41).

frameval never turns them on: the report measures frameworks as users run
them, and the reproduce comparison measures whether the same seed gives the
same losses twice. This records what was set, so that a reader who finds a
framework not bit-identical knows which switch it ran without. What each
switch would change is documented in docs/reproduce.md ("Determinism").

Read in the kernel at record time, from the framework the notebook has already
imported (`sys.modules`: nothing is imported here), so numpy + standard library
only. A switch that cannot be read is None ("not readable"), never False.
"""
from __future__ import annotations

import os
import sys

UNSET = "unset"  # an environment variable the run did not have: the framework's default


def _env(name):
    return lambda mod: os.environ.get(name, UNSET)


def _call(path):
    """A zero-argument function of the framework module at dotted `path`, called."""
    def read(mod):
        obj = mod
        for part in path.split("."):
            obj = getattr(obj, part)
        return obj()
    return read


def _attr(path):
    def read(mod):
        obj = mod
        for part in path.split("."):
            obj = getattr(obj, part)
        return obj
    return read


def _tf_op_determinism(mod):
    from tensorflow.python.framework import config  # private, but the only reader there is
    return config.is_op_determinism_enabled()


def _paddle_flag(flag):
    return lambda mod: mod.get_flags([flag])[flag]


def _mindspore_context(mod):
    return mod.get_context("deterministic")


def _xla_deterministic(mod):
    flags = os.environ.get("XLA_FLAGS") or ""
    return "--xla_gpu_deterministic_ops=true" in flags


# framework -> (the module it is imported as, [(switch, reader)]). The switches'
# meanings: docs/reproduce.md, one row each.
SWITCHES = {
    "torch": ("torch", [
        ("torch.use_deterministic_algorithms", _call("are_deterministic_algorithms_enabled")),
        ("torch.backends.cudnn.deterministic", _attr("backends.cudnn.deterministic")),
        ("torch.backends.cudnn.benchmark", _attr("backends.cudnn.benchmark")),
        ("CUBLAS_WORKSPACE_CONFIG", _env("CUBLAS_WORKSPACE_CONFIG")),
    ]),
    "tensorflow": ("tensorflow", [
        ("tf.config.experimental.enable_op_determinism", _tf_op_determinism),
        ("TF_DETERMINISTIC_OPS", _env("TF_DETERMINISTIC_OPS")),
        ("TF_ENABLE_ONEDNN_OPTS", _env("TF_ENABLE_ONEDNN_OPTS")),
    ]),
    "paddle": ("paddle", [
        ("FLAGS_cudnn_deterministic", _paddle_flag("FLAGS_cudnn_deterministic")),
        ("FLAGS_cpu_deterministic", _paddle_flag("FLAGS_cpu_deterministic")),
        ("FLAGS_embedding_deterministic", _paddle_flag("FLAGS_embedding_deterministic")),
    ]),
    "mindspore": ("mindspore", [("mindspore.set_context(deterministic=)", _mindspore_context)]),
    "megengine": ("megengine", [("megengine.config.deterministic_kernel", _attr("config.deterministic_kernel"))]),
    "mxnet": ("mxnet", [
        ("MXNET_ENFORCE_DETERMINISM", _env("MXNET_ENFORCE_DETERMINISM")),
        ("MXNET_CUDNN_AUTOTUNE_DEFAULT", _env("MXNET_CUDNN_AUTOTUNE_DEFAULT")),
    ]),
    "jax": ("jax", [("XLA_FLAGS --xla_gpu_deterministic_ops", _xla_deterministic)]),
}


def _plain(v):
    """A switch's value as JSON holds it: bools, numbers and text as they are, the rest as text."""
    return v if v is None or isinstance(v, (bool, int, float, str)) else str(v)


def switches(framework: str) -> dict:
    """{switch: its value in this process} for `framework` (None: not readable,
    e.g. the framework not imported; "unset": a variable the process did not have)."""
    module_name, table = SWITCHES.get(framework, ("", []))
    mod = sys.modules.get(module_name)
    out = {}
    for name, read in table:
        try:
            out[name] = _plain(read(mod))
        except Exception:  # noqa: BLE001 - a reader an old or new version lacks: not readable, never a crash
            out[name] = None
    return out

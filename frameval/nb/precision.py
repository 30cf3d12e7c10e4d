"""Each framework's precision switches: read back as the run had them, and set
to full float32 around the numerical check (issue #47).

Why: on an NVIDIA GPU since Ampere several frameworks compute float32
convolutions and matmuls in TF32 by default (10-bit mantissa). On the first
H100 run that failed 3 of 6 checks against the float64 reference, and a second
command with TF32 off reused three TF32 results. So:
- the check always runs at full float32 (`strict`), whatever training runs at;
- `precision = "highest"` (-p precision=highest) trains at full float32 too;
- result.json records the math mode training ran in (`mode`), beside the
  determinism switches (nb/determinism.py); each framework's switches of both
  kinds are its folder's part (frameval/frameworks/<fw>/switches.py);
- the runner's cache key hashes the variables in ENV (execute.key_parts), so a
  result made under other arithmetic is never reused.

Switches are read from the framework the notebook already imported
(`sys.modules`), so this module needs only the standard library. A switch that
acts only on CUDA devices is left alone on the CPU: changing it there would
change nothing but could make a compiled step recompile.
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Any, Callable

from .. import frameworks
from ..arithmetic import ENV, env_part
from ..catalog import PRECISIONS  # noqa: F401 - -p precision=...: the framework's defaults, or full float32
from .determinism import framework_module

UNSET = "unset"


@dataclass(frozen=True)
class Switch:
    name: str                       # as the framework's documentation spells it
    read: Callable[[Any], Any]      # framework module -> value
    strict: Any                     # the value meaning full float32
    set: Callable[[Any, Any], None] | None = None  # (module, value); None: no setter
    cuda_only: bool = True          # acts only on CUDA devices (TF32)
    default: Any = None             # a setter-only switch: its documented default
    strict_also: tuple = ()         # other spellings of full float32
    # NVIDIA_TF32_OVERRIDE=0 reaches only cuBLAS and cuDNN. XLA's own GPU kernels
    # (Triton GEMM fusions) ignore it: on the H100 (2026-11-27), under the override,
    # JAX's default precision still left LeNet's forward 7.0e-4 off the float64
    # reference (4.3e-7 at "highest"), and its check failed as at the defaults.
    obeys_nvidia_override: bool = True


def path(mod, dotted):
    for part in dotted.split("."):
        mod = getattr(mod, part)
    return mod


def attr_switch(prefix, dotted, strict, cuda_only=True):
    """A switch that is an attribute of the framework module at `dotted`, set by assignment."""
    owner, _, leaf = dotted.rpartition(".")
    return Switch(f"{prefix}.{dotted}", lambda m: path(m, dotted), strict,
                  lambda m, v: setattr(path(m, owner) if owner else m, leaf, v), cuda_only)


SET_HERE: dict = {}  # setter-only switches: what frameval set in this process


def table(framework: str) -> tuple:
    """[Switch]: the framework's switches part (frameworks/<fw>/switches.py: PRECISION).
    Frameworks whose TF32 use no switch of their own exposes have none: they are
    governed by NVIDIA_TF32_OVERRIDE alone."""
    part = frameworks.part_or_none(framework, "switches")
    return tuple(getattr(part, "PRECISION", ()))


NOT_EXPOSED = "not exposed: TF32 follows the CUDA libraries' defaults and NVIDIA_TF32_OVERRIDE"


def _plain(v):
    return v if v is None or isinstance(v, (bool, int, float, str)) else str(v)


def switches(framework: str) -> dict:
    """{switch: its value in this process}; None where it cannot be read."""
    mod = framework_module(framework)
    out = {}
    for sw in table(framework):
        try:
            out[sw.name] = _plain(sw.read(mod))
        except Exception:  # noqa: BLE001 - a version without the switch: not readable, never a crash
            out[sw.name] = None
    return out


def _is_strict(sw, value) -> bool:
    return value == sw.strict or value in sw.strict_also


def _acts(sw, device: str, environ) -> bool:
    """Whether the switch can change arithmetic here: a TF32 switch does nothing on the
    CPU, nor, where it governs cuBLAS and cuDNN, under NVIDIA_TF32_OVERRIDE=0 (which
    torch's documentation says wins)."""
    if not sw.cuda_only:
        return True
    return device == "gpu" and (not sw.obeys_nvidia_override or environ.get("NVIDIA_TF32_OVERRIDE") != "0")


def lowered(framework: str, device: str, environ=None) -> list:
    """The switches that let this process compute float32 below full precision on `device`."""
    env = os.environ if environ is None else environ
    values = switches(framework)
    return [sw.name for sw in table(framework) if _acts(sw, device, env) and values.get(sw.name) is not None
            and not _is_strict(sw, values[sw.name])]


def effective(framework: str, device: str, environ=None) -> str:
    """One phrase: what float32 arithmetic this process runs at on `device`."""
    env = os.environ if environ is None else environ
    low = lowered(framework, device, env)
    fpmath = env.get("ONEDNN_DEFAULT_FPMATH_MODE") or env.get("DNNL_DEFAULT_FPMATH_MODE")
    if fpmath and fpmath.upper() not in ("STRICT", ""):
        low.append(f"ONEDNN_DEFAULT_FPMATH_MODE={fpmath}")
    if low:
        return "below float32 allowed: " + ", ".join(low)
    if device == "gpu" and env.get("NVIDIA_TF32_OVERRIDE") != "0" and not table(framework):
        return "float32, TF32 possible (" + NOT_EXPOSED + ")"
    return "float32"


def mode(framework: str, device: str, precision: str = "default", environ=None) -> dict:
    """What result.json records as the math mode the training ran in."""
    env = os.environ if environ is None else environ
    return {"precision": precision, "effective": effective(framework, device, env),
            "switches": switches(framework) if table(framework) else {"(framework)": NOT_EXPOSED},
            "env": {k: env.get(k, UNSET) for k in ("NVIDIA_TF32_OVERRIDE", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
                                                   "JAX_DEFAULT_MATMUL_PRECISION", "ONEDNN_DEFAULT_FPMATH_MODE")},
            "other_env": {k: v for k, v in env_part(env).items()
                          if k not in ("NVIDIA_TF32_OVERRIDE", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
                                       "JAX_DEFAULT_MATMUL_PRECISION", "ONEDNN_DEFAULT_FPMATH_MODE")}}


def make_strict(framework: str, device: str, environ=None) -> list:
    """Sets every switch that lowers float32 on `device` to full float32;
    -> [(switch, its value before)] in the order set (restore in reverse)."""
    env = os.environ if environ is None else environ
    mod = framework_module(framework)
    values = switches(framework)
    changed = []
    for sw in table(framework):
        before = values.get(sw.name)
        if sw.set is None or before is None or not _acts(sw, device, env) or _is_strict(sw, before):
            continue
        sw.set(mod, sw.strict)
        changed.append((sw.name, before))
    return changed


def restore(framework: str, changed: list) -> None:
    mod = framework_module(framework)
    by_name = {sw.name: sw for sw in table(framework)}
    for name, before in reversed(changed):
        by_name[name].set(mod, before)


@contextlib.contextmanager
def strict(framework: str, device: str):
    """Full float32 inside (the numerical check), the run's own settings after."""
    changed = make_strict(framework, device)
    try:
        yield changed
    finally:
        restore(framework, changed)

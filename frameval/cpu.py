"""What this CPU is, and which environment variables cap the instruction set
its maths libraries may use (standard library only: the runner's probe, the
run cache key and the notebooks' recorder all read it).

Some machines set such caps on purpose: this project's development machines
export `OPENBLAS_CORETYPE=Haswell` so that old OpenBLAS builds do not crash on
newer CPUs, and the MindSpore notebooks set `ONEDNN_MAX_CPU_ISA=AVX2` (a defect
workaround). A cap silently halves a GEMM on an AVX-512 CPU, so it is never
left unsaid: the probe measures the machine with every cap removed, the runs
keep the user's environment as it is, and both record what was in effect.
"""
from __future__ import annotations

import hashlib
import os
import platform
import re

# Variables that pin a library's thread pool: the recorder sets them before a
# framework is imported so every framework runs on the same number of threads,
# and the probes set them in their child processes.
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "BLIS_NUM_THREADS",
               "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "NUMEXPR_NUM_THREADS")

# Named caps: the variable, the library that reads it, what it does, and the
# machines (platform.machine(), normalised by `arch`) where that library reads
# it; None: every machine. A cap whose library cannot load here acts on nothing:
# NVPL is NVIDIA's Arm BLAS, MKL's code paths are Intel x86 ones.
X86, ARM = ("x86_64",), ("aarch64",)
CAP_VARS = {
    "OPENBLAS_CORETYPE": ("OpenBLAS", "forces the kernel set of a named core (Haswell = AVX2 kernels)", None),
    "OPENBLAS_L2_SIZE": ("OpenBLAS", "overrides the L2 cache size its blocking assumes", None),
    "MKL_ENABLE_INSTRUCTIONS": ("MKL", "the newest instruction set MKL may dispatch to", X86),
    "MKL_DEBUG_CPU_TYPE": ("MKL", "forces MKL's code path for a CPU type", X86),
    "MKL_CBWR": ("MKL", "conditional numerical reproducibility: pins a code path", X86),
    "ONEDNN_MAX_CPU_ISA": ("oneDNN", "the newest instruction set oneDNN may use", None),
    "DNNL_MAX_CPU_ISA": ("oneDNN", "the newest instruction set oneDNN may use (old name)", None),
    "ONEDNN_CPU_ISA_HINTS": ("oneDNN", "instruction-set hints", None),
    "DNNL_CPU_ISA_HINTS": ("oneDNN", "instruction-set hints (old name)", None),
    "ATEN_CPU_CAPABILITY": ("PyTorch", "the ATen kernels' instruction set (default, avx2, avx512)", None),
    "NPY_DISABLE_CPU_FEATURES": ("numpy", "CPU features numpy's own kernels must not use", None),
    "BLIS_ARCH_TYPE": ("BLIS", "forces BLIS's kernels of a named architecture", None),
    "NVPL_BLAS_DEBUG_CPU_TYPE": ("NVPL BLAS", "forces NVPL's code path for a CPU type", ARM),
}
_ARCH = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}


def arch(machine: str | None = None) -> str:
    """This machine's architecture as CAP_VARS names it (x86_64, aarch64, ...)."""
    m = (machine or platform.machine() or "").lower()
    return _ARCH.get(m, m)


def acts_here(name: str, machine: str | None = None) -> bool:
    """Whether the library that reads cap `name` can run on this machine."""
    where = CAP_VARS.get(name, ("", "", None))[2]
    return where is None or arch(machine) in where


# Any other variable whose name says it selects an instruction set or a core type.
_CAP_NAME = re.compile(r"(MAX_CPU_ISA|CPU_ISA|CORETYPE|CPU_TYPE|CPU_CAPABILITY|ARCH_TYPE|ENABLE_INSTRUCTIONS|"
                       r"DISABLE_CPU_FEATURES)$")
# ...and XLA's flag of the same kind, inside XLA_FLAGS.
_XLA_CAP = re.compile(r"--xla_cpu_max_isa=\S+")


def _all_caps(env) -> dict:
    return {k: env[k] for k in env if k in CAP_VARS or _CAP_NAME.search(k)}


def caps(environ=None, machine: str | None = None) -> dict:
    """{variable: value} of every instruction-set cap in `environ` (default:
    os.environ) that acts on this machine (`acts_here`)."""
    env = os.environ if environ is None else environ
    out = {k: v for k, v in _all_caps(env).items() if acts_here(k, machine)}
    xla = _XLA_CAP.findall(env.get("XLA_FLAGS", ""))
    if xla:
        out["XLA_FLAGS"] = " ".join(xla)
    return dict(sorted(out.items()))


def inert_caps(environ=None, machine: str | None = None) -> dict:
    """The caps set in `environ` whose library cannot run on this machine: recorded, never listed as caps."""
    env = os.environ if environ is None else environ
    return dict(sorted((k, v) for k, v in _all_caps(env).items() if not acts_here(k, machine)))


def uncapped(environ=None) -> dict:
    """A copy of `environ` with every cap removed (XLA_FLAGS keeps its other flags)."""
    env = dict(os.environ if environ is None else environ)
    for k in caps(env):
        if k == "XLA_FLAGS":
            rest = _XLA_CAP.sub("", env[k]).strip()
            if rest:
                env[k] = rest
                continue
        env.pop(k, None)
    return env


def describe(name: str) -> str:
    """'OpenBLAS: forces the kernel set ...' for a named cap, else a generic line."""
    lib, what, _ = CAP_VARS.get(name, ("", "names an instruction set or core type", None))
    return f"{lib}: {what}" if lib else what


def _cpuinfo() -> dict:
    """The first processor's fields of /proc/cpuinfo ({} elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            text = f.read().split("\n\n", 1)[0]
    except OSError:
        return {}
    return {k.strip(): v.strip() for k, _, v in (ln.partition(":") for ln in text.splitlines()) if k.strip()}


# The instruction sets a reader of a GEMM figure wants to know about, newest first.
ISA_FLAGS = ("amx_tile", "amx_bf16", "avx512_bf16", "avx512_vnni", "avx512f", "avx2", "fma", "avx", "sse4_2", "asimd", "sve")


def model() -> str:
    info = _cpuinfo()
    return info.get("model name") or info.get("Model") or platform.processor() or platform.machine() or "unknown"


# The units that compute bfloat16 products natively (#69); without them a framework's bfloat16
# is emulated in float32 arithmetic (or ARM's bf16 extension, which the kernel calls "bf16").
BF16_FLAGS = ("amx_bf16", "avx512_bf16", "bf16")


def bf16_units() -> list:
    """The bfloat16 instruction sets this CPU reports ([]: bfloat16 is emulated here)."""
    flags = set((_cpuinfo().get("flags") or _cpuinfo().get("Features") or "").split())
    return [f for f in BF16_FLAGS if f in flags]


def isa() -> list:
    """The notable instruction sets this CPU reports (newest first)."""
    flags = set((_cpuinfo().get("flags") or _cpuinfo().get("Features") or "").split())
    return [f for f in ISA_FLAGS if f in flags]


def flags() -> list:
    """Every flag this CPU reports (/proc/cpuinfo), sorted; [] where it cannot be read."""
    return sorted((_cpuinfo().get("flags") or _cpuinfo().get("Features") or "").split())


def identity() -> dict:
    """What decides whether a figure measured here holds on another machine: the
    CPU model, its instruction sets, the core count (the cache key's 'cpu')."""
    flags = (_cpuinfo().get("flags") or _cpuinfo().get("Features") or "").split()
    return {"model": model(), "machine": platform.machine(), "cores": os.cpu_count() or 1, "isa": isa(),
            "flags_sha": hashlib.sha256(" ".join(sorted(flags)).encode()).hexdigest()[:12]}

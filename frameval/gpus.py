"""Which NVIDIA GPUs this machine shows, standard library only (the runner
asks before it builds any CUDA environment): NVML through ctypes, else
`nvidia-smi -L`."""
from __future__ import annotations

import ctypes
import shutil
import subprocess

LOOKED_FOR = "NVML (libnvidia-ml.so.1) and nvidia-smi"


def _nvml_count() -> int | None:
    try:
        lib = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return None
    n = ctypes.c_uint(0)
    if lib.nvmlInit_v2() != 0:
        return None
    try:
        return n.value if lib.nvmlDeviceGetCount_v2(ctypes.byref(n)) == 0 else None
    finally:
        lib.nvmlShutdown()


def _smi_count() -> int | None:
    if not shutil.which("nvidia-smi"):
        return None
    try:
        p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return sum(line.startswith("GPU ") for line in p.stdout.splitlines()) if p.returncode == 0 else None


def visible_gpus() -> int:
    """How many NVIDIA GPUs are visible here (0 when neither NVML nor nvidia-smi answers)."""
    n = _nvml_count()
    if n is None:
        n = _smi_count()
    return n or 0

"""Timers and memory probes (numpy + standard library only).

Host memory needs no sampling thread: the kernel's peak resident set comes from
`getrusage` (ru_maxrss) and the current one from /proc, so nothing competes with
training for a core. Device memory: the framework's allocator peak, which the
notebook passes in, plus NVML per-process sampling behind a small interface so
that tests can drive it with a fake.
"""
from __future__ import annotations

import os
import statistics
import threading
import time


def rss_mb() -> float | None:
    """Current resident set size of this process in MB, or None if unknown."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 1e6
    except (OSError, ValueError, IndexError, AttributeError):
        pass
    try:
        import psutil  # optional
        return psutil.Process().memory_info().rss / 1e6
    except Exception:
        return None


def reset_peak_rss() -> bool:
    """Reset this process's resident high-water mark (VmHWM) to the current
    resident size (Linux: write 5 to /proc/self/clear_refs). False where that
    cannot be done."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return hwm_mb() is not None
    except OSError:
        return False


def hwm_mb() -> float | None:
    """VmHWM of this process in MB (Linux), or None."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024 / 1e6
    except (OSError, ValueError, IndexError):
        pass
    return None


def peak_rss_mb() -> float | None:
    """Peak resident set size of this process since it started, in MB."""
    try:
        import resource
        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        import sys
        return kb / 1e6 if sys.platform == "darwin" else kb * 1024 / 1e6
    except Exception:
        return None


class Stopwatch:
    """perf_counter between start and stop, with a device sync before each
    clock read (a no-op on the CPU) so queued GPU work is counted."""

    def __init__(self, sync=None):
        self.sync = sync or (lambda: None)
        self.t0 = None
        self.seconds = None

    def start(self):
        self.sync()
        self.t0 = time.perf_counter()
        return self

    def stop(self) -> float:
        self.sync()
        self.seconds = time.perf_counter() - self.t0
        return self.seconds


# ------------------------------------------------------------------ GPU memory
class DeviceMemoryProbe:
    """Interface: peak device memory of this process in MB, or None; the
    device's energy counter (mJ) and power draw (W), or None where there is
    none (a CPU run: this machine has no RAPL counter frameval reads)."""

    def start(self):
        pass

    def stop(self) -> float | None:
        return None

    def energy_mj(self) -> float | None:
        return None

    def idle_w(self, seconds: float = 1.0) -> float | None:
        return None

    def driver_version(self) -> str | None:
        return None


class NvmlProbe(DeviceMemoryProbe):
    """Samples this process's GPU memory as the driver reports it (NVML) in a
    background thread every `interval` s. `nvml` is the pynvml module (from
    nvidia-ml-py) or a fake with the same functions."""

    def __init__(self, nvml, device_index: int = 0, interval: float = 0.05, pid: int | None = None):
        self.nvml = nvml
        self.index = device_index
        self.interval = interval
        self.pid = pid or os.getpid()
        self.peak = None
        self._stop = threading.Event()
        self._thread = None

    def sample(self) -> float | None:
        h = self.nvml.nvmlDeviceGetHandleByIndex(self.index)
        used = None
        for fn in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
            for p in getattr(self.nvml, fn)(h):
                if p.pid == self.pid and p.usedGpuMemory is not None:
                    used = (used or 0) + p.usedGpuMemory / 1e6
        if used is not None:
            self.peak = used if self.peak is None else max(self.peak, used)
        return used

    def _loop(self):
        while not self._stop.wait(self.interval):
            try:
                self.sample()
            except Exception:
                return

    def start(self):
        # NVML may import and still fail to start (no driver, no permission):
        # then the figure is "not available", and the run goes on.
        try:
            self.nvml.nvmlInit()
            self.sample()
        except Exception:
            self._started = False
            return self
        self._started = True
        self._thread = threading.Thread(target=self._loop, daemon=True, name="frameval-nvml")
        self._thread.start()
        return self

    def energy_mj(self) -> float | None:
        """NVML's total-energy counter of the device (mJ since the driver loaded;
        Volta and newer), the way Zeus reads it at a window's edges; None where
        NVML did not start or the device has no counter. It counts the whole
        device, not this process: a run shares its GPU with nothing else."""
        if not getattr(self, "_started", False):
            return None
        try:
            return float(self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.nvml.nvmlDeviceGetHandleByIndex(self.index)))
        except Exception:
            return None

    def driver_version(self) -> str | None:
        """The NVIDIA driver's version as NVML reports it, or None."""
        if not getattr(self, "_started", False):
            return None
        try:
            v = self.nvml.nvmlSystemGetDriverVersion()
            return v.decode() if isinstance(v, bytes) else str(v)
        except Exception:
            return None

    def idle_w(self, seconds: float = 1.0) -> float | None:
        """The device's draw with this process loaded and no work queued: the
        median of NVML's power readings (mW) over `seconds`, taken before training.
        Subtracted from each epoch's energy, so the figure is what the training added."""
        if not getattr(self, "_started", False):
            return None
        got = []
        try:
            h = self.nvml.nvmlDeviceGetHandleByIndex(self.index)
            for _ in range(max(1, int(seconds / 0.1))):
                got.append(self.nvml.nvmlDeviceGetPowerUsage(h) / 1000.0)
                time.sleep(0.1)
        except Exception:
            return None
        return round(statistics.median(got), 2) if got else None

    def stop(self) -> float | None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=2)
        if getattr(self, "_started", False):
            try:
                self.sample()
                self.nvml.nvmlShutdown()
            except Exception:
                pass
        return None if self.peak is None else round(self.peak, 1)


def nvml_probe(device: str) -> DeviceMemoryProbe:
    """An NVML probe on a GPU run where pynvml imports, else a probe that
    reports "not available"."""
    if device != "gpu":
        return DeviceMemoryProbe()
    try:
        import pynvml
        return NvmlProbe(pynvml, int(os.environ.get("FRAMEVAL_GPU_INDEX", "0")))
    except Exception:
        return DeviceMemoryProbe()


# ------------------------------------------------------------------ the machine's state
def loadavg() -> list | None:
    """The 1, 5 and 15 minute load averages, or None where the OS has none."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def cpu_times() -> dict | None:
    """The machine's CPU time so far from /proc/stat (seconds): total and steal
    (time a hypervisor gave this VM's CPUs to another guest); None where unreadable."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = [int(x) for x in fields[1:]] + [0] * 8
    hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    # user nice system idle iowait irq softirq steal; guest and guest_nice are already in user and nice
    busy = ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6]
    return {"total_s": sum(ticks[:8]) / hz, "steal_s": ticks[7] / hz, "busy_s": busy / hz}


def own_cpu_s() -> float | None:
    """CPU time this process (every thread) and its waited-for children used so far."""
    try:
        import resource
    except ImportError:
        return None
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def machine_before() -> dict:
    return {"load": loadavg(), "cpu": cpu_times(), "own": own_cpu_s(), "t": time.perf_counter()}


def machine_state(before: dict) -> dict:
    """Over a run: the load average before and after it, the CPU steal, and
    the share of the machine's CPU time that other processes used
    (`other_share`: the machine's busy time less this kernel's own, over wall
    time x cores). The load average cannot tell them apart: a run that keeps
    every core busy lifts it to the core count by itself."""
    after_cpu, own, wall = cpu_times(), own_cpu_s(), time.perf_counter() - before["t"]
    cores = os.cpu_count() or 1
    out = {"cores": cores, "load_before": before.get("load"), "load_after": loadavg(),
           "steal_s": None, "steal_fraction": None, "other_cpu_s": None, "other_share": None}
    b = before.get("cpu")
    if b and after_cpu and after_cpu["total_s"] > b["total_s"]:
        steal = after_cpu["steal_s"] - b["steal_s"]
        out["steal_s"] = round(steal, 2)
        out["steal_fraction"] = round(steal / (after_cpu["total_s"] - b["total_s"]), 4)
        if own is not None and before.get("own") is not None and wall > 0:
            other = max(0.0, (after_cpu["busy_s"] - b["busy_s"]) - (own - before["own"]))
            out["other_cpu_s"] = round(other, 2)
            out["other_share"] = round(min(1.0, other / (wall * cores)), 4)
    return out

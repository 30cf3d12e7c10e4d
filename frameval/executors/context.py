"""What an executor is handed: the jobs that must execute, each ready to run
(its folder, kernel and cache key decided by the pipeline), and a narrow
context (never the pipeline itself)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable


@dataclass
class Job:
    index: int          # its place in the plan, 1-based
    label: str          # "[i/n] torch/lenet-graph", as progress lines name it
    run: object         # the plan.Run
    dir: Path           # the run folder it writes
    kernel: str
    parts: dict         # the cache key's parts
    why: str            # why it executes: "no result yet", "changed: code", "forced"
    env_fields: dict = field(default_factory=dict)  # where its environment came from, for result.json
    env_python: str = ""                            # the environment's python (a Slurm node checks it exists)
    kernel_json: str = ""                           # the kernel spec's file (likewise)


@dataclass
class ExecContext:
    out: Path                       # the output folder
    total: int                      # runs planned (executed, reused or failed)
    timeout: float                  # seconds a run may take
    device: str
    say: Callable[[str], None]      # one progress line
    cancel: object                  # execute.Cancel: SIGINT/SIGTERM received (stop starting runs), kills the run
    options: object = None          # the executor's own options (SlurmConfig for slurm)
    max_rss_mb: float | None = None  # the memory guard's limit per run (memguard.py; the local executor's)

"""The Slurm executor's options and their validation, beside the executor
(frameval/executors/slurm.py) and standard library only: bad input exits 2
before the runner environment exists, and `sbatch` is looked up only when a
job array will really be submitted."""
from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field

from ..exits import BadInput

# sbatch options frameval sets itself, and the --slurm-* option to use instead (None: none).
OWN = {"partition": "--slurm-partition", "time": "--slurm-time", "gpus-per-task": "--slurm-gpus-per-task",
       "cpus-per-task": "--slurm-cpus-per-task", "account": "--slurm-account",
       "exclusive": "--slurm-exclusive", "array": "--slurm-array-parallelism", "output": None,
       "error": None, "job-name": None, "open-mode": None, "wrap": None, "parsable": None}
TIME = re.compile(r"^(\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+(:\d{1,2}){0,2})$")
NAME = re.compile(r"[A-Za-z0-9_.,+-]+")


def add_options(s) -> None:
    """The --executor and --slurm-* options, on an argparse group."""
    s.add_argument("--executor", default="local",
                   help="local (default: one run after another on this machine) or slurm (the runs that must "
                        "execute as one Slurm job array, submitted with submitit; environments must be on a "
                        "shared filesystem: build them with --setup-only first)")
    s.add_argument("--slurm-partition", default="", metavar="NAME", help="sbatch --partition")
    s.add_argument("--slurm-time", default="", metavar="TIME",
                   help="sbatch --time per run: minutes, or [D-]HH:MM[:SS] (default 60)")
    s.add_argument("--slurm-gpus-per-task", default="", metavar="N", help="sbatch --gpus-per-task")
    s.add_argument("--slurm-cpus-per-task", default="", metavar="N", help="sbatch --cpus-per-task")
    s.add_argument("--slurm-array-parallelism", default="", metavar="N",
                   help="at most N runs at once (the array's %%N; default all)")
    s.add_argument("--slurm-account", default="", metavar="NAME", help="sbatch --account")
    s.add_argument("--slurm-exclusive", dest="slurm_exclusive", action="store_true", default=None,
                   help="whole nodes per run, so timings are not shared with other jobs (the default)")
    s.add_argument("--no-slurm-exclusive", dest="slurm_exclusive", action="store_false",
                   help="share nodes with other jobs")
    s.add_argument("--slurm-extra", action="append", default=[], metavar="KEY=VALUE",
                   help="any other sbatch option, e.g. --slurm-extra constraint=a100 (repeatable)")


@dataclass
class SlurmConfig:
    """The --slurm-* options as given; validates itself against the device
    and whether jobs will really be submitted."""
    partition: str = ""
    time: str = ""
    gpus_per_task: str = ""
    cpus_per_task: str = ""
    array_parallelism: str = ""
    account: str = ""
    exclusive: bool | None = None
    extra: list = field(default_factory=list)

    @classmethod
    def from_args(cls, args) -> "SlurmConfig":
        return cls(args.slurm_partition, args.slurm_time, args.slurm_gpus_per_task, args.slurm_cpus_per_task,
                   args.slurm_array_parallelism, args.slurm_account, args.slurm_exclusive, list(args.slurm_extra))

    def given(self) -> list:
        """The --slurm-* options set on the command line."""
        return [o for o, v in (("--slurm-partition", self.partition), ("--slurm-time", self.time),
                               ("--slurm-gpus-per-task", self.gpus_per_task),
                               ("--slurm-cpus-per-task", self.cpus_per_task),
                               ("--slurm-array-parallelism", self.array_parallelism),
                               ("--slurm-account", self.account),
                               ("--slurm-exclusive/--no-slurm-exclusive", self.exclusive is not None),
                               ("--slurm-extra", self.extra)) if v]

    def extra_options(self) -> dict:
        return dict(x.split("=", 1) for x in self.extra)

    def validate(self, device: str, submits: bool) -> None:
        for opt, v in (("--slurm-partition", self.partition), ("--slurm-account", self.account)):
            if v and not NAME.fullmatch(v):
                raise BadInput(f"{opt} {v!r}: not a Slurm name (letters, digits, _ . , + -)")
        if self.time and (not TIME.match(self.time.strip()) or not any(c not in "0:-" for c in self.time)):
            raise BadInput(f"--slurm-time {self.time!r}: expected minutes or [D-]HH:MM[:SS], more than zero "
                           "(e.g. 30, 2:00:00)")
        for opt, v, low in (("--slurm-gpus-per-task", self.gpus_per_task, 0),
                            ("--slurm-cpus-per-task", self.cpus_per_task, 1),
                            ("--slurm-array-parallelism", self.array_parallelism, 1)):
            if v and (not v.strip().isdigit() or int(v) < low):
                raise BadInput(f"--{opt.lstrip('-')} {v!r}: expected an integer of at least {low}")
        keys = self._check_extra()
        if device == "gpu" and not self.gpus_per_task and not keys & {"gres", "gpus", "gpus-per-node",
                                                                       "gpus_per_node"}:
            raise BadInput("--executor slurm --device gpu: ask for a GPU with --slurm-gpus-per-task 1 "
                           "(or --slurm-extra gres=...)")
        for tool in ("sbatch", "squeue", "scancel") if submits else ():
            if not shutil.which(tool):
                raise BadInput(f"--executor slurm: {tool} is not on PATH (run on the cluster's login node, "
                               "or --dry-run)")

    def _check_extra(self) -> set:
        keys = set()
        for item in self.extra:
            key, sep, value = item.partition("=")
            key = key.strip().lstrip("-")
            if not sep or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", key) or not value.strip():
                raise BadInput(f"--slurm-extra {item!r}: expected KEY=VALUE, an sbatch option without its "
                               "dashes, e.g. constraint=a100")
            if key.replace("_", "-") in OWN:
                own = OWN[key.replace("_", "-")]
                raise BadInput(f"--slurm-extra {item!r}: " + (f"use {own}" if own else "frameval sets this one itself"))
            if key in keys:
                raise BadInput(f"--slurm-extra {key}= given twice")
            keys.add(key)
        return keys

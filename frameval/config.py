"""The run command's configuration, in two steps, so bad input fails with one
line and exit 2 before anything is built:

- `validate()` (from `__post_init__`): what the options say, the plan
  included. Pure: it reads the user's files but asks no index, probes no
  interpreter, creates no folder and sets no environment variable, so a
  RunConfig can be made anywhere (tests, tools) without touching the machine.
- `prepare()`: what the machine and the network say (the GPU, the offline
  bundle's hashes, a way to full MNIST, the index for pins, the user's own
  interpreters), then the side effects: `offline.activate()` and the output
  folder. The command runs it once, before the runner environment is built.

Both run once. The prepared config, its plan included, travels into the runner
environment as a file (`write` / `load`; its path on the re-executed command
line: a plan of thousands of runs is larger than the kernel allows one
argument), not as environment flags.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from . import constraints, executors, files, frameworks
from .catalog import FRAMEWORKS, PROFILE_TIMEOUT_S, canonical_framework
from .optionchecks import check_env_backend, check_lang, check_threshold
from .exits import BadInput
from .executors.slurm_config import SlurmConfig
from .paths import REPO
from .plan import SERVE_CALLS, PlanError, Run, build_plan


@dataclass
class RunConfig:
    argv: list = field(default_factory=list)   # as typed, for the plan's "command"
    frameworks: str = "all"
    workloads: str = "default"  # the default matrix; "all" adds the opt-in workloads (the GPT)
    mode: str = "graph"
    device: str = "cpu"
    profile: str = "quick"
    param: list = field(default_factory=list)
    out: str = str(REPO / "reports" / "default")
    name: str = "report"
    repeats: int = 1
    seeds: str = ""         # --seeds N or a comma list (plan.parse_seeds)
    threshold: float = 0.10
    timeout: float | None = None   # None: the profile's default (catalog.PROFILE_TIMEOUT_S)
    max_rss: str | None = None     # --max-rss as given; max_rss_mb: what it means (memguard.py)
    max_rss_mb: float | None = None
    force: str | None = None
    dry_run: bool = False
    setup_only: bool = False
    report_only: bool = False
    sources: list = field(default_factory=list)
    lang: str = "en"
    title: str = ""
    author: str = ""
    notes: str = ""
    data: str = ""          # --data: the MNIST data set (-p dataset=...)
    threads: str = ""       # --threads 1,2: the same as -p threads=1,2 (a list sweeps)
    data_dir: str = ""
    download_mnist: bool = False
    env_backend: str = "auto"
    pythons: list = field(default_factory=list)
    offline: str = ""       # --offline BUNDLE: every environment from the bundle (frameval/bundle/)
    probe_from: str = ""    # --probe-from FILE: an earlier probe's machine.json, checked to be this CPU's
    behaviour: bool = False  # --behaviour: tensor behaviour against NumPy and error messages (frameval/behaviour.py)
    layers: bool = False     # --layers: every layer timed in every framework at the runs' shapes (frameval/layers.py)
    serve: bool = False      # --serve: save, load in a fresh process and serve every run, 100 calls a batch size (p99)
    executor: str = "local"
    slurm: SlurmConfig = field(default_factory=SlurmConfig)
    # What validation found: the plan, and the user's own interpreters.
    runs: list = field(default_factory=list)
    user_pythons: dict = field(default_factory=dict)
    user_probes: dict = field(default_factory=dict)
    probe_machine: dict = field(default_factory=dict)  # --probe-from's figures
    validated: bool = False
    prepared: bool = False

    def __post_init__(self):
        if isinstance(self.slurm, dict):
            self.slurm = SlurmConfig(**self.slurm)
        self.runs = [r if isinstance(r, Run) else Run(**dict(r, notebook=Path(r["notebook"]))) for r in self.runs]
        if not self.validated:
            self.validate()

    # ------------------------------------------------------------ data
    def to_json(self) -> str:
        return json.dumps({f.name: getattr(self, f.name) for f in fields(self)},
                          default=lambda o: asdict(o) if hasattr(o, "__dataclass_fields__") else str(o))

    @classmethod
    def from_json(cls, text: str) -> "RunConfig":
        data = json.loads(text)
        if not data.get("validated"):
            raise BadInput("a run configuration that was not validated")
        return cls(**data)

    def write(self, path) -> Path:
        """The prepared config as a file, for the re-executed runner (`load`)."""
        if not self.prepared:
            raise BadInput("a run configuration that was not prepared")
        return files.atomic_write_json(path, json.loads(self.to_json()), fsync=False)

    @classmethod
    def load(cls, path) -> "RunConfig":
        """The config `write` handed over; the file is removed once read (it is
        one process's hand-over, not a record: plan.json is that)."""
        path = Path(path)
        try:
            config = cls.from_json(path.read_text())
        except OSError as e:
            raise BadInput(f"the run configuration {path} cannot be read ({e.strerror or e})") from None
        path.unlink(missing_ok=True)
        if not config.prepared:
            raise BadInput("a run configuration that was not prepared")
        return config

    @property
    def submits(self) -> bool:
        """Whether runs will really execute (not a dry run, setup or report only)."""
        return not (self.dry_run or self.setup_only or self.report_only)

    # ------------------------------------------------------------ checks
    def validate(self) -> None:
        """What the options themselves say; no side effects (the module doc)."""
        self._check_options()
        self._check_executor()
        self._check_files()
        self._plan()
        self._check_out_path()
        self._check_offline_options()
        self._parse_user_pythons()
        self._check_force()
        self.validated = True

    def prepare(self) -> None:
        """What the machine and the index say, then the side effects; once."""
        if self.prepared:
            return
        if not self.validated:
            raise BadInput("a run configuration that was not validated")
        self._check_device()
        self._check_offline()
        self._check_data()
        self._check_pins()
        self._probe_user_pythons()
        if self.submits or self.setup_only:  # last: an input refused above creates nothing
            check_out_folder(Path(self.out), create=True)
        self.prepared = True

    def _check_options(self) -> None:
        check_lang(self.lang)
        if os.sep in self.name or "/" in self.name or self.name in ("", ".", ".."):
            raise BadInput(f"--name {self.name!r}: a report name cannot contain a path separator")
        check_env_backend(self.env_backend)
        if self.env_backend == "conda":
            from .envs import BACKENDS
            if not BACKENDS["conda"].available():
                raise BadInput("--env-backend conda: none of mamba, micromamba, conda is on PATH (or use venv)")
        if self.timeout is None:
            self.timeout = PROFILE_TIMEOUT_S.get(self.profile, PROFILE_TIMEOUT_S["quick"])
        elif not self.timeout > 0:  # nan too
            raise BadInput(f"--timeout {self.timeout:g}: must be positive")
        from . import memguard
        self.max_rss_mb = memguard.parse(self.max_rss) if self.max_rss else memguard.default_limit_mb()
        check_threshold(self.threshold)
        if self.probe_from:
            from . import probe
            self.probe_machine = probe.reusable(self.probe_from)

    def _check_out_path(self) -> None:
        # A run's caches live in its folder; a framework whose graph mode cannot
        # work under some characters in its path says so in its record (Paddle: ",").
        out = os.path.abspath(self.out)
        if not self.submits:
            return
        for r in self.runs:
            rec = frameworks.find(r.framework)
            bad = rec and r.mode == "graph" and [c for c in rec.graph_path_forbids if c in out]
            if bad:
                raise BadInput(f"--out {out}: {rec.display}'s graph mode fails under a path with "
                               f"{rec.graph_path_why}; choose a folder without one")

    def _check_executor(self) -> None:
        if self.executor not in executors.names():
            raise BadInput(f"--executor {self.executor!r}: choose {' or '.join(executors.names())}")
        if self.executor == "slurm":
            self.slurm.validate(self.device, self.submits)
        elif self.slurm.given():
            raise BadInput(f"{self.slurm.given()[0]} is only used with --executor slurm")

    def _check_device(self) -> None:
        """--device gpu runs here only where a GPU is visible (on Slurm, the job checks its node)."""
        if self.device == "gpu" and self.executor == "local" and not (self.dry_run or self.report_only):
            from .gpus import LOOKED_FOR, visible_gpus
            if not visible_gpus():
                raise BadInput(f"--device gpu: no NVIDIA GPU visible on this machine (looked for {LOOKED_FOR}); "
                               "use --device cpu, or --executor slurm for a GPU node")

    def _check_files(self) -> None:
        check_out_folder(Path(self.out), create=False)
        if self.notes and not Path(self.notes).is_file():
            raise BadInput(f"--notes {self.notes}: no such file")
        for s in self.sources:
            if not (Path(s) / files.RUNS).is_dir():
                raise BadInput(f"--from {s}: no runs/ folder there (not a frameval output folder)")
        if self.sources and not self.report_only:
            raise BadInput("--from is only used with --report-only")
        if self.data_dir:
            from .data import DataError, validate_idx_folder
            try:
                validate_idx_folder(self.data_dir)
            except DataError as e:
                raise BadInput(str(e)) from None

    def _plan(self) -> None:
        # --serve first: a -p serve_calls of the user's own comes later and wins
        params = (["serve=true", f"serve_calls={SERVE_CALLS}"] if self.serve else []) + list(self.param) + (
            [f"dataset={self.data}"] if self.data else []) + self._threads_param()
        if (self.data_dir or self.download_mnist) and not any(
                p.split("=")[0].split(".")[-1] == "dataset" for p in params):
            params.append("dataset=full")
        try:
            self.runs = build_plan(self.frameworks, self.workloads, self.mode, self.device, self.profile, params,
                                   self.repeats, self.seeds)
        except PlanError as e:
            raise BadInput(str(e)) from None
        why = constraints.first_problem(self.runs)
        if why:
            raise BadInput(why)
        if self.layers:
            self._check_layers()

    def _check_layers(self) -> None:
        """--layers: CPU runs only (a device's layer timing is not built), and only
        frameworks and workloads that have layer timing."""
        from . import layers
        if self.device != "cpu":
            raise BadInput(f"--layers with --device {self.device}: layers are timed on the CPU only so far")
        layers.check([r.framework for r in self.runs], [r.workload for r in self.runs])

    def _threads_param(self) -> list:
        """--threads LIST as the -p threads=LIST it stands for (0 is all cores)."""
        if not self.threads:
            return []
        if any(p.split("=")[0].split(".")[-1].strip() == "threads" for p in self.param):
            raise BadInput("--threads and -p threads= both given; use one")
        if not all(x.strip().isdigit() for x in self.threads.split(",")):
            raise BadInput(f"--threads {self.threads!r}: a comma list of thread counts, e.g. 1,2 (0: all cores)")
        return [f"threads={self.threads}"]

    @property
    def needs_full_mnist(self) -> bool:
        return any(r.params.get("dataset") == "full" for r in self.runs)

    def _check_offline_options(self) -> None:
        if self.offline and not self.report_only and self.env_backend == "conda":
            raise BadInput("--offline builds with the venv backend (conda needs its channels): use --env-backend venv")

    def _check_offline(self) -> None:
        """--offline BUNDLE: the bundle holds every environment to build, for its
        Python and this platform, and every file matches its hash; then the
        installers take packages from it alone (frameval/bundle/)."""
        if not self.offline or self.report_only:
            return
        from .bundle import manifest, offline
        from .bootstrap import RUNNER_SPEC
        from .envs.lockfile import lock_digest
        from .envs.spec import framework_spec
        from .envs.specfile import parse_spec
        own = {canonical_framework(p.partition("=")[0].strip()) for p in self.pythons}
        needed = [("runner", parse_spec(RUNNER_SPEC))] + [
            (k, framework_spec(k, self.device)) for k in dict.fromkeys(r.fw_key for r in self.runs) if k not in own]
        needed = [(label, spec, lock_digest(spec)) for label, spec in needed]  # bundle and build: one lock
        try:
            self.offline = str(Path(self.offline).expanduser().absolute())
            checked = manifest.check_bundle(self.offline, needed)
        except manifest.BundleError as e:
            raise BadInput(str(e)) from None
        self._bundle_data = checked.get("data", [])  # prepare() only
        offline.activate(self.offline)
        self._runner_on_target(checked)

    def _runner_on_target(self, checked: dict) -> None:
        """A bundle trimmed for the user's interpreter: the runner runs on a --python interpreter of the
        target's Python (or the one running frameval), in a venv over it (bundle/runner_venv.py)."""
        import sys
        from .bundle import runner_venv
        entry = runner_venv.trimmed_entry(checked)
        if not entry:
            return
        base = runner_venv.choose_base([*self.user_pythons.values(), sys.executable], entry["python"])
        if not base:
            source = (checked.get("target") or {}).get("source", "")
            raise BadInput(f"--offline {self.offline}: the bundle's runner was trimmed for Python {entry['python']} "
                           f"({source or 'bundle --target-*'}); give that interpreter with --python FW=PATH "
                           f"(none given is Python {entry['python']})")
        runner_venv.activate(base)

    def _check_data(self) -> None:
        """Full MNIST planned: one of the ways to it must work (the index is asked
        only when nothing local will do); not for a dry run, which builds nothing."""
        if not self.needs_full_mnist or self.dry_run or self.report_only:
            return
        if self.offline and "data/mnist-full.npz" in getattr(self, "_bundle_data", ()):
            return
        from .data import FULL_MNIST_WAYS, full_mnist_way
        if not full_mnist_way(self.data_dir or None, self.download_mnist):
            raise BadInput(f"{'--profile full' if self.profile == 'full' else 'dataset=full'}: {FULL_MNIST_WAYS}")

    def _check_pins(self) -> None:
        """A pinned version the index does not have: one line, before anything is built
        (offline, the bundle was asked instead)."""
        if self.report_only or self.offline:
            return
        from .versions import check_pins
        why = check_pins([(r.framework, r.pin) for r in self.runs if r.pin], self.device, self.env_backend)
        if why:
            raise BadInput(why)

    def _parse_user_pythons(self) -> None:
        """--python FW=PATH: each framework known, planned and given once
        (`_probe_user_pythons` then asks each interpreter)."""
        planned, given = {r.framework for r in self.runs}, {}
        for item in self.pythons:
            fw, sep, path = item.partition("=")
            if not sep or not fw.strip() or not path.strip():
                raise BadInput(f"--python {item!r}: expected FRAMEWORK=PATH, e.g. torch=/path/to/venv/bin/python")
            fw = canonical_framework(fw.strip())
            if fw not in FRAMEWORKS:
                raise BadInput(f"--python {item}: unknown framework {fw!r}; choose one of {', '.join(FRAMEWORKS)}")
            if fw in given:
                raise BadInput(f"--python {fw}= given twice")
            if fw not in planned:
                raise BadInput(f"--python {item}: {fw} is not among the planned frameworks "
                               f"({', '.join(sorted(planned))})")
            given[fw] = str(Path(path.strip()).expanduser().absolute())
        self.user_pythons = given

    def _probe_user_pythons(self) -> None:
        """Each --python interpreter working, the framework importable there,
        kernel-side packages present or installable."""
        from .envs import UserEnvError, probe_user_python
        for fw, path in self.user_pythons.items():
            try:
                self.user_probes[fw] = probe_user_python(fw, path)
            except UserEnvError as e:
                raise BadInput(str(e)) from None

    def _check_force(self) -> None:
        if not self.force or self.force == "all":
            return
        names = set().union(*(run_names(r) for r in self.runs))
        for f in self.force.split(","):
            if f.strip() not in names:
                raise BadInput(f"--force {f.strip()!r}: matches no planned run (e.g. torch or torch/lenet)")

    def forced(self, run) -> bool:
        """Whether --force names this run."""
        if not self.force:
            return False
        if self.force == "all":
            return True
        return bool({x.strip() for x in self.force.split(",")} & run_names(run))


def run_names(run) -> set:
    """The names --force accepts for a run: torch, paddle@3.2.2, torch/lenet, torch/lenet-graph."""
    return {run.framework, run.fw_key, f"{run.framework}/{run.workload}", f"{run.fw_key}/{run.workload}", run.name}


def check_out_folder(out: Path, create: bool) -> None:
    """The output folder can be created and written, and is not inside a run
    folder or the repository's notebooks/. With `create`, it is created (a
    failed attempt removes what it made); otherwise nothing is written."""
    out = Path(os.path.abspath(out))
    if out.exists() and not out.is_dir():
        raise BadInput(f"--out {out}: is a file, not a folder")
    notebooks = (REPO / "notebooks").resolve()
    if out.resolve() == notebooks or notebooks in out.resolve().parents:
        raise BadInput(f"--out {out}: inside the repository's notebooks/ folder; choose another folder")
    for a in [out, *out.parents]:
        if (a / files.RESULT).is_file():
            raise BadInput(f"--out {out}: inside the run folder {a} of another output; choose another folder")
        if a.name == files.RUNS and (a.parent / files.PLAN).is_file():
            raise BadInput(f"--out {out}: inside {a}, the runs/ folder of another output; choose another folder")
    base = next(a for a in [out, *out.parents] if a.exists())
    if not base.is_dir() or not os.access(base, os.W_OK | os.X_OK):
        raise BadInput(f"--out {out}: {base} cannot be written")
    if create:
        _try_create(out, base)


def _try_create(out: Path, base: Path) -> None:
    made = [a for a in [out, *out.parents] if not a.exists()]
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".frameval-write-test.{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        for a in made:  # innermost first
            try:
                a.rmdir()
            except OSError:
                pass
        raise BadInput(f"--out {out}: cannot be created or written ({e.strerror or e})") from None

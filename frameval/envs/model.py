"""An environment, as the rest of frameval sees it: its spec, where it lives,
its Python, whether it is ready, what was installed (its freeze) and how.

An environment directory is complete only when its `frameval-ready.json`
marker exists, so a build killed half-way is rebuilt, never half-used; its
location is keyed by the spec alone (`env_for`), so an environment built with
uv is reused like one built with pip. A user's own interpreter
(`--python FW=PATH`, user.py) is an Env with backend "user".

Standard library only.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..files import read_json
from ..paths import envs_dir
from .lockfile import build_key
from .spec import spec_pin
from .specfile import EnvSpec

MARKER = "frameval-ready.json"


@dataclass
class Env:
    spec: EnvSpec
    prefix: Path
    backend: str  # "venv", "conda", or "user" (an environment the user brought with --python)
    python_path: Path | None = None  # set for a user's environment
    kernel: str = ""  # the Jupyter kernel registered for it
    user: dict = field(default_factory=dict)  # a user's environment: what the probe found, its freeze
    built_now: bool = False  # built by this call (not reused from the cache)

    @property
    def provided_by_user(self) -> bool:
        return self.backend == "user"

    @property
    def bytecode_vars(self) -> dict:
        """What a process in this environment adds to its variables so that it writes
        .pyc files (kernels, the GEMM and behaviour scripts) even where the user's shell
        sets PYTHONDONTWRITEBYTECODE: uv installs none, and without them every process
        compiles what it imports again (the first report's framework imports: about
        10 s each). A user's own environment is left as it is."""
        return {} if self.provided_by_user else {"PYTHONDONTWRITEBYTECODE": ""}

    @property
    def python(self) -> Path:
        if self.python_path is not None:
            return self.python_path
        if os.name == "nt":
            return self.prefix / ("python.exe" if self.backend == "conda" else "Scripts/python.exe")
        return self.prefix / "bin" / "python"

    @property
    def ready(self) -> bool:
        if self.provided_by_user:
            return self.python.exists()
        return (self.prefix / MARKER).is_file() and self.python.exists()

    def info(self) -> dict:
        if self.provided_by_user:
            return dict(self.user)
        return read_json(self.prefix / MARKER, {})

    @property
    def freeze(self) -> str:
        """The locked package list, as recorded when the environment was built
        (a user's environment: `pip freeze` of it, taken in this invocation)."""
        if self.provided_by_user:
            return self.user.get("freeze", "")
        try:
            return (self.prefix / "frameval-freeze.txt").read_text()
        except OSError:
            return ""

    @property
    def key_text(self) -> str:
        """What the run cache key hashes for this environment: its freeze (and,
        for a user's environment, which interpreter and Python version)."""
        if self.provided_by_user:
            return f"# user python {self.user.get('python_version', '?')} {self.python}\n{self.freeze}"
        return self.freeze

    def result_fields(self) -> dict:
        """Added to each run's result["environment"]: where the environment came from."""
        out = {"provided_by_user": self.provided_by_user, "spec_pin": spec_pin(self.spec)}
        if self.provided_by_user:
            out.update(python_executable=str(self.python), prefix=str(self.prefix), freeze=self.freeze,
                       installed_by_frameval=self.user.get("installed", []))
        else:
            out.update(installer=self.info().get("installer", "pip"), lock=self.info().get("lock", {}))
            if self.info().get("offline_bundle"):
                out["offline_bundle"] = self.info()["offline_bundle"]
        return out


def env_for(spec: EnvSpec, backend) -> Env:
    """Where `spec`'s environment lives in the per-user cache (built or not):
    keyed by the spec's hash, its lock's where it is built from one (lockfile.py), and the
    backend's name (a Backend), not by the installer."""
    return Env(spec=spec, prefix=envs_dir() / f"{spec.name}-{backend.NAME}-{build_key(spec)}", backend=backend.NAME)

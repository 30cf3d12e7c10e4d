"""Framework environments: build them (conda or venv backend), cache them per
user keyed by their spec's hash, and register one Jupyter kernel each in a
project-scoped path. Standard library only: the runner's own environment is
built with this package.

The modules, each importing only those above it in this list (and frameval's
own bottom modules: paths, files, locks, catalog); none imports this file:

    specfile.py       reading a conda-format spec (EnvSpec, parse_spec)
    spec.py           each framework's spec path, its framework pin, a pinned version's spec and key
    pipconf.py        the user's pip settings, and as uv's arguments
    index.py          whether the package index has a pinned version (frameval/versions.py asks)
    installers.py     uv (found or bootstrapped) else pip; EnvBuildError; a failed log's reason
    lockfile.py       each spec's lock beside it: read, whether it applies (stale, not made), made with uv
    pythons.py        finding the Python a spec asks for
    install_facts.py  the install experience of a build, measured
    model.py          Env, its ready marker, env_for (where a spec's environment lives)
    backends.py       Backend, VenvBackend, CondaBackend, BACKENDS, choose_backend
    kernels.py        kernel.json, the project-scoped Jupyter path
    user.py           a user's own interpreter (--python FW=PATH)
    build.py          ensure_env, ensure_framework, ensure_frameworks (parallel builds)

This file re-exports what the rest of frameval calls, so that callers say
`envs.ensure_frameworks(...)`. Settings that tests repoint live on their
module, and are read there: `envs.kernels.JUPYTER_DIR`, `envs.spec.ENVS_SPEC_DIR`.
`python -m frameval.envs torch mxnet` builds environments by hand (__main__.py).
"""
from .backends import BACKENDS, Backend, choose_backend
from .build import ensure_env, ensure_framework, ensure_frameworks
from .installers import EnvBuildError
from .kernels import framework_kernel_env, jupyter_env, kernel_env, kernel_name, register_kernel, registered_kernels
from .model import MARKER, Env, env_for
from .pythons import find_python
from .spec import framework_spec, spec_path, spec_pin
from .specfile import EnvSpec, SpecError, parse_spec
from .user import UserEnvError, probe_user_python, user_env, user_freeze, user_kernel_name

__all__ = ["BACKENDS", "Backend", "choose_backend", "ensure_env", "ensure_framework", "ensure_frameworks",
           "EnvBuildError", "framework_kernel_env", "jupyter_env", "kernel_env", "kernel_name", "register_kernel",
           "registered_kernels", "MARKER", "Env", "env_for", "find_python", "framework_spec", "spec_path",
           "spec_pin", "EnvSpec", "SpecError", "parse_spec", "UserEnvError", "probe_user_python", "user_env",
           "user_freeze", "user_kernel_name"]

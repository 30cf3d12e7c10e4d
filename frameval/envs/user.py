"""A user's own environment (`--python torch=/path/to/python`): `user_env`
checks the framework imports there, adds only the kernel-side packages
(ipykernel, numpy) if missing and allowed, and registers a kernel. Nothing
else in it is touched.

Standard library only (the checks run before the runner environment exists).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from pathlib import Path

from ..catalog import BY_KEY, framework_name
from ..locks import file_lock
from ..paths import envs_dir
from .installers import EnvBuildError, failure_line, install_packages
from .kernels import framework_kernel_env, kernel_extra, kernel_name, register_kernel
from .model import Env
from .spec import spec_path
from .specfile import parse_spec

# What a kernel needs besides the framework: the kernel itself, and numpy for
# frameval.nb (numpy + standard library, imported from this clone).
KERNEL_SIDE = ("ipykernel", "numpy")

PROBE = r"""
import importlib, importlib.util, json, os, sys, sysconfig
fw, mods = sys.argv[1], sys.argv[2:]
paths = sysconfig.get_paths()
managed = sys.prefix == getattr(sys, "base_prefix", sys.prefix) and os.path.exists(
    os.path.join(paths["stdlib"], "EXTERNALLY-MANAGED"))
info = {"python_version": "%d.%d.%d" % sys.version_info[:3], "prefix": sys.prefix, "purelib": paths["purelib"],
        "missing": [m for m in mods if importlib.util.find_spec(m) is None],
        "externally_managed": managed, "writable": os.access(paths["purelib"], os.W_OK) and not managed,
        "venv": sys.prefix != getattr(sys, "base_prefix", sys.prefix), "pip": importlib.util.find_spec("pip") is not None}
print("FRAMEVAL-PROBE " + json.dumps(info), flush=True)
try:
    m = importlib.import_module(fw)
    res = {"version": str(getattr(m, "__version__", "") or "unknown")}
except BaseException as e:
    msg = str(e).strip().splitlines()
    res = {"error": type(e).__name__ + (": " + msg[0] if msg else "")}
print("FRAMEVAL-IMPORT " + json.dumps(res), flush=True)
"""


class UserEnvError(ValueError):
    """A --python environment that cannot be used; the message is one line."""


def probe_user_python(framework: str, python: str, timeout: float = 600) -> dict:
    """Run the user's interpreter once: where it lives, whether `import
    <framework>` works there, which kernel-side packages are missing and whether
    frameval may install them. Raises UserEnvError with a one-line message."""
    label = f"--python {framework}={python}"
    exe = Path(python).expanduser()
    if not exe.exists():
        raise UserEnvError(f"{label}: no such file")
    if exe.is_dir() or not os.access(exe, os.X_OK):
        raise UserEnvError(f"{label}: not an executable file (give the interpreter, e.g. <env>/bin/python)")
    module = (BY_KEY[framework].import_name if framework in BY_KEY else framework)
    env = dict(os.environ, **framework_kernel_env(framework), PYTHONWARNINGS="ignore")
    for var in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"):
        env.pop(var, None)
    try:
        p = subprocess.run([str(exe), "-c", PROBE, module, *KERNEL_SIDE], capture_output=True, text=True,
                           timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    except OSError as e:
        raise UserEnvError(f"{label}: cannot run it ({e.strerror or e})") from None
    except subprocess.TimeoutExpired:
        raise UserEnvError(f"{label}: `import {module}` did not finish in {timeout:g} s") from None
    found = {k: json.loads(v) for k, _, v in (ln.partition(" ") for ln in p.stdout.splitlines())
             if k in ("FRAMEVAL-PROBE", "FRAMEVAL-IMPORT")}
    if "FRAMEVAL-PROBE" not in found:
        last = (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
        raise UserEnvError(f"{label}: not a Python 3.8+ interpreter frameval can use ({last[:200]})")
    info = found["FRAMEVAL-PROBE"]
    if tuple(int(x) for x in info["python_version"].split(".")[:2]) < (3, 8):
        raise UserEnvError(f"{label}: Python {info['python_version']}; frameval's kernels need 3.8 or newer")
    if "FRAMEVAL-IMPORT" not in found:
        raise UserEnvError(f"{label}: `import {module}` crashed the interpreter (exit {p.returncode})")
    imp = found["FRAMEVAL-IMPORT"]
    if "error" in imp:
        raise UserEnvError(f"{label}: `import {module}` fails there: {imp['error'][:300]}")
    info.update(framework_version=imp["version"], python=str(exe.absolute()), framework=framework)
    missing = info["missing"]
    if missing and not info["writable"]:
        why = ("externally managed (PEP 668)" if info["externally_managed"] else "not writable")
        raise UserEnvError(
            f"{label}: {', '.join(missing)} missing there, and frameval may not install into {info['purelib']} "
            f"({why}): install {'them' if len(missing) > 1 else 'it'} yourself "
            f"(`{exe} -m pip install {' '.join(missing)}`) or give an environment frameval may write to")
    return info


def user_freeze(python) -> str:
    """`pip freeze --all` of an interpreter's environment (importlib.metadata where pip is missing)."""
    try:
        p = subprocess.run([str(python), "-m", "pip", "freeze", "--all", "--disable-pip-version-check"],
                           capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        if p.returncode == 0:
            return p.stdout
        p = subprocess.run([str(python), "-c", "import importlib.metadata as m; print('\\n'.join(sorted("
                            "'%s==%s' % (d.metadata['Name'], d.version) for d in m.distributions())))"],
                           capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        return p.stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def user_kernel_name(framework: str, python, device: str = "cpu") -> str:
    h = hashlib.sha256(str(Path(python).expanduser().absolute()).encode()).hexdigest()[:8]
    return f"{kernel_name(framework, device)}-user-{h}"


def user_env(framework: str, python, device: str = "cpu", echo=print, probe: dict | None = None) -> Env:
    """The user's own interpreter as a framework environment: checked, the
    missing kernel-side packages installed (only those), a kernel registered.
    Nothing else in it is touched."""
    info = dict(probe or probe_user_python(framework, str(python)))
    exe = Path(info.get("python") or Path(python).expanduser().absolute())
    spec = parse_spec(spec_path(framework, device))
    installed = []
    if info.get("missing"):
        # Two frameworks on one interpreter (torch and JAX on a GPU box's python3) are prepared
        # in parallel: one installs, the other waits and then finds nothing missing.
        with file_lock(envs_dir() / f"user-{user_kernel_name(framework, exe)[-8:]}.install.lock"):
            info.update(missing=probe_user_python(framework, str(exe)).get("missing"))
            installed = _install_missing(framework, exe, device, spec, info, echo)
    info.update(installed=installed, freeze=user_freeze(exe))
    env = Env(spec=spec, prefix=Path(info["prefix"]), backend="user", python_path=exe,
              kernel=user_kernel_name(framework, exe, device), user=info)
    register_kernel(env, env.kernel, f"frameval · {framework_name(framework)} (your {exe})",
                    kernel_extra(framework, device))
    return env


def _install_missing(framework, exe, device, spec, info, echo) -> list:
    if info.get("missing"):
        # each with the spec's own constraint where it has one (numpy<2 for MindSpore ...)
        lines = [next((ln for ln in spec.pip if re.match(rf"{m}\s*($|[=<>!~\[;])", ln)), m) for m in info["missing"]]
        kname = user_kernel_name(framework, exe, device)
        log_path = envs_dir() / f"{kname}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "w") as log:
            try:
                how = install_packages(exe, lines, log, echo=echo)
            except EnvBuildError as e:
                why = failure_line(log_path)
                raise EnvBuildError(f"{exe}: installing {', '.join(lines)} failed ({e}{': ' + why if why else ''}); "
                                    f"log: {log_path}") from None
        echo(f"installed {', '.join(lines)} into {info['prefix']} with {how} (needed by the kernel)")
        return lines
    return []

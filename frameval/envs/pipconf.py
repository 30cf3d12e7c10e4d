"""The user's pip settings (`pip config list`, pip's configuration files, PIP_*
variables), as pip applies them, and the same settings as uv's arguments:
uv does not read pip's configuration, so builds with uv pass them on
(installers.py), and the pin check asks the indexes they name (index.py).

Standard library only.
"""
from __future__ import annotations

import ast
import configparser
import os
import subprocess
import sys
from pathlib import Path

PIP_RANK = {"global": 0, "install": 1, ":env:": 2}  # pip: PIP_* beats [install] beats [global]


def _pip_config_list():
    """(key, value) pairs from `pip config list` (its files and PIP_* variables), or None."""
    try:
        p = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                           timeout=120, stdin=subprocess.DEVNULL,
                           env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"))
    except (OSError, subprocess.TimeoutExpired):
        return None
    if p.returncode != 0:
        return None
    items = []
    for line in p.stdout.splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            pass
        items.append((key.strip(), str(value)))
    return items


def _pip_config_files():
    """The same pairs read from pip's configuration files directly (a Python without pip)."""
    files = []
    if os.environ.get("PIP_CONFIG_FILE") != os.devnull:
        for d in (os.environ.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(os.pathsep):
            files.append(Path(d) / "pip" / "pip.conf")
        files += [Path("/etc/pip.conf"), Path.home() / ".pip" / "pip.conf",
                  Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "pip" / "pip.conf",
                  Path(sys.prefix) / "pip.conf"]
        if os.environ.get("PIP_CONFIG_FILE"):
            files.append(Path(os.environ["PIP_CONFIG_FILE"]))
    items = []
    for f in files:
        cp = configparser.RawConfigParser()
        try:
            cp.read(f)
        except (configparser.Error, OSError):
            continue
        for section in cp.sections():
            items += [(f"{section}.{k}", v) for k, v in cp.items(section)]
    return items


_settings_cache: dict = {}


def pip_settings(items=None) -> dict:
    """The pip options that decide where packages come from, as pip applies them
    (read once per process and set of PIP_* variables)."""
    if items is None:
        key = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("PIP_")))
        if key not in _settings_cache:
            _settings_cache[key] = pip_settings(_pip_config_list() or _pip_config_files())
        return dict(_settings_cache[key])
    best: dict = {}
    for key, value in items:
        section, _, name = key.partition(".")
        if section in PIP_RANK and (name not in best or PIP_RANK[section] >= best[name][0]):
            best[name] = (PIP_RANK[section], value)
    for var, value in os.environ.items():  # again, in case `pip config list` could not run
        if var.startswith("PIP_") and var != "PIP_CONFIG_FILE":
            best[var[4:].lower().replace("_", "-")] = (PIP_RANK[":env:"], value)
    return {k: v for k, (_, v) in best.items()}


def is_true(value) -> bool:
    """A pip-style boolean setting (or variable) that is on."""
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def uv_options(settings: dict | None = None) -> tuple:
    """uv's arguments and environment for the user's pip settings: its indexes
    (index-url, extra-index-url, find-links, no-index, trusted-host, pre), cache
    (no-cache-dir), certificates, timeout and proxy. With several indexes uv
    resolves as pip does only with --index-strategy unsafe-best-match."""
    s = pip_settings() if settings is None else settings
    args = ["--index-strategy", "unsafe-best-match"]
    if s.get("index-url", "").split():
        args += ["--index-url", s["index-url"].split()[0]]
    for url in s.get("extra-index-url", "").split():
        args += ["--extra-index-url", url]
    for loc in s.get("find-links", "").split():
        args += ["--find-links", loc]
    for host in s.get("trusted-host", "").split():
        args += ["--allow-insecure-host", host]
    if is_true(s.get("no-index")):
        args.append("--no-index")
    if is_true(s.get("pre")):
        args += ["--prerelease", "allow"]
    if "no-cache-dir" in s:  # pip: any value of PIP_NO_CACHE_DIR turns the cache off
        args.append("--no-cache")
    env = {}
    if s.get("cert") and not os.environ.get("SSL_CERT_FILE"):
        env["SSL_CERT_FILE"] = s["cert"]
    if s.get("client-cert") and not os.environ.get("SSL_CLIENT_CERT"):
        env["SSL_CLIENT_CERT"] = s["client-cert"]
    timeout = s.get("timeout") or s.get("default-timeout")
    if timeout and not os.environ.get("UV_HTTP_TIMEOUT"):
        try:
            env["UV_HTTP_TIMEOUT"] = str(max(1, int(float(timeout))))
        except ValueError:
            pass
    if s.get("proxy"):
        for var in ("HTTPS_PROXY", "HTTP_PROXY"):
            if not os.environ.get(var):
                env[var] = s["proxy"]
    return args, env

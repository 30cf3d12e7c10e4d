"""`python3 run_all.py lab`: JupyterLab on notebooks/ with every framework's
kernel visible, for teaching sessions. Builds what is missing first."""
from __future__ import annotations

import argparse
import ipaddress
import os
import sys

from .plan import REPO, PlanError, split_list
from .workloads import FRAMEWORKS, canonical_framework


def parser():
    p = argparse.ArgumentParser(prog="run_all.py lab", description="Start JupyterLab on notebooks/ with the "
                                "project's framework kernels (builds missing environments and data caches first).")
    p.add_argument("--frameworks", default="all", help="environments to build: comma-separated, or all (default)")
    p.add_argument("--ip", default="127.0.0.1", help="address to bind (default 127.0.0.1, loopback only)")
    p.add_argument("--port", type=int, default=8888, help="port (default 8888; the next free one is used if taken)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")
    p.add_argument("--env-backend", default="auto", help="auto, conda or venv")
    return p


def main(argv) -> int:
    args = parser().parse_args(argv)
    try:
        fws = split_list(args.frameworks, FRAMEWORKS, "framework", canonical_framework)
    except PlanError as e:
        print(f"frameval: error: {e}", file=sys.stderr)
        return 2
    if not 0 < args.port < 65536:
        print(f"frameval: error: --port {args.port}: must be 1-65535", file=sys.stderr)
        return 2
    from .bootstrap import ensure_runner
    ensure_runner(["lab", *argv], backend=args.env_backend)
    from . import data, envs
    data.prepare_all()
    for fw in fws:
        try:
            envs.ensure_framework(fw, "cpu", args.env_backend, echo=lambda m: print(f"frameval: {m}", flush=True))
        except Exception as e:  # noqa: BLE001 - the other kernels are still useful
            print(f"frameval: environment {fw} failed to build: {str(e).splitlines()[0]}", file=sys.stderr)
    try:
        loopback = ipaddress.ip_address(args.ip).is_loopback
    except ValueError:
        loopback = args.ip == "localhost"
    if not loopback:
        print(f"frameval: WARNING: binding to {args.ip}, a non-loopback address: anyone who can reach it "
              "and has the token can run code on this machine", file=sys.stderr)
    cmd = [sys.executable, "-m", "jupyter", "lab", f"--ip={args.ip}", f"--port={args.port}",
           f"--ServerApp.root_dir={REPO / 'notebooks'}", "--ServerApp.port_retries=50"]
    if args.no_browser:
        cmd.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # containers and CI run as root
        cmd.append("--allow-root")
    print("frameval: starting JupyterLab; the URL with its token is printed below", flush=True)
    os.execve(sys.executable, cmd, envs.jupyter_env())

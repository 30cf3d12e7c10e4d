"""`python3 run_all.py lab [--frameworks ...] [--ip --port]`: build what is
missing, then JupyterLab on the per-user copy of notebooks/ with every kernel
(the lab's mechanics, the copy and the hand-runs folder: frameval/lab.py)."""
from __future__ import annotations

import argparse
import ipaddress
import os
import sys

from . import options
from ..lab import prepare_hand_runs, report_command, sync_notebooks, write_server_config
from ..plan import PlanError, framework_entries
from ..optionchecks import check_env_backend
from ..exits import BadInput, fail


def parser():
    p = argparse.ArgumentParser(prog="run_all.py lab", description="Start JupyterLab on your working copy of "
                                "notebooks/ with the project's framework kernels (builds missing environments and "
                                "data caches first). Notebooks run there write to the hand-runs folder, which "
                                "`run_all.py --report-only --from <it>` turns into a report.")
    p.add_argument("--frameworks", default="all", help="environments to build: comma-separated, or all (default)")
    p.add_argument("--ip", default="127.0.0.1", help="address to bind (default 127.0.0.1, loopback only)")
    p.add_argument("--port", type=int, default=8888, help="port (default 8888; the next free one is used if taken)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")
    options.env_backend(p)
    return p


# The re-executed lab gets this first: its options were checked before the re-exec.
CHECKED = "--checked"


def main(argv) -> int:
    if argv[:1] == [CHECKED]:
        return serve(parser().parse_args(argv[1:]))
    args = parser().parse_args(argv)
    try:
        entries = framework_entries(args.frameworks)  # names, aliases, all, and FRAMEWORK==VERSION pins
        check_env_backend(args.env_backend)
    except (PlanError, BadInput) as e:
        fail(str(e))
    if not 0 < args.port < 65536:
        fail(f"--port {args.port}: must be 1-65535")
    from .. import versions
    why = versions.check_pins([e for e in entries if e[1]], "cpu", args.env_backend)
    if why:  # a pin the package index lacks: one line, before anything is built
        fail(why)
    from ..bootstrap import ensure_runner
    ensure_runner(["lab", CHECKED, *argv], backend=args.env_backend)
    return serve(args)


def serve(args) -> int:
    """Inside the runner env: environments, kernels and data, then JupyterLab."""
    from .. import data, envs
    from ..envs.spec import key, split_key
    fws = [key(fw, pin) for fw, pin in framework_entries(args.frameworks)]
    data.prepare_all()
    def done(fw, env, secs):  # a failed one is reported; the other kernels are still useful
        if not isinstance(env, envs.Env):
            print(f"frameval: environment {fw} failed to build: {str(env).splitlines()[0]}", file=sys.stderr)
        else:
            if env.built_now:
                print(f"frameval: environment {fw} built in {secs:.1f} s", flush=True)
            if split_key(fw)[1]:  # the notebooks name the bare kernel: the pinned one is picked by hand
                print(f"frameval: {fw}: pick the kernel \"{env.kernel}\" (Kernel > Change Kernel); its hand runs go "
                      f"to runs/{fw}/, beside the other version's", flush=True)
    envs.ensure_frameworks(fws, "cpu", args.env_backend, echo=lambda m: print(f"frameval: {m}", flush=True),
                           on_done=done)
    try:
        loopback = ipaddress.ip_address(args.ip).is_loopback
    except ValueError:
        loopback = args.ip == "localhost"
    if not loopback:
        print(f"frameval: WARNING: binding to {args.ip}, a non-loopback address: anyone who can reach it "
              "and has the token can run code on this machine", file=sys.stderr)
    notebooks = sync_notebooks()
    hand = prepare_hand_runs()
    config = write_server_config()
    cmd = [sys.executable, "-m", "jupyter", "lab", f"--ip={args.ip}", f"--port={args.port}",
           f"--ServerApp.root_dir={notebooks}", "--ServerApp.port_retries=50"]
    if args.no_browser:
        cmd.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # containers and CI run as root
        cmd.append("--allow-root")
    print(f"frameval: notebooks: your working copy in {notebooks} (the repository's notebooks/ is never written)")
    print(f"frameval: hand runs go to {hand}/runs/<framework>/<workload>-<mode>[@changed=params]/ "
          "(save the notebook after a run to keep it beside its result.json)")
    print(f"frameval: report from them: {report_command(hand)}")
    print("frameval: starting JupyterLab; the URL with its token is printed below", flush=True)
    env = envs.jupyter_env()
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(filter(None, [str(config), env.get("JUPYTER_CONFIG_PATH", "")]))
    os.execve(sys.executable, cmd, env)

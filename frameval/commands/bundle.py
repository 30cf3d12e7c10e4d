"""`python3 run_all.py bundle OUT [options]`, on a machine with a network: the
wheels of the runner environment and of the chosen framework environments for
a target Python and platform, the data caches, and a manifest of every file's
SHA-256, in the folder OUT; then `run_all.py --offline OUT` builds and runs
on a machine with none (docs/offline.md). Options are checked here, with the
standard library, before the runner environment is built."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

from ..exits import fail

EPILOG = """examples:
  python3 run_all.py bundle ~/frameval-bundle                      runner + every CPU framework
  python3 run_all.py bundle ~/fb --frameworks torch,jax --device gpu --dry-run   sizes only, nothing downloaded
  python3 run_all.py bundle ~/fb --runner-only --python-version 3.11 --platform manylinux_2_28_x86_64
  python3 run_all.py bundle ~/fb --runner-only --target-freeze gpu-box-freeze.txt --python-version 3.12
                     only what that interpreter lacks; there: --offline ~/fb --python torch=$(command -v python3)
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="run_all.py bundle", epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description="Write an offline bundle (wheels, data caches, manifest) into OUT.")
    p.add_argument("out", metavar="OUT", help="the bundle's folder (created; an earlier bundle there is updated)")
    p.add_argument("--frameworks", default="all", metavar="LIST",
                   help="frameworks whose environments to bundle (default all; FW==VERSION pins one)")
    p.add_argument("--device", default="cpu", help="cpu (default) or gpu: the GPU specs (envs/<fw>-gpu.yml)")
    p.add_argument("--runner-only", action="store_true", help="only the runner environment (and the data)")
    p.add_argument("--python-version", default="", metavar="X.Y",
                   help="the target Python for every environment (default: each spec's own, as it builds here)")
    p.add_argument("--platform", default="", metavar="TAG",
                   help="the target wheel platform, e.g. manylinux_2_28_x86_64 (default: this machine's)")
    p.add_argument("--target-python", default="", metavar="PATH",
                   help="with --runner-only: pack only what this interpreter lacks of the runner's packages, for "
                        "its Python and platform; --offline then runs the runner on it (docs/offline.md)")
    p.add_argument("--target-freeze", default="", metavar="FILE",
                   help="the same from that interpreter's `pip freeze` (made on a machine with no network); "
                        "--python-version and --platform name its Python (default the runner spec's) and platform")
    p.add_argument("--data", default="embedded", help="embedded (default: the MNIST subset and CO2) or full "
                                                      "(full MNIST too)")
    p.add_argument("--dry-run", action="store_true",
                   help="print each environment's size from the index's metadata; download nothing")
    return p


def targets(args) -> list:
    """[(label, EnvSpec)]: the runner first, then each framework entry; one line and exit 2 on bad input."""
    from ..bootstrap import RUNNER_SPEC
    from ..envs.spec import framework_spec, key
    from ..envs.specfile import parse_spec
    from ..plan import PlanError, framework_entries
    out = [("runner", parse_spec(RUNNER_SPEC))]
    if args.runner_only:
        return out
    try:
        entries = framework_entries(args.frameworks, args.device)
    except PlanError as e:
        fail(str(e))
    return out + [(key(fw, pin), framework_spec(key(fw, pin), args.device)) for fw, pin in entries]


def check(args) -> None:
    if args.device not in ("cpu", "gpu"):
        fail(f"bundle --device {args.device!r}: choose cpu or gpu")
    if args.python_version and not re.fullmatch(r"3\.\d{1,2}", args.python_version):
        fail(f"bundle --python-version {args.python_version!r}: expected X.Y, e.g. 3.11")
    if args.platform and not re.fullmatch(r"(manylinux_\d+_\d+|linux|macosx_\d+_\d+|win)_\w+", args.platform):
        fail(f"bundle --platform {args.platform!r}: expected a wheel platform tag, e.g. manylinux_2_28_x86_64")
    if args.data not in ("embedded", "full"):
        fail(f"bundle --data {args.data!r}: choose embedded or full")
    check_target(args)
    out = Path(args.out).expanduser()
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / "manifest.json").exists())):
        fail(f"bundle {out}: exists and is not an empty folder or a bundle; choose another folder")


def check_target(args) -> None:
    """--target-python / --target-freeze: one of them, with --runner-only; the target read (exit 2 if it cannot be)."""
    given = [o for o, v in (("--target-python", args.target_python), ("--target-freeze", args.target_freeze)) if v]
    args.target = None
    if not given:
        return
    if len(given) > 1:
        fail("bundle: --target-python and --target-freeze both given; name the target once")
    if not args.runner_only:
        fail(f"bundle {given[0]}: only with --runner-only (the frameworks come from that interpreter: --python FW=PATH)")
    from ..bundle.manifest import machine_platform
    from ..bundle.trim import TargetError, parse_freeze, probe_target
    if args.target_python:
        if args.python_version or args.platform:
            fail("bundle --target-python: its Python and platform are read from it; leave out --python-version "
                 "and --platform")
        try:
            t = probe_target(args.target_python)
        except TargetError as e:
            fail(str(e))
        t["source"] = f"--target-python {t.pop('executable')}"
    else:
        try:
            text = Path(args.target_freeze).expanduser().read_text()
        except OSError as e:
            fail(f"bundle --target-freeze {args.target_freeze}: cannot be read ({e.strerror or e})")
        if not parse_freeze(text):
            fail(f"bundle --target-freeze {args.target_freeze}: no `name==version` lines (not a pip freeze)")
        from ..bootstrap import RUNNER_SPEC
        from ..envs.specfile import parse_spec
        t = {"python": args.python_version or parse_spec(RUNNER_SPEC, stdlib_only=True).python,
             "platform": args.platform or machine_platform(), "freeze": text,
             "source": f"--target-freeze {Path(args.target_freeze).expanduser().absolute()}"}
    t["packages"] = len(parse_freeze(t["freeze"]))
    args.python_version, args.platform, args.target = t["python"], t["platform"], t


def main(argv) -> int:
    args = parser().parse_args(argv)
    check(args)
    todo = targets(args)
    from ..bootstrap import ensure_runner
    ensure_runner(["bundle", *argv])  # uv, pip and the data preparation live in the runner environment
    from ..bundle.make import make
    from ..bundle.manifest import machine_platform
    from ..envs.installers import EnvBuildError
    try:
        make(Path(args.out).expanduser().absolute(), todo, args.python_version, args.platform or machine_platform(),
             args.device, full=args.data == "full", dry_run=args.dry_run, echo=lambda m: print(m, flush=True),
             target=args.target)
    except EnvBuildError as e:
        print(f"frameval: error: bundle: {e} (log: {Path(args.out) / 'bundle.log'})", flush=True)
        return 1
    return 0

"""`python3 run_all.py lock [NAME ...]`: resolve environment specs again into
their locks (frameval/envs/lockfile.py), beside each spec: `runner`
(environment.yml), a framework's CPU spec (`torch`) or its GPU spec
(`torch-gpu`); no name: every spec. A spec that cannot be resolved from here
gets a lock that says so ("not made"), and the command exits 1.

Standard library only, like the builds it serves: uv is found or bootstrapped
as a build would (frameval/envs/installers.py).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..exits import fail

EPILOG = """examples:
  python3 run_all.py lock                    every spec: environment.yml and envs/*.yml
  python3 run_all.py lock torch torch-gpu    envs/torch.yml and envs/torch-gpu.yml
  python3 run_all.py lock runner             environment.yml
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="run_all.py lock", epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description="Resolve environment specs with uv (linux x86_64, with hashes) into "
                                            "the lock files beside them, which environments are built from.")
    p.add_argument("names", nargs="*", metavar="NAME",
                   help="runner, a framework (its CPU spec) or FRAMEWORK-gpu; default: every spec")
    return p


def all_specs() -> dict:
    """{name: spec path} of every spec in the clone: the runner's, then envs/*.yml."""
    from ..envs.spec import ENVS_SPEC_DIR
    from ..paths import REPO
    out = {"runner": REPO / "environment.yml"}
    out.update({p.name[:-len(".yml")]: p for p in sorted(Path(ENVS_SPEC_DIR).glob("*.yml"))})
    return out


def chosen(names) -> dict:
    """The specs named (every one without names); an unknown name is one line and exit 2."""
    from ..catalog import canonical_framework
    specs = all_specs()
    if not names:
        return specs
    out = {}
    for name in names:
        base, gpu = (name[:-len("-gpu")], "-gpu") if name.endswith("-gpu") else (name, "")
        key = base + gpu if base == "runner" else canonical_framework(base) + gpu
        if key not in specs:
            fail(f"lock {name!r}: no such spec; choose from {', '.join(specs)}")
        out[key] = specs[key]
    return out


def main(argv) -> int:
    args = parser().parse_args(argv)
    todo = chosen(args.names)
    from ..envs.lockfile import MADE, make_lock, shown
    from ..envs.specfile import SpecError, parse_spec
    try:
        specs = {name: parse_spec(path) for name, path in todo.items()}
    except SpecError as e:
        fail(str(e))
    logs = Path(tempfile.mkdtemp(prefix="frameval-lock-"))

    def one(item):
        name, spec = item
        t0 = time.perf_counter()
        with open(logs / f"{name}.log", "w") as log:
            lock = make_lock(spec, log)
        if lock.state == MADE:
            local = "".join(f"; {x['package']} {x['version']} from {x['source']} (hash seen here only)"
                            for x in lock.meta.get("local", []))
            print(f"frameval: lock: {shown(lock.path)}: {len(lock.pins)} packages with hashes "
                  f"({time.perf_counter() - t0:.0f} s){local}", flush=True)
        else:
            print(f"frameval: lock: {shown(lock.path)}: NOT made: {lock.meta.get('why')} "
                  f"(log: {logs / (name + '.log')})", flush=True)
        return lock.state == MADE

    with ThreadPoolExecutor(max_workers=4) as ex:
        ok = list(ex.map(one, specs.items()))
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

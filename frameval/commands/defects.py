"""`python3 run_all.py defects [--frameworks ...]`: each framework defect's
reproduction (defects/<framework>/<id>.py) run in its environment: present,
fixed or could not run (the catalogue and the runner: frameval/defects.py)."""
from __future__ import annotations

import argparse

from . import options
from ..catalog import FRAMEWORKS, canonical_framework
from ..defects import NOT_RUN, catalogue, format_table, removal_candidates, run_env, store
from ..exits import fail
from ..optionchecks import check_env_backend
from ..exits import BadInput


def parse_frameworks(text: str) -> list:
    if text in ("", "all"):
        return list(FRAMEWORKS)
    out = []
    for name in text.split(","):
        fw = canonical_framework(name.strip())
        if fw not in FRAMEWORKS:
            fail(f"--frameworks: unknown framework {name.strip()!r}; choose from "
                  f"{', '.join(FRAMEWORKS)}")
        if not catalogue([fw]):
            fail(f"--frameworks: {fw} has no reproductions under defects/{fw}/")
        out.append(fw)
    return list(dict.fromkeys(out))


def main(argv) -> int:
    p = argparse.ArgumentParser(prog="run_all.py defects",
                                description="Run each framework defect's reproduction (defects/<framework>/<id>.py) "
                                            "in its environment and print present / fixed / could not run.")
    p.add_argument("--frameworks", default="all", metavar="LIST",
                   help=f"comma-separated, or all (default): {', '.join(FRAMEWORKS)}")
    options.env_backend(p)
    args = p.parse_args(argv)
    fws = parse_frameworks(args.frameworks)
    try:
        check_env_backend(args.env_backend)
    except BadInput as e:
        fail(str(e))
    from ..bootstrap import ensure_runner
    ensure_runner(["defects", *argv], backend=args.env_backend)  # its uv builds what is missing
    from ..envs import ensure_frameworks
    say = lambda m: print(f"frameval: {m}", flush=True)  # noqa: E731
    envs = ensure_frameworks(fws, "cpu", args.env_backend, echo=say)
    tables, unbuilt = [], []
    for fw in fws:
        env = envs.get(fw)
        if isinstance(env, Exception) or env is None:
            unbuilt.append(fw)
            say(f"{fw}: environment could not be built: {str(env).splitlines()[0] if env else 'unknown'}")
            tables.append({"framework": fw, "version": None, "label": "pinned", "results": [
                {"id": d.id, "status": NOT_RUN, "why": "environment not built", "seconds": 0.0} for d in catalogue([fw])]})
            continue
        say(f"{fw}: running {len(catalogue([fw]))} reproduction(s) in {env.prefix}")
        t = run_env(fw, env, echo=say)
        say(f"{fw}: stored {store(t)}")
        tables.append(t)
    print()
    print(format_table(tables))
    for line in (ln for t in tables for ln in removal_candidates(t)):
        print(f"frameval: {line}")
    bad = [f"{t['framework']}/{r['id']}" for t in tables for r in t["results"] if r["status"] == NOT_RUN]
    if bad:
        print(f"frameval: could not run: {', '.join(bad)}")
    return 1 if bad else 0

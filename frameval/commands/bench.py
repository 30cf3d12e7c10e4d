"""`python3 run_all.py bench <name> [args]`: bench/<name>.py in the runner
environment (each bench takes --help)."""
from __future__ import annotations

import os
import sys

from ..exits import fail
from ..paths import REPO

BENCH_DIR = REPO / "bench"


def main(argv) -> int:
    names = sorted(p.stem for p in BENCH_DIR.glob("*.py"))
    if not argv or argv[0] in ("-h", "--help"):
        print(f"usage: run_all.py bench {{{','.join(names)}}} [args]   (each takes --help)")
        return 0 if argv else 2
    name = argv[0][:-3] if argv[0].endswith(".py") else argv[0]
    if name not in names:
        fail(f"bench {argv[0]!r}: choose one of {', '.join(names)}")
    script = BENCH_DIR / f"{name}.py"
    from ..bootstrap import bootstrap_script
    bootstrap_script(script, argv[1:])
    os.execv(sys.executable, [sys.executable, str(script), *argv[1:]])

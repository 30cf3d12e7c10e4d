"""The command line's entry: `run_all.py [COMMAND] [options]`. Each command is
registered by name in frameval/commands/ and owns its options and their
validation; without a command name, the default `run` command runs.

    python3 run_all.py [options]        plan -> environments -> runs -> report
    python3 run_all.py test [--fast] [pytest args]
    python3 run_all.py lab  [--frameworks ...] [--ip --port]
    python3 run_all.py bench <overhead|pipeline|seed_parity> [args]
    python3 run_all.py defects [--frameworks ...]
    python3 run_all.py compare A B
    python3 run_all.py lock [NAME ...]
    python3 run_all.py reproduce REPORT_DIR [--out DIR] [--offline BUNDLE]

Standard library only: it runs before the runner environment exists.
"""
from __future__ import annotations

import sys

from . import commands


def main(argv=None) -> int:
    return commands.dispatch(sys.argv[1:] if argv is None else argv)

"""How frameval ends on bad input: one line on stderr, exit status 2, before
anything is built. Every subcommand imports its `fail` from here.

Standard library only: it runs before the runner environment exists.
"""
from __future__ import annotations

import sys

EXIT_BAD_INPUT = 2


class BadInput(ValueError):
    """Input that cannot run; the message is one line naming the problem.
    Configs raise it while they validate themselves; a command turns it into
    `fail`."""


def fail(msg: str) -> "NoReturn":  # noqa: F821
    """Print `frameval: error: <msg>` (one line) and exit 2."""
    print(f"frameval: error: {' '.join(str(msg).split())}", file=sys.stderr)
    sys.exit(EXIT_BAD_INPUT)

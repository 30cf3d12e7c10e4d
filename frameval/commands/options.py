"""The options several commands share, declared once: a user meets the same
name, type, default and check wherever `--env-backend`, `--threshold` or
`--lang` appears (each command still says in its help what the option does
there). Standard library only, like every command's option parsing."""
from __future__ import annotations

import argparse

from ..optionchecks import default_env_backend

ENV_BACKEND_HELP = ("auto (conda/mamba if on PATH, else venv), conda or venv; for every environment, the "
                    "runner's included (default $FRAMEVAL_ENV_BACKEND, else auto). venv installs with uv "
                    "(pip where uv cannot be had; FRAMEVAL_INSTALLER=pip forces pip)")
THRESHOLD = 0.10  # the smallest speed change called faster or slower (docs/compare.md)


def env_backend(p, shown: bool = True) -> None:
    """--env-backend, defaulting to $FRAMEVAL_ENV_BACKEND in every command (hidden where
    a command only reads environments another command built)."""
    p.add_argument("--env-backend", default=default_env_backend(),
                   help=ENV_BACKEND_HELP if shown else argparse.SUPPRESS)


def threshold(p, help_text: str) -> None:
    p.add_argument("--threshold", type=float, default=THRESHOLD, metavar="F", help=help_text)


def lang(p) -> None:
    p.add_argument("--lang", default="en", help="report language: en (default) or zh")

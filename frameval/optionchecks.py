"""Option checks that several commands and configs share (standard library
only). Each raises exits.BadInput with one line; a command turns it into
`exits.fail` (exit 2)."""
from __future__ import annotations

import os

from .exits import BadInput

LANGS = ("en", "zh")
ENV_BACKENDS = ("auto", "conda", "venv")


def default_env_backend() -> str:
    return os.environ.get("FRAMEVAL_ENV_BACKEND", "auto")


def check_lang(value: str, option: str = "--lang") -> None:
    if value not in LANGS:
        raise BadInput(f"{option} {value!r}: choose {' or '.join(LANGS)}")


def check_threshold(value: float, option: str = "--threshold") -> None:
    if not 0 < value < 10:
        raise BadInput(f"{option} {value:g}: a fraction between 0 and 10, e.g. 0.1 for 10%")


def check_env_backend(value: str, option: str = "--env-backend") -> None:
    if value not in ENV_BACKENDS:
        raise BadInput(f"{option} {value!r}: choose auto, conda or venv")

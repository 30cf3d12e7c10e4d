"""Option checks that several commands share (standard library only): each
prints one line and exits 2 through `exits.fail`."""
from __future__ import annotations

import os

from ..exits import fail

LANGS = ("en", "zh")
ENV_BACKEND_CHOICES = ("auto", "conda", "venv")


def default_env_backend() -> str:
    return os.environ.get("FRAMEVAL_ENV_BACKEND", "auto")


def check_lang(value: str, option: str = "--lang") -> None:
    if value not in LANGS:
        fail(f"{option} {value!r}: choose {' or '.join(LANGS)}")


def check_threshold(value: float, option: str = "--threshold") -> None:
    if not 0 < value < 10:
        fail(f"{option} {value:g}: a fraction between 0 and 10, e.g. 0.1 for 10%")


def check_env_backend(value: str, option: str = "--env-backend") -> None:
    if value not in ENV_BACKEND_CHOICES:
        fail(f"{option} {value!r}: choose auto, conda or venv")

"""The one sort key for framework version strings. Standard library only: the
runner sorts versions (frameval/versions.py, the package index's) before its
own environment exists, and the report sorts the versions that ran."""
from __future__ import annotations

import re

# A pre-release tag glued to a release number ("0rc1" in "3.0.0rc1"), in
# release order: dev before alpha before beta before the candidate.
_PRE = re.compile(r"([0-9]+)(dev|a|alpha|b|beta|c|rc|pre|preview)([0-9]*)", re.IGNORECASE)
_PRE_RANK = {"dev": 0, "a": 1, "alpha": 1, "b": 2, "beta": 2, "c": 3, "rc": 3, "pre": 3, "preview": 3}


def _part(x: str) -> tuple:
    if re.fullmatch(r"[0-9]+", x):
        return (0, int(x), 0)
    m = _PRE.fullmatch(x)
    if m:  # just before its release: (0, n, -1, ...) < (0, n, 0)
        return (0, int(m.group(1)), -1, _PRE_RANK[m.group(2).lower()], int(m.group(3) or 0))
    return (1, 0, 0, x)  # any other text: after the numbers, by its text


def version_key(v) -> list:
    """Sort key of a version string, split at ".", "+" and "-": numbers compare as
    numbers ("3.10" after "3.9"), a pre-release comes before its release
    ("3.0.0rc1" before "3.0.0", "rc2" before "rc10"), and a label after the
    release it follows ("2.13.0+cpu" after "2.13.0")."""
    return [_part(x) for x in re.split(r"[.+-]", str(v))]

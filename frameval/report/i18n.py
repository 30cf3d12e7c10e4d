"""The report's words: every heading, label and generated sentence comes from
`templates/strings/<lang>.json`, and a workload's own words (its name, intro,
columns, axes, findings) from its folder's `strings/<lang>.json`
(frameval/workloads/<wl>/), so a new workload brings its words with it.
English fills any key a translation lacks; a key defined twice is an error."""
from __future__ import annotations

import string
from functools import lru_cache
from pathlib import Path

from .. import workloads
from ..files import read_json
from ..paths import REPO

TEMPLATES = REPO / "templates"
LANGS = ("en", "zh")


@lru_cache(maxsize=None)
def _load(lang: str, root: str) -> dict:
    words = dict(read_json(Path(root) / "strings" / f"{lang}.json"))
    for folder in workloads.folders():
        own = read_json(folder / "strings" / f"{lang}.json", default={})
        twice = sorted(set(own) & set(words))
        if twice:  # one home per word: a workload may not redefine the shared ones, nor another's
            raise ValueError(f"{folder.name}/strings/{lang}.json redefines {', '.join(twice)}")
        words.update(own)
    return words


class _Safe(dict):
    def __missing__(self, key):
        return "{" + key + "}"


class Strings:
    """`S("key", name=...)` formats a string; `S.raw` is the merged dict for templates."""

    def __init__(self, lang: str = "en", templates: Path | str = TEMPLATES):
        if lang not in LANGS:
            raise ValueError(f"unknown language {lang!r}: choose one of {', '.join(LANGS)}")
        self.lang = lang
        base = dict(_load("en", str(templates)))
        if lang != "en":
            base.update(_load(lang, str(templates)))
        self.raw = base

    def __call__(self, _key: str, /, **kw) -> str:
        # a count of one takes the key's singular where it has one ("key@one": "1 run", not "1 runs")
        one = kw.get("n") == 1 and f"{_key}@one" in self.raw
        s = self.raw[f"{_key}@one"] if one else self.raw.get(_key, _key)
        if kw:
            s = string.Formatter().vformat(s, (), _Safe(kw))
        return s

    def get(self, key: str, default: str = "") -> str:
        return self.raw.get(key, default)

    def list_sep(self) -> str:
        return self.raw.get("list_sep", ", ")

    def join(self, items) -> str:
        return self.list_sep().join(str(i) for i in items)

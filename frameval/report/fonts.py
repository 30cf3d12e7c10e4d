"""The HTML report's own CJK font. A page with Chinese text carries a subset of
the font the charts already use (`charts.find_cjk_font`: mplfonts' Noto Sans
CJK SC), cut to the characters that page holds and embedded as a base64
`@font-face`, so its text is drawn on a machine with no CJK font at all (a bare
Linux box, a container, headless Chromium) instead of as boxes. A page without
CJK characters gets nothing, so the English report is byte for byte what it was.

fontTools (installed with matplotlib) cuts the subset: WOFF2 when `brotli` is
importable, else WOFF (zlib, always there). With no CJK font, no fontTools or a
subsetter error, the page is still written and its problems list says, in one
line, that Chinese text may show as boxes (`NoPageFont`, through guard.Problems).
"""
from __future__ import annotations

import base64
import functools
import html
import importlib.util
import io
import re
from pathlib import Path

from markupsafe import Markup

from .charts import find_cjk_font
from .guard import one_line

FAMILY = "frameval CJK"
# CJK radicals, punctuation, kana, ideographs (with extension A), Hangul,
# compatibility ideographs, vertical and fullwidth forms, and the supplementary
# ideograph planes: a page holding any of them needs a CJK font.
CJK = re.compile("[\u2e80-\u2fdf\u3001-\u303f\u3040-\u9fff\uac00-\ud7af\uf900-\ufaff\ufe30-\ufe4f"
                 "\uff01-\uffee\U00020000-\U0003134f]")
# The name records kept in the subset: the usual ones plus the copyright (0)
# and the licence (13, 14), which the SIL Open Font License asks to travel with the font.
NAME_IDS = [0, 1, 2, 3, 4, 5, 6, 13, 14]



class NoPageFont(RuntimeError):
    """The page has CJK text but no font could be embedded for it."""


def words(S, key: str) -> str:
    """The problem line's words, from templates/strings/<lang>.json (page_font_*)."""
    if S is None:
        from .i18n import Strings
        S = Strings("en")
    return S.get(f"page_font_{key}")


def page_chars(page: str) -> str:
    """Every non-ASCII character of the rendered page, sorted. The whole document
    (entities decoded), not only its visible text, so that title and alt
    attributes, the CSS's generated content (↕ ▲ ⚠) and closed <details> are in;
    the markup and the images' base64 are ASCII and add nothing."""
    return "".join(sorted({c for c in html.unescape(page) if ord(c) > 0x7F}))


def _face(path: str) -> int:
    """In a collection (.ttc), the simplified-Chinese face, else the first."""
    if not path.lower().endswith(".ttc"):
        return -1
    from fontTools.ttLib import TTCollection
    names = [str(f["name"].getDebugName(1) or "") for f in TTCollection(path, lazy=True).fonts]
    return next((i for i, n in enumerate(names) if re.search(r"\bSC\b", n)), 0)


@functools.lru_cache(maxsize=4)
def subset(path: str, chars: str) -> tuple:
    """(font bytes, "woff2" | "woff"): `path` cut to `chars`. Cached, since the
    report renders its HTML again when a part fails."""
    from fontTools import subset as fts
    from fontTools.ttLib import TTFont
    # the source's timestamp is kept, so the same page gives the same bytes
    font = TTFont(path, fontNumber=_face(path), recalcTimestamp=False, lazy=True)
    opts = fts.Options()
    opts.hinting = False  # about 13% smaller; browsers draw CJK outlines well without hints
    opts.name_IDs = NAME_IDS
    sub = fts.Subsetter(opts)
    sub.populate(unicodes=[ord(c) for c in chars])
    sub.subset(font)
    font.flavor = "woff2" if importlib.util.find_spec("brotli") else "woff"
    buf = io.BytesIO()
    font.save(buf)
    return buf.getvalue(), font.flavor


def page_font(page: str, S=None, font_file: Path | str | None = None) -> dict | None:
    """The @font-face for the page's CJK text, {"family", "src", "bytes",
    "chars"}, or None when the page has no CJK character. Raises NoPageFont
    (its message says Chinese may show as boxes) when none can be made."""
    chars = page_chars(page)
    if not CJK.search(chars):
        return None
    path = font_file or find_cjk_font()
    if not path:
        raise NoPageFont(words(S, "no_font"))
    try:
        data, flavor = subset(str(path), chars)
    except ImportError:
        raise NoPageFont(words(S, "no_fonttools")) from None
    except Exception as e:  # noqa: BLE001 - any subsetter failure: the page goes out without the font
        raise NoPageFont(f"{words(S, 'failed')} ({one_line(e)})") from None
    uri = f"data:font/{flavor};base64," + base64.b64encode(data).decode("ascii")
    return {"family": FAMILY, "src": Markup(f'url({uri}) format("{flavor}")'), "bytes": len(data),
            "chars": len(chars)}

"""Number formatting and escaping. A value that was not measured is shown as
"n/a" (never 0); a non-finite number recorded as a string ("nan") is shown as it is."""
from __future__ import annotations

import html
import math
import re

from markupsafe import Markup

from ..result import number as num  # noqa: F401 - what counts as a measured number: one home, the result's reader

NA = "n/a"


def is_na(v) -> bool:
    return num(v) is None


def _raw(v):
    """Non-numbers other than None (e.g. "nan" from a diverged run) keep their text."""
    return NA if v is None or v == "" else str(v)


def sig(v, digits: int = 3) -> str:
    x = num(v)
    if x is None:
        return _raw(v)
    if x == 0:
        return "0"
    if abs(x) >= 10 ** digits:
        return f"{x:,.0f}"
    mag = int(math.floor(math.log10(abs(x))))
    dec = max(0, digits - 1 - mag)
    return f"{x:.{dec}f}"


def seconds(v) -> str:
    return sig(v, 3)


def integer(v) -> str:
    x = num(v)
    return _raw(v) if x is None else f"{int(round(x)):,}"


def _magnitude(v) -> str:
    """Whole numbers with separators from 100 up, three significant digits below."""
    x = num(v)
    if x is None:
        return _raw(v)
    return f"{x:,.0f}" if x >= 100 else sig(x, 3)


def mb(v) -> str:
    return _magnitude(v)


def rate(v) -> str:
    return _magnitude(v)


def percent(v) -> str:
    x = num(v)
    return _raw(v) if x is None else f"{x * 100:.2f}%"


def ratio(v) -> str:
    x = num(v)
    if x is None:
        return _raw(v)
    return f"{x:.2f}×" if x < 10 else (f"{x:.1f}×" if x < 100 else f"{x:,.0f}×")


def interval(lo, hi) -> str:
    """A ratio's interval, "1.05–1.78×"."""
    a, b = num(lo), num(hi)
    if a is None or b is None:
        return NA
    return f"{ratio(a)[:-1]}–{ratio(b)}"


def fixed(v, d: int = 4) -> str:
    x = num(v)
    return _raw(v) if x is None else f"{x:.{d}f}"


def kib(v) -> str:
    x = num(v)
    return _raw(v) if x is None else f"{x / 1024:,.1f} KiB"


def millis(v) -> str:
    return sig(v, 3)


def value(v) -> str:
    """Any setting value, compactly (lists joined, floats short)."""
    if v is None:
        return NA
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, (list, tuple)):
        return "(" + ", ".join(value(x) for x in v) + ")"
    if isinstance(v, dict):
        return ", ".join(f"{k}={value(x)}" for k, x in v.items())
    return str(v)


# ------------------------------------------------------------------ escaping
_MD_SPECIAL = re.compile(r"([\\`*_\[\]#|~])")


def md(text) -> str:
    """Text for a Markdown table cell or paragraph: HTML-escaped (GitHub renders
    raw HTML), Markdown syntax characters backslash-escaped, one line."""
    if isinstance(text, Markup):
        return str(text)
    s = html.escape(str(text), quote=False)
    s = _MD_SPECIAL.sub(r"\\\1", s)
    s = s.replace("\r", "").replace("\n", "<br>")
    return s


def md_finalize(v):
    """Jinja `finalize` for the Markdown environment: escape everything except Markup."""
    if v is None:
        return ""
    if isinstance(v, Markup):
        return str(v)
    return md(v)


def fence(text, lang: str = "") -> Markup:
    """A fenced code block whose fence is longer than any backtick run inside."""
    text = str(text or "").rstrip("\n")
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    f = "`" * max(3, longest + 1)
    return Markup(f"{f}{lang}\n{text}\n{f}")


def anchor(s: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", str(s).lower()).strip("-") or "x"

"""The HTML report's own CJK font (frameval/report/fonts.py): cut to the page's
characters, only when the page has CJK text, and never at the cost of the
report (no font, no fontTools: one line in its problems list). That the font
really draws the page is the browser test in test_report.py
(test_chinese_page_draws_its_text_without_a_cjk_font)."""
from __future__ import annotations

import base64
import io
import re
import sys
from pathlib import Path

import pytest

from conftest import REPO

from frameval import report
from frameval.report import fonts
from frameval.report.i18n import Strings

FIX = REPO / "tests" / "fixtures" / "report"
PAGE = ('<!DOCTYPE html><html><head><title>评测报告</title></head><body><p title="悬停提示">'
        "框架 &amp; 速度 &#x6D4B;&#35797; — ✓</p></body></html>")


def _font(face: dict):
    from fontTools.ttLib import TTFont
    uri = re.search(r"base64,([A-Za-z0-9+/=]+)\)", str(face["src"])).group(1)
    return TTFont(io.BytesIO(base64.b64decode(uri)))


@pytest.mark.fast
def test_the_font_holds_exactly_the_pages_characters():
    """Text, title, tooltip and character references all count; ASCII is left to the Latin fonts."""
    fonts.subset.cache_clear()
    face = fonts.page_font(PAGE, Strings("zh"))
    assert face["family"] == fonts.FAMILY and 'format("woff' in face["src"]
    cmap = {chr(c) for c in _font(face).getBestCmap()}
    assert set("评测报告悬停提示框架速度测试—✓") <= cmap
    assert not {c for c in cmap if ord(c) < 0x80}, "ASCII is drawn by the Latin fonts"
    assert len(cmap) <= len(fonts.page_chars(PAGE))
    fonts.subset.cache_clear()
    assert fonts.page_font(PAGE)["src"] == face["src"], "the same page gives the same bytes"


@pytest.mark.fast
def test_no_cjk_no_font(monkeypatch):
    monkeypatch.setattr(fonts, "find_cjk_font", lambda: pytest.fail("a page without CJK looked for a font"))
    assert fonts.page_font("<p>Speed — 1.00× ✓ café</p>") is None


@pytest.mark.fast
@pytest.mark.parametrize("lang, boxes", [("en", "may show as boxes"), ("zh", "可能显示为方框")])
def test_no_font_or_no_fonttools_says_chinese_may_show_as_boxes(monkeypatch, lang, boxes):
    monkeypatch.setattr(fonts, "find_cjk_font", lambda: None)
    with pytest.raises(fonts.NoPageFont, match=boxes):
        fonts.page_font(PAGE, Strings(lang))
    monkeypatch.undo()
    fonts.subset.cache_clear()
    monkeypatch.setitem(sys.modules, "fontTools", None)
    monkeypatch.setitem(sys.modules, "fontTools.subset", None)
    with pytest.raises(fonts.NoPageFont, match=f"fontTools.*{boxes}"):
        fonts.page_font(PAGE, Strings(lang))


def test_report_without_a_cjk_font_is_written_and_says_so_once(tmp_path, monkeypatch):
    """The charts keep their font; the page's is missing: the page is written as
    before, and its problems list (both files) has one line saying so."""
    monkeypatch.setattr(fonts, "find_cjk_font", lambda: None)
    info = report.build([FIX / "cpu", FIX / "gpu"], tmp_path, lang="zh", name="zh")
    html = Path(info["html"]).read_text(encoding="utf-8")
    md = Path(info["md"]).read_text(encoding="utf-8")
    assert len(info["problems"]) == 1 and "可能显示为方框" in info["problems"][0], info["problems"]
    assert "\n" not in info["problems"][0]
    assert html.count("可能显示为方框") == 1 and md.count("可能显示为方框") == 1
    assert "@font-face" not in html and "font-src" not in html
    for sid in ("metadata", "summary", "environment", "audit", "check", "code", "errors", "reproduce"):
        assert f'id="{sid}"' in html


def test_zh_report_embeds_its_font_and_en_report_nothing(tmp_path):
    zh = Path(report.build([FIX / "cpu"], tmp_path, lang="zh", name="zh")["html"]).read_text(encoding="utf-8")
    en = Path(report.build([FIX / "cpu"], tmp_path, lang="en", name="en")["html"]).read_text(encoding="utf-8")
    assert zh.count("@font-face") == 1 and "font-src data:;" in zh
    assert f'"Noto Sans", "{fonts.FAMILY}", "Noto Sans CJK SC"' in zh  # after the Latin fonts: Latin text as before
    assert "@font-face" not in en and "font-src" not in en and fonts.FAMILY not in en

"""Open a report in headless Chromium with Playwright (the `playwright` package,
environment.yml) driving the SYSTEM Chromium (`executable_path`; no browser is
downloaded: `python3 run_all.py test` installs Chromium as a setup step,
frameval/testtools.py). What it returns: the requests the page made (every one
that is not file: or data: is refused and listed: the report must be
self-contained, and the network is off besides), whether every image decoded,
its text, a click on a sortable header, screenshots (desktop and phone width).

For Chinese, a CJK font is handed to Chromium through a private fontconfig
file (the one mplfonts ships), so the screenshot shows glyphs, not boxes, on a
bare machine. `fonts="bare"` instead gives Chromium Latin fonts only
(matplotlib's DejaVu), the machine a reader without a CJK font has: then only
what the page embeds can draw its Chinese, and `glyphs` lists every character
drawn as a box.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from frameval.report.charts import find_cjk_font
from frameval.testtools import CHROMIUM_FLAGS, INSTALL, chromium_path

# networking off besides the route below: no proxy can be reached and no name resolves
OFFLINE_FLAGS = ("--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
                 "--host-resolver-rules=MAP * ~NOTFOUND")
LOCAL = ("file://", "data:", "blob:", "about:")


def _fontconfig(tmp: Path, fonts: str = "cjk") -> dict:
    """"cjk": the system's fonts plus the CJK font the charts use. "bare": no
    system font at all, only matplotlib's DejaVu, so the result does not depend
    on whether this machine happens to have a CJK font installed."""
    if fonts == "bare":
        import matplotlib
        dirs = f"<dir>{Path(matplotlib.get_data_path()) / 'fonts' / 'ttf'}</dir>"
    else:
        font = find_cjk_font()
        if not font:
            return {}
        dirs = f'<include ignore_missing="yes">/etc/fonts/fonts.conf</include>\n  <dir>{font.parent}</dir>'
    conf = tmp / "fonts.conf"
    conf.write_text(f"""<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  {dirs}
  <cachedir>{tmp / "fccache"}</cachedir>
</fontconfig>
""")
    return {"FONTCONFIG_FILE": str(conf)}


INSPECT = """(async () => {
  const imgs = Array.from(document.images);
  await Promise.all(imgs.map(i => i.decode ? i.decode().catch(() => null) : null));
  return {
    images: imgs.map(i => ({src: i.src.slice(0, 30), alt: i.alt, w: i.naturalWidth, h: i.naturalHeight,
                            complete: i.complete})),
    text: document.body.innerText,
    title: document.title,
    scripts: document.scripts.length,
    sortable: document.querySelectorAll("table.sortable").length,
    sections: Array.from(document.querySelectorAll("section[id]")).map(s => s.id),
  };
})()"""

SORT_CHECK = """(() => {
  const t = document.querySelector("table.sortable");
  if (!t) return null;
  const th = t.querySelector("thead th");
  th.click();
  const first = th.classList.contains("asc");
  th.click();
  return first && th.classList.contains("desc");
})()"""

PHONE_CHECK = "document.documentElement.scrollWidth <= window.innerWidth + 1"

# Every CJK character of the page's text, drawn on a canvas in the font its
# element uses (family, weight, style), compared with a character no font has
# (U+10FFFD, private use): a character whose pixels are those of that box, or
# that leaves no ink, has no glyph on this page. Fonts the page declares are
# loaded first, as the page's own layout does.
GLYPH_CHECK = r"""(async () => {
  const cjk = /[\u2e80-\u2fdf\u3001-\u303f\u3040-\u9fff\uac00-\ud7af\uf900-\ufaff\ufe30-\ufe4f\uff01-\uffee]/u;
  const groups = new Map();
  const walk = document.createTreeWalker(document.documentElement, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const el = n.parentElement;
    if (!el || ["SCRIPT", "STYLE", "TITLE"].includes(el.tagName)) continue;
    const cs = getComputedStyle(el);
    const font = `${cs.fontStyle} ${cs.fontWeight} 40px ${cs.fontFamily}`;
    const set = groups.get(font) || new Set();
    for (const ch of n.data) if (cjk.test(ch)) set.add(ch);
    groups.set(font, set);
  }
  await document.fonts.ready;
  const cv = document.createElement("canvas");
  cv.width = cv.height = 56;
  const g = cv.getContext("2d", {willReadFrequently: true});
  const ink = (font, ch) => {
    g.clearRect(0, 0, 56, 56); g.font = font; g.fillStyle = "#000"; g.fillText(ch, 4, 46);
    const d = g.getImageData(0, 0, 56, 56).data, a = new Uint8Array(d.length / 4);
    for (let i = 0; i < a.length; i++) a[i] = d[4 * i + 3];
    return a;
  };
  const same = (x, y) => x.every((v, i) => v === y[i]);
  const missing = new Set(), checked = new Set();
  for (const [font, set] of groups) {
    if (!set.size) continue;
    await document.fonts.load(font, [...set].join(""));
    const box = ink(font, "\u{10FFFD}");
    for (const ch of set) {
      checked.add(ch);
      const a = ink(font, ch);
      if (same(a, box) || a.every(v => v === 0)) missing.add(ch);
    }
  }
  return {checked: [...checked].join(""), missing: [...missing].join(""),
          fonts: [...document.fonts].map(f => ({family: f.family, status: f.status})),
          body_font: getComputedStyle(document.body).fontFamily};
})()"""


def _watch(page, seen: dict) -> None:
    """Every request the page makes is recorded; one that would leave the
    machine is refused (and listed), so a report that needs the network shows."""
    page.on("request", lambda r: seen["requests"].append(r.url))
    page.on("requestfailed", lambda r: seen["failed_loads"].append({"url": r.url, "error": r.failure}))
    page.on("console", lambda m: seen["console"].append({"type": m.type, "text": m.text})
            if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: seen["console"].append({"type": "pageerror", "text": str(e)}))

    def route(r):
        if r.request.url.startswith(LOCAL):
            r.continue_()
        else:
            seen["external_requests"].append(r.request.url)
            r.abort("internetdisconnected")
    page.route("**/*", route)


def _screenshots(browser, html: Path, shots_dir: Path, info: dict, seen: dict) -> dict:
    """Desktop (the whole page, up to 6,000 px) and phone (one screen at 390 px)."""
    shots_dir.mkdir(parents=True, exist_ok=True)
    desktop, phone_shot = shots_dir / f"{html.stem}-desktop.png", shots_dir / f"{html.stem}-phone.png"
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    _watch(page, seen)
    page.goto(html.as_uri(), wait_until="load")
    height = min(int(page.evaluate("document.documentElement.scrollHeight")), 6000)
    page.screenshot(path=str(desktop), full_page=True, clip={"x": 0, "y": 0, "width": 1280, "height": height})
    page.close()
    phone_ctx = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True)
    phone = phone_ctx.new_page()
    _watch(phone, seen)
    phone.goto(html.as_uri(), wait_until="load")
    info["phone_fits"] = phone.evaluate(PHONE_CHECK)
    phone.screenshot(path=str(phone_shot))
    phone_ctx.close()
    return {"desktop": str(desktop), "phone": str(phone_shot)}


def inspect(html: Path, shots_dir: Path | None = None, timeout: float = 90.0, fonts: str = "cjk") -> dict:
    """Load `html` in headless Chromium; return requests, images, text, checks and screenshot paths.
    `fonts`: "cjk" (the system's fonts and a CJK one) or "bare" (Latin fonts only: see _fontconfig)."""
    from playwright.sync_api import sync_playwright
    html = Path(html).resolve()
    chrome = chromium_path()
    if not chrome:
        raise FileNotFoundError(f"chromium not found; install it: {INSTALL}")
    seen = {"requests": [], "external_requests": [], "failed_loads": [], "console": []}
    with tempfile.TemporaryDirectory(prefix="frameval-chromium-") as tmp, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chrome, args=[*CHROMIUM_FLAGS, *OFFLINE_FLAGS],
                                     env={**os.environ, **_fontconfig(Path(tmp), fonts)}, timeout=timeout * 1000)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(timeout * 1000)
            _watch(page, seen)
            page.goto(html.as_uri(), wait_until="load")
            info = page.evaluate(INSPECT)
            info["glyphs"] = page.evaluate(GLYPH_CHECK)
            info["sort_works"] = page.evaluate(SORT_CHECK)
            page.close()
            info["screenshots"] = _screenshots(browser, html, Path(shots_dir), info, seen) if shots_dir else {}
        finally:
            browser.close()
    info.update(seen)
    # a refused external request fails its load too: it is reported once, as external
    info["failed_loads"] = [f for f in seen["failed_loads"] if f["url"] not in seen["external_requests"]]
    return info

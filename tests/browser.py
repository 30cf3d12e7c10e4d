"""Open a report in headless Chromium with networking off, through the DevTools
protocol: which requests it made, whether every image decoded, its text, a
click on a sortable header, screenshots (desktop and phone width).

    PYTHONPATH=. python tests/browser.py report.html [shot.png]     (in the runner environment)

Only the tests use it. It needs a system Chromium (`python3 run_all.py test`
installs it as a setup step: frameval/testtools.py) and the `websocket-client`
package (environment.yml). For Chinese,
a CJK font is handed to Chromium through a private fontconfig file (the one
mplfonts ships), so the screenshot shows glyphs, not boxes, on a bare machine.
`inspect(..., fonts="bare")` instead gives Chromium Latin fonts only (matplotlib's
DejaVu), the machine a reader without a CJK font has: then only what the page
embeds can draw its Chinese, and `glyphs` lists every character drawn as a box.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from frameval.report.charts import find_cjk_font
from frameval.testtools import INSTALL, chromium_path

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--no-default-browser-check",
         "--hide-scrollbars", "--mute-audio",
         # networking off: no proxy can be reached and no name resolves
         "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
         "--host-resolver-rules=MAP * ~NOTFOUND")


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


class Page:
    def __init__(self, ws):
        self.ws, self.n, self.events = ws, 0, []

    def call(self, method, timeout=60, **params):
        self.n += 1
        my = self.n
        self.ws.send(json.dumps({"id": my, "method": method, "params": params}))
        end = time.time() + timeout
        while time.time() < end:
            self.ws.settimeout(max(0.1, end - time.time()))
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)
        raise TimeoutError(method)

    def wait_event(self, name, timeout=60):
        for e in self.events:
            if e.get("method") == name:
                return e
        end = time.time() + timeout
        while time.time() < end:
            self.ws.settimeout(max(0.1, end - time.time()))
            msg = json.loads(self.ws.recv())
            self.events.append(msg)
            if msg.get("method") == name:
                return msg
        raise TimeoutError(name)

    def js(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if r.get("exceptionDetails"):
            raise RuntimeError(f"JS error: {r['exceptionDetails']}")
        return r["result"].get("value")

    def screenshot(self, path: Path, width: int, height: int, mobile: bool = False, full: bool = True,
                   max_height: int = 6000):
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1 if not mobile else 2, mobile=mobile)
        time.sleep(0.3)
        h = height
        if full:
            h = min(int(self.js("document.documentElement.scrollHeight")), max_height)
        shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=full,
                         clip={"x": 0, "y": 0, "width": width, "height": h, "scale": 1})
        Path(path).write_bytes(base64.b64decode(shot["data"]))
        return path


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


def inspect(html: Path, shots_dir: Path | None = None, timeout: float = 90.0, fonts: str = "cjk") -> dict:
    """Load `html` in headless Chromium; return requests, images, text, checks and screenshot paths.
    `fonts`: "cjk" (the system's fonts and a CJK one) or "bare" (Latin fonts only: see _fontconfig)."""
    html = Path(html).resolve()
    tmp = Path(tempfile.mkdtemp(prefix="frameval-chromium-"))
    proc = None
    try:
        proc, ws = _open(tmp, timeout, fonts)
        page = Page(ws)
        page.call("Network.enable")
        page.call("Page.enable")
        page.call("Runtime.enable")
        page.call("Log.enable")
        page.call("Page.navigate", url=html.as_uri())
        page.wait_event("Page.loadEventFired", timeout=timeout)
        info = page.js(INSPECT)
        time.sleep(0.5)
        requests = [e["params"]["request"]["url"] for e in page.events if e.get("method") == "Network.requestWillBeSent"]
        info["requests"] = requests
        info["external_requests"] = [u for u in requests if not (u.startswith("file://") or u.startswith("data:"))]
        info["failed_loads"] = [e["params"] for e in page.events if e.get("method") == "Network.loadingFailed"]
        info["console"] = [e["params"] for e in page.events
                           if e.get("method") in ("Runtime.exceptionThrown", "Log.entryAdded")]
        shots = {}
        if shots_dir:
            shots_dir = Path(shots_dir)
            shots_dir.mkdir(parents=True, exist_ok=True)
            stem = html.stem
            shots["desktop"] = str(page.screenshot(shots_dir / f"{stem}-desktop.png", 1280, 900))
            shots["phone"] = str(page.screenshot(shots_dir / f"{stem}-phone.png", 390, 844, mobile=True,
                                                 full=False))
            info["phone_fits"] = page.js(PHONE_CHECK)
        info["screenshots"] = shots
        info["glyphs"] = page.js(GLYPH_CHECK)
        info["sort_works"] = page.js(SORT_CHECK)
        ws.close()
        return info
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def _open(tmp: Path, timeout: float, fonts: str = "cjk"):
    """Start Chromium with a fresh profile in `tmp`; (process, DevTools socket of its page)."""
    import websocket  # websocket-client

    chrome = chromium_path()
    if not chrome:
        raise FileNotFoundError(f"chromium not found; install it: {INSTALL}")
    proc = subprocess.Popen([chrome, *FLAGS, f"--user-data-dir={tmp / 'profile'}", "--remote-debugging-port=0",
                             "--remote-allow-origins=*", "--window-size=1280,900", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(os.environ, **_fontconfig(tmp, fonts)))
    try:
        port_file = tmp / "profile" / "DevToolsActivePort"
        end = time.time() + timeout
        while not port_file.exists() or not port_file.read_text().strip():
            if proc.poll() is not None:
                raise RuntimeError(f"chromium exited: {proc.stderr.read().decode(errors='replace')[-2000:]}")
            if time.time() > end:
                raise TimeoutError("chromium did not open its DevTools port")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, never a proxy
        targets = json.loads(opener.open(f"http://127.0.0.1:{port}/json/list", timeout=10).read())
        page_t = next(t for t in targets if t.get("type") == "page")
        return proc, websocket.create_connection(page_t["webSocketDebuggerUrl"], timeout=timeout,
                                                 suppress_origin=True)
    except BaseException:
        proc.kill()
        raise


if __name__ == "__main__":
    import sys
    res = inspect(Path(sys.argv[1]), Path(sys.argv[2]).parent if len(sys.argv) > 2 else Path("."),
                  fonts=os.environ.get("FRAMEVAL_BROWSER_FONTS", "cjk"))
    res.pop("text", None)
    print(json.dumps(res, indent=1, ensure_ascii=False)[:5000])

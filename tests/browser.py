"""Open a report in headless Chromium with networking off, through the DevTools
protocol: which requests it made, whether every image decoded, its text, a
click on a sortable header, screenshots (desktop and phone width).

    PYTHONPATH=. python tests/browser.py report.html [shot.png]     (in the runner environment)

Only the tests use it. It needs a system Chromium (`python3 run_all.py test`
installs it as a setup step: frameval/testtools.py) and the `websocket-client`
package (environment.yml). For Chinese,
a CJK font is handed to Chromium through a private fontconfig file (the one
mplfonts ships), so the screenshot shows glyphs, not boxes, on a bare machine.
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


def _fontconfig(tmp: Path) -> dict:
    font = find_cjk_font()
    if not font:
        return {}
    conf = tmp / "fonts.conf"
    conf.write_text(f"""<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>
  <dir>{font.parent}</dir>
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


def inspect(html: Path, shots_dir: Path | None = None, timeout: float = 90.0) -> dict:
    """Load `html` in headless Chromium; return requests, images, text, checks and screenshot paths."""
    html = Path(html).resolve()
    tmp = Path(tempfile.mkdtemp(prefix="frameval-chromium-"))
    proc = None
    try:
        proc, ws = _open(tmp, timeout)
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


def _open(tmp: Path, timeout: float):
    """Start Chromium with a fresh profile in `tmp`; (process, DevTools socket of its page)."""
    import websocket  # websocket-client

    chrome = chromium_path()
    if not chrome:
        raise FileNotFoundError(f"chromium not found; install it: {INSTALL}")
    proc = subprocess.Popen([chrome, *FLAGS, f"--user-data-dir={tmp / 'profile'}", "--remote-debugging-port=0",
                             "--remote-allow-origins=*", "--window-size=1280,900", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(os.environ, **_fontconfig(tmp)))
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
    res = inspect(Path(sys.argv[1]), Path(sys.argv[2]).parent if len(sys.argv) > 2 else Path("."))
    res.pop("text", None)
    print(json.dumps(res, indent=1, ensure_ascii=False)[:5000])

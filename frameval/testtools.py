"""What `python3 run_all.py test` sets up on the machine before pytest starts:
the system browser that tests/test_report.py drives (headless Chromium, through
Playwright's `executable_path`: Playwright's own browser download is never
used), and the flags it runs with. Installing it is a printed step here, never
a side effect inside a test; a browser still missing is a test failure that
names INSTALL. Standard library only."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")
INSTALL = "apt-get update && apt-get install -y --no-install-recommends chromium"
# Chromium as root needs --no-sandbox; the rest keep it from calling home (updates,
# sync, field trials, QUIC) so that the only requests are the page's own.
CHROMIUM_FLAGS = ("--no-sandbox", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--disable-quic", "--disable-gpu",
                  "--disable-default-apps", "--disable-extensions", "--no-default-browser-check",
                  "--hide-scrollbars", "--mute-audio")


def chromium_path() -> str | None:
    for name in BROWSERS:
        p = shutil.which(name)
        if p:
            return p
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


def ensure_browser(say=print) -> bool:
    """Install Chromium with apt-get when it is missing and this process may
    (root, Debian/Ubuntu). Says what it does; True when a browser is there."""
    found = chromium_path()
    if found:
        say(f"frameval: test setup: browser {found}")
        return True
    if not (hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get")):
        say(f"frameval: test setup: no chromium, and this user cannot install it; the browser test will fail "
            f"until it is installed (as root: {INSTALL})")
        return False
    say(f"frameval: test setup: installing chromium ({INSTALL}) ...")
    p = subprocess.run(INSTALL, shell=True, capture_output=True, text=True,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    if p.returncode != 0 or not chromium_path():
        tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["?"]
        say(f"frameval: test setup: installing chromium failed ({tail[0]}); the browser test will fail")
        return False
    say(f"frameval: test setup: browser {chromium_path()}")
    return True

"""Debian's headless Chromium driven by selenium through Debian's chromedriver (never a
downloaded browser), with the page's console and network requests recorded."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# As root Chromium needs --no-sandbox; the rest keep it from reaching out on its own (updates,
# sync, field trials) on a machine with no network (see the machine notes)
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,1000",
)


def available() -> str | None:
    """Why the browser cannot run here (None: it can)."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not Path(path).exists():
            return (
                f"{path} is not installed (`make test` installs Debian's chromium and "
                "chromium-driver as root)"
            )
    return None


class Browser:
    def __init__(self) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        self.profile = tempfile.mkdtemp(prefix="cloudhpc-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in FLAGS:
            options.add_argument(flag)
        options.add_argument(f"--user-data-dir={self.profile}")
        options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)

    def open(self, path: Path, settle_s: float = 0.5) -> tuple[list[dict], list[str]]:
        """Load a file; returns (console entries, URLs the page requested other than itself).
        Requests are the performance log's Network.requestWillBeSent events whose document is
        this page (the browser's own pages at start-up are not the page's)."""
        self.driver.get_log("browser")
        self.driver.get_log("performance")
        url = path.resolve().as_uri()
        self.driver.get(url)
        self.wait_for("document.readyState === 'complete'")
        time.sleep(settle_s)  # a request made by a timer or a late script still shows
        console = self.driver.get_log("browser")
        requests = []
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message["method"] != "Network.requestWillBeSent":
                continue
            params = message["params"]
            if params.get("documentURL") == url and params["request"]["url"] != url:
                requests.append(params["request"]["url"])
        return console, requests

    def js(self, script: str, *args):
        return self.driver.execute_script(script, *args)

    def wait_for(self, condition: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not self.js(f"return Boolean({condition})"):
            if time.monotonic() > deadline:
                raise TimeoutError(condition)
            time.sleep(0.05)

    def quit(self) -> None:
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)

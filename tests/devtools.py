"""Headless Chromium driven through its DevTools protocol (a websocket): open a page, run JavaScript, take a screenshot.

Enough for a browser's view of a page that needs a login and a click, without a browser-automation package.
"""
import asyncio
import base64
import itertools
import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

from tornado.websocket import websocket_connect

CHROMIUM = shutil.which("chromium")
STARTUP = 60  # seconds Chromium may take to open its DevTools port: a runaway bound


class Browser:
    """A headless Chromium (a context manager) with one page; every call waits for its answer."""

    def __init__(self, profile, size=(1400, 900)):
        self.profile = Path(profile)
        self.size = size
        self.ids = itertools.count(1)

    def __enter__(self):
        self.process = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync",
             "--disable-background-networking", "--disable-component-update", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile}", f"--window-size={self.size[0]},{self.size[1]}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port = self._port()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as listing:
            page = next(target for target in json.load(listing) if target["type"] == "page")
        self.loop = asyncio.new_event_loop()
        self.socket = self.loop.run_until_complete(self._connect(page["webSocketDebuggerUrl"]))
        self.call("Emulation.setDeviceMetricsOverride", width=self.size[0], height=self.size[1], deviceScaleFactor=1,
                  mobile=False)  # the page's own size, whatever the headless window's frame takes
        return self

    async def _connect(self, address):
        return await websocket_connect(address, max_message_size=64 * 2**20)  # a screenshot is one message

    def __exit__(self, *exc):
        try:
            self.loop.run_until_complete(self._close())
            self.loop.close()
        finally:
            self.process.kill()
            self.process.wait()

    async def _close(self):
        self.socket.close()

    def _port(self):
        marker, deadline = self.profile / "DevToolsActivePort", time.monotonic() + STARTUP
        while not (marker.is_file() and marker.read_text().strip()):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise AssertionError("Chromium did not open its DevTools port")
            time.sleep(0.2)
        return int(marker.read_text().split()[0])

    def call(self, method, **params):
        """The result of one DevTools command."""
        return self.loop.run_until_complete(self._call(method, params))

    async def _call(self, method, params):
        number = next(self.ids)
        await self.socket.write_message(json.dumps({"id": number, "method": method, "params": params}))
        while True:
            answer = json.loads(await self.socket.read_message())
            if answer.get("id") == number:
                if "error" in answer:
                    raise AssertionError(f"{method}: {answer['error']}")
                return answer["result"]

    def open(self, url):
        self.call("Page.navigate", url=url)

    def evaluate(self, expression):
        """The value of a JavaScript expression in the page (a promise is awaited)."""
        result = self.call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        return result["result"].get("value")

    def wait_for(self, expression, seconds=120):
        """Wait until the expression is truthy in the page; its value."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(expression)
            except AssertionError:  # the page is between documents
                value = None
            if value:
                return value
            time.sleep(0.5)
        raise AssertionError(f"the page never satisfied {expression!r}; it shows: "
                             f"{self.evaluate('document.body ? document.body.innerText : null')!r:.1500}")

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png")["data"]
        Path(path).write_bytes(base64.b64decode(data))
        return Path(path)

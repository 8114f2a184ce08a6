"""A headless Chromium driven over the DevTools protocol on a pipe, to check report pages.

Chromium (Debian's ``chromium`` package, installed by ``scripts/setup``) runs
with ``--remote-debugging-pipe``: commands go in on fd 3 and answers and
events come out on fd 4, one JSON message each, NUL-terminated, so no port is
opened. Its proxy points at a closed loopback port, so a page that tried the
network could reach nothing; every request the page makes is recorded anyway
(``Network.requestWillBeSent``) with console errors and uncaught exceptions.
Used by the report's browser test and by ``scripts/report_screenshot``.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM_NAMES = ("chromium", "chromium-browser", "chromium-headless-shell")

DRAWN_JS = """
(() => {
  const canvases = (root) => {
    const found = [...root.querySelectorAll('canvas')];
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) found.push(...canvases(el.shadowRoot));
    }
    return found;
  };
  return [...document.querySelectorAll('.chart')].map((chart) => {
    let colored = 0;
    for (const canvas of canvases(chart)) {
      if (!canvas.width || !canvas.height) continue;
      const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
      for (let i = 0; i < data.length; i += 4) {
        const hi = Math.max(data[i], data[i + 1], data[i + 2]);
        const lo = Math.min(data[i], data[i + 1], data[i + 2]);
        if (data[i + 3] > 0 && hi - lo > 60) colored += 1;
      }
    }
    return [chart.dataset.chart, colored];
  });
})()
"""
"""Per chart div: its name and how many strongly coloured pixels its canvases hold."""

DRAWN_CHARTS_JS = """
(() => {
  const out = {};
  for (const figure of document.querySelectorAll('figure.chart')) {
    const canvas = figure.querySelector('canvas').getBoundingClientRect();
    const legend = figure.querySelector('.legend').getBoundingClientRect();
    const drawn = (window.protobenchCharts || {})[figure.dataset.chart] || null;
    out[figure.dataset.chart] = {
      drawn, canvasBottom: canvas.bottom, legendTop: legend.top, legendHeight: legend.height,
    };
  }
  return out;
})()
"""
"""Per chart of a report page (its own charts): what its script drew (plot area, tick labels
and where they lie, mark labels, points), and where its legend lies against its canvas."""


def find_chromium() -> str | None:
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _high_pipe() -> tuple[int, int]:
    """A pipe on fds above 10, clear of the 3 and 4 the child must receive it on."""
    ends = []
    for fd in os.pipe():
        ends.append(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10))
        os.close(fd)
    return ends[0], ends[1]


@dataclass
class PageLoad:
    """What a page did while it loaded."""

    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    charts: dict[str, int] = field(default_factory=dict)
    load_seconds: float = 0.0
    drawn_seconds: float = 0.0


class Browser:
    """One headless Chromium process and one page in it."""

    def __init__(self, executable: str, width: int = 1280, height: int = 900) -> None:
        self.profile = tempfile.TemporaryDirectory(prefix="pb-chromium-")
        to_child, self._out = _high_pipe()
        self._in, from_child = _high_pipe()
        args = [
            executable,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-default-apps",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            f"--proxy-server=http://127.0.0.1:{closed_port()}",
            "--proxy-bypass-list=<-loopback>",
            f"--user-data-dir={self.profile.name}",
            "--remote-debugging-pipe",
            "about:blank",
        ]
        # Chromium reads the pipe on fd 3 and writes on fd 4: bash moves them there.
        moves = f"3<&{to_child} 4>&{from_child} {to_child}<&- {from_child}>&-"
        self.proc = subprocess.Popen(
            ["bash", "-c", f'exec "$@" {moves}', "chromium", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(to_child, from_child),
        )
        os.close(to_child)
        os.close(from_child)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", {}, self.session)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            self.session,
        )

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._in], [], [], left)[0]:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._in, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed its DevTools pipe")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        parsed: dict[str, Any] = json.loads(message)
        return parsed

    def call(
        self, method: str, params: dict[str, Any], session: str | None = None, timeout: float = 30.0
    ) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            answer = self._read(deadline)
            if answer.get("id") != self._next_id:
                self.events.append(answer)
                continue
            if "error" in answer:
                raise RuntimeError(f"{method}: {answer['error']}")
            result: dict[str, Any] = answer.get("result", {})
            return result

    def wait_event(self, method: str, timeout: float, since: int = 0) -> None:
        """Wait for an event ``method`` among the events from index ``since`` on."""
        deadline = time.monotonic() + timeout
        if any(e.get("method") == method for e in self.events[since:]):
            return
        while True:
            event = self._read(deadline)
            self.events.append(event)
            if event.get("method") == method:
                return

    def evaluate(self, expression: str) -> Any:
        result = self.call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True}, self.session
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"evaluate: {result['exceptionDetails']}")
        return result["result"].get("value")

    def load(self, path: Path, min_colored: int, timeout: float = 60.0) -> PageLoad:
        """Open ``path``; wait for its load event and until every chart is drawn (or timeout)."""
        started = time.monotonic()
        since = len(self.events)  # an earlier page's load event is not this one's
        self.call("Page.navigate", {"url": path.resolve().as_uri()}, self.session)
        self.wait_event("Page.loadEventFired", timeout, since)
        outcome = PageLoad(load_seconds=time.monotonic() - started)
        deadline = started + timeout
        while True:
            outcome.charts = dict(self.evaluate(DRAWN_JS))
            drawn = all(v >= min_colored for v in outcome.charts.values())
            if drawn or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        outcome.drawn_seconds = time.monotonic() - started
        self.call("Runtime.evaluate", {"expression": "0"}, self.session)  # collect late events
        for event in self.events:
            method = event.get("method")
            params = event.get("params", {})
            if method == "Network.requestWillBeSent":
                outcome.requests.append(params["request"]["url"])
            elif method == "Runtime.exceptionThrown":
                outcome.errors.append(json.dumps(params["exceptionDetails"])[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                outcome.errors.append(json.dumps(params.get("args"))[:500])
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                outcome.errors.append(params["entry"].get("text", "")[:500])
        return outcome

    def mouse(self, kind: str, x: float, y: float, clicks: int = 1) -> None:
        """A mouse event at viewport ``(x, y)``: ``mouseMoved``, ``mousePressed``, ``mouseReleased``
        (the left button)."""
        params: dict[str, Any] = {"type": kind, "x": x, "y": y}
        if kind != "mouseMoved":
            params.update(button="left", clickCount=clicks)
        else:
            params["buttons"] = 0
        self.call("Input.dispatchMouseEvent", params, self.session)

    def drawn_charts(self) -> dict[str, dict[str, Any]]:
        """:data:`DRAWN_CHARTS_JS` of the page loaded."""
        found: dict[str, dict[str, Any]] = self.evaluate(DRAWN_CHARTS_JS)
        return found

    def screenshot(self, height: int | None = None, top: float = 0.0) -> bytes:
        """A PNG of the page from ``top`` (``height`` CSS pixels, default the viewport)."""
        params: dict[str, Any] = {"format": "png"}
        if height is not None:
            width = self.evaluate("document.documentElement.scrollWidth")
            params["clip"] = {"x": 0, "y": top, "width": width, "height": height, "scale": 1}
            params["captureBeyondViewport"] = True
        return base64.b64decode(self.call("Page.captureScreenshot", params, self.session)["data"])

    def close(self) -> None:
        with contextlib.suppress(OSError, RuntimeError, TimeoutError):
            self.call("Browser.close", {}, timeout=5.0)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        os.close(self._in)
        os.close(self._out)
        self.profile.cleanup()


@contextlib.contextmanager
def browser(executable: str, width: int = 1280, height: int = 900) -> Iterator[Browser]:
    instance = Browser(executable, width, height)
    try:
        yield instance
    finally:
        instance.close()

"""A fixture helper: the embedded HTTP target in its own process, on a free loopback port."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass
class ServedTarget:
    url: str
    process: subprocess.Popen[str]

    @property
    def pid(self) -> int:
        return self.process.pid

    def served(self) -> int:
        with urllib.request.urlopen(self.url + "__protobench__/stats", timeout=5) as reply:
            return int(json.loads(reply.read())["served"])

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)


@contextmanager
def http_target(*flags: str) -> Iterator[ServedTarget]:
    """Start ``protobench serve http --port 0 --announce FLAGS``; stop it afterwards."""
    process = subprocess.Popen(
        [sys.executable, "-m", "protobench", "serve", "http", "--port", "0", "--announce", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(
                f"http target did not start: {process.stderr.read() if process.stderr else ''}"
            )
        url = json.loads(line)["url"]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                ServedTarget(url, process).served()
                break
            except OSError:
                time.sleep(0.05)
        yield ServedTarget(url, process)
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()

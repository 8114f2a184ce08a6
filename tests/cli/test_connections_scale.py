"""Connections at scale with ``bench/connections`` (``pytest -m soak``; never in CI: minutes of
a whole machine). CI's smaller versions are in test_mqtt_connections.py (5,000 MQTT
connections over 2 source addresses) and test_ws_echo.py (WebSocket over 2 addresses).

Every connection asked for is held, none fails, and an idle MQTT connection costs the
client at most 4 KB of RSS. The counts stay below one process's open-file limit per server
process (this VM's hard limit is 20,000): 100,000 MQTT connections go to 6 mosquitto
processes, from 127.0.0.1 and, beyond 20,000 sessions, 127.0.0.2... (automatic
``source_addresses``).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.soak]
BENCH = Path(__file__).parents[2] / "bench" / "connections.py"


def _bench(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(BENCH), *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.timeout(700)
@pytest.mark.parametrize(
    ("kind", "count", "extra"),
    [("mqtt", 19_000, ()), ("mqtt", 100_000, ("--brokers", "6")), ("ws", 19_000, ())],
)
def test_every_connection_is_held(kind: str, count: int, extra: tuple[str, ...]) -> None:
    other = "ws" if kind == "mqtt" else "mqtt"
    out = _bench(f"--{kind}", str(count), f"--{other}", "0", "--hold", "2", *extra)
    assert f"{count:,} of {count:,} held" in out
    assert "failed" not in out
    assert "lost while held" not in out
    if kind == "mqtt":
        found = re.search(r"client ([\d.]+) KB/conn", out)
        assert found is not None
        assert float(found.group(1)) <= 4.0

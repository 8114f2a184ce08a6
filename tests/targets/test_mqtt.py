"""The embedded MQTT target: mosquitto started, announced with its own PID, stopped."""

from __future__ import annotations

import asyncio
from pathlib import Path

import psutil
import pytest

from protobench.targets.base import Announcement
from protobench.targets.mqtt import BrokerUnavailable, MqttBrokerOptions, MqttBrokerTarget
from tests.support.mqtt import PLUGIN, context, needs_mosquitto
from tests.support.timing import S

pytestmark = [pytest.mark.integration, needs_mosquitto, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_serve_announces_mosquittos_pid_and_stops_it() -> None:
    announced: asyncio.Future[Announcement] = asyncio.get_running_loop().create_future()
    serving = asyncio.create_task(
        MqttBrokerTarget().serve("127.0.0.1", 0, MqttBrokerOptions(), announced.set_result)
    )
    announcement = await asyncio.wait_for(announced, 15 * S)
    assert announcement.url.startswith("mqtt://127.0.0.1:")
    assert announcement.kind.startswith("mosquitto 2.")
    broker = psutil.Process(announcement.pid)
    assert broker.name() == "mosquitto"
    session = await PLUGIN.open_session(context(announcement.url, "idle"))
    await session.close()
    serving.cancel()
    with pytest.raises(asyncio.CancelledError):
        await serving
    assert not psutil.pid_exists(announcement.pid) or broker.status() == psutil.STATUS_ZOMBIE


async def test_a_mosquitto_that_cannot_start_is_reported() -> None:
    options = MqttBrokerOptions(password_file="/nonexistent/passwd")
    with pytest.raises(BrokerUnavailable, match="mosquitto"):
        await asyncio.wait_for(
            MqttBrokerTarget().serve("127.0.0.1", 0, options, lambda a: None), 30
        )


async def test_mosquitto_gets_the_open_file_limit_for_max_connections_or_one_line_why_not(
    capsys: pytest.CaptureFixture[str],
) -> None:
    announced: asyncio.Future[Announcement] = asyncio.get_running_loop().create_future()
    wanted = 10**7  # more than any OS gives: the refusal is reported
    options = MqttBrokerOptions(max_connections=wanted)
    serving = asyncio.create_task(
        MqttBrokerTarget().serve("127.0.0.1", 0, options, announced.set_result)
    )
    announcement = await asyncio.wait_for(announced, 15 * S)
    soft, hard = psutil.Process(announcement.pid).rlimit(psutil.RLIMIT_NOFILE)
    conf = next(a for a in psutil.Process(announcement.pid).cmdline() if a.endswith(".conf"))
    assert f"max_connections {wanted}\n" in Path(conf).read_text()  # noqa: ASYNC240
    serving.cancel()
    with pytest.raises(asyncio.CancelledError):
        await serving
    assert soft == hard  # raised to the hard limit at least
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"mosquitto: the open-file limit stays {soft} ")

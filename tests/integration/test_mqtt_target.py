"""The embedded MQTT target: mosquitto started, announced with its own PID, stopped."""

from __future__ import annotations

import asyncio

import psutil
import pytest

from protobench.targets.base import Announcement
from protobench.targets.mqtt import BrokerUnavailable, MqttBrokerOptions, MqttBrokerTarget
from tests.integration.conftest_mqtt import PLUGIN, context, needs_mosquitto

pytestmark = [needs_mosquitto, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_serve_announces_mosquittos_pid_and_stops_it() -> None:
    announced: asyncio.Future[Announcement] = asyncio.get_running_loop().create_future()
    serving = asyncio.create_task(
        MqttBrokerTarget().serve("127.0.0.1", 0, MqttBrokerOptions(), announced.set_result)
    )
    announcement = await asyncio.wait_for(announced, 15)
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

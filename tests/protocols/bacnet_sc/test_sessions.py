"""bacnet-sc sessions against the embedded hub with echo nodes (mutual TLS and plaintext)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from protobench.hostutil import free_port
from protobench.protocols.bacnet_sc.plugin import BacnetScProtocol
from protobench.protocols.bacnet_sc.sessions import BroadcastSession
from protobench.protocols.base import AsyncSession, CallbackSession
from protobench.protocols.payloads import TaggedPayloads, parse_mix
from protobench.targets.bacnet_sc import BacnetScTarget
from protobench.tlsutil import generate, split_url_files, url_with_files
from protobench.vocab.errors import ErrorClass, OpError
from tests.support.echo import drive, open_session, serving
from tests.support.timing import S

pytestmark = [pytest.mark.integration, pytest.mark.anyio]
PLUGIN = BacnetScProtocol()
MIX = "25:30%, 200:30%, 800:25%, 1400:15%"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _expected_bytes(index: int, count: int, prefix: int = 5) -> int:
    payloads = TaggedPayloads(index, parse_mix(MIX))
    return sum(prefix + payloads.size(seq) for seq in range(1, count + 1))


@pytest.mark.parametrize("tls", [True, False])
async def test_unicast_and_broadcast_echoes_are_verified(tls: bool) -> None:
    async with serving(BacnetScTarget(), tls=tls) as target:
        assert target.url.startswith("wss://" if tls else "ws://")
        unicast = []
        for index in range(4):
            session = await open_session(PLUGIN, target.url, "unicast", index, payload=MIX)
            assert isinstance(session, CallbackSession)
            unicast.append(session)
        broadcast = []
        for index in range(2):
            session = await open_session(PLUGIN, target.url, "broadcast", index, payload=MIX)
            assert isinstance(session, AsyncSession)
            broadcast.append(session)

        async def five_broadcasts(session: AsyncSession) -> int:
            total = 0
            for _ in range(5):
                total += await session.call()
            return total

        outcome, *broadcast_bytes = await asyncio.gather(
            drive(unicast, 100), *(five_broadcasts(s) for s in broadcast)
        )
        for session in unicast + broadcast:
            await session.close()
    assert outcome.errors == {}
    assert outcome.ok == 400
    assert outcome.nbytes == sum(_expected_bytes(index, 100) for index in range(4))
    for index, nbytes in enumerate(broadcast_bytes):
        assert nbytes == 2 * _expected_bytes(index, 5)


async def test_broadcast_waiting_for_more_echoes_than_nodes_times_out() -> None:
    async with serving(BacnetScTarget(), nodes=1) as target:
        session = await open_session(PLUGIN, target.url, "broadcast", echoes=2, timeout=0.5 * S)
        assert isinstance(session, BroadcastSession)
        with pytest.raises(OpError) as info:
            await session.call()
        await session.close()
    assert info.value.error_class is ErrorClass.TIMEOUT
    assert "1 of 2 echoes" in str(info.value)


async def test_an_echo_node_that_does_not_exist_times_out() -> None:
    async with serving(BacnetScTarget()) as target:
        session = await open_session(
            PLUGIN, target.url, "unicast", nodes=["02:bb:00:00:00:09"], timeout=0.3
        )
        assert isinstance(session, CallbackSession)
        outcome = await drive([session], 2)
        await session.close()
    assert outcome.errors == {"timeout": 2}


async def test_a_wrong_ca_is_a_clear_connect_error(tmp_path: Path) -> None:
    other = generate(tmp_path, [])
    async with serving(BacnetScTarget()) as target:
        base, files = split_url_files(target.url)
        wrong = url_with_files(base, {**files, "ca_file": str(other.ca.cert)})
        with pytest.raises(OpError) as info:
            await open_session(PLUGIN, wrong, "unicast")
    assert info.value.error_class is ErrorClass.CONNECT
    assert "TLS certificate verification failed" in str(info.value)


async def test_no_hub_is_refused() -> None:
    with pytest.raises(OpError) as info:
        await open_session(PLUGIN, f"ws://127.0.0.1:{free_port()}", "unicast", timeout=2.0)
    assert info.value.error_class is ErrorClass.REFUSED


async def test_the_hub_going_away_fails_exchanges_as_closed() -> None:
    async with serving(BacnetScTarget()) as target:
        session = await open_session(PLUGIN, target.url, "unicast", timeout=2.0)
        assert isinstance(session, CallbackSession)
        assert (await drive([session], 20)).ok == 20
    for _ in range(100):
        outcome = await drive([session], 1)
        if outcome.errors:
            break
        await asyncio.sleep(0.05)
    assert outcome.errors == {"closed": 1}
    assert "hub connection" in outcome.messages[0]
    await session.close()

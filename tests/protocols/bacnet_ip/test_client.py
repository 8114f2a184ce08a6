"""The lean BACnet/IP client over real UDP: timeouts, retries, invoke-ID reuse, ICMP refusals."""

from __future__ import annotations

import asyncio
import socket
from collections import Counter

import pytest
from bac_py.types.enums import ObjectType, PropertyIdentifier
from bac_py.types.primitives import ObjectIdentifier

from protobench.protocols.bacnet_ip.client import DatagramClient
from protobench.protocols.bacnet_ip.codec import DeviceProbe, ReadRequest
from protobench.vocab.errors import ErrorClass, OpError
from tests.support.bacnet import Responder, SegmentingResponder
from tests.support.timing import S, eventually

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

AI1 = ObjectIdentifier(ObjectType.ANALOG_INPUT, 1)
PV = PropertyIdentifier.PRESENT_VALUE


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def client_for(
    responder: Responder,
    request_timeout: float,
    retries: int = 0,
    reuse: float = 0.0,
    counted: Counter[str] | None = None,
) -> DatagramClient:
    assert responder.transport is not None
    port = responder.transport.get_extra_info("sockname")[1]
    count = None if counted is None else (lambda name, n: counted.update({name: n}))
    return DatagramClient(
        "127.0.0.1", port, "127.0.0.1", None, request_timeout, retries, reuse, count
    )


async def test_reads_are_answered_and_checked() -> None:
    responder = await Responder.start(61.5)
    client = await client_for(responder, 2.0)
    try:
        assert await client.request(ReadRequest(AI1, PV, None, expect=61.5)) > 0
        with pytest.raises(OpError) as caught:
            await client.request(ReadRequest(AI1, PV, None, expect=60.0))
        assert caught.value.error_class == ErrorClass.VALIDATION
    finally:
        client.close()
        responder.close()


async def test_unanswered_request_is_resent_then_times_out() -> None:
    responder = await Responder.start()
    responder.silent = True
    counted: Counter[str] = Counter()
    client = await client_for(responder, 0.3, retries=2, counted=counted)
    loop = asyncio.get_running_loop()
    try:
        started = loop.time()
        with pytest.raises(OpError) as caught:
            await client.request(ReadRequest(AI1, PV, None))
        waited = loop.time() - started
    finally:
        client.close()
        responder.close()
    assert caught.value.error_class == ErrorClass.TIMEOUT
    assert 0.3 <= waited < 5.0
    assert client.resent == 2
    assert counted == {"resent": 2}, "reported to the group's counters"
    assert len(responder.requests) == 3
    assert len({(addr, invoke_id) for addr, invoke_id, _ in responder.requests}) == 1


async def test_one_request_in_flight_twice_is_resent_under_each_invoke_id() -> None:
    responder = await Responder.start()
    responder.silent = True
    client = await client_for(responder, 0.3, retries=1)
    request = ReadRequest(AI1, PV, None)
    try:
        outcomes = await asyncio.gather(
            client.request(request), client.request(request), return_exceptions=True
        )
    finally:
        client.close()
        responder.close()
    assert all(isinstance(o, OpError) and o.error_class == ErrorClass.TIMEOUT for o in outcomes)
    assert Counter(invoke_id for _, invoke_id, _ in responder.requests) == {0: 2, 1: 2}


async def test_late_reply_is_ignored_after_the_timeout() -> None:
    responder = await Responder.start()
    responder.delay = 0.4
    counted: Counter[str] = Counter()
    client = await client_for(responder, 0.1, counted=counted)
    try:
        with pytest.raises(OpError) as caught:
            await client.request(ReadRequest(AI1, PV, None))
        await eventually(lambda: client.stray > 0, 10 * S, "the late reply")
    finally:
        client.close()
        responder.close()
    assert caught.value.error_class == ErrorClass.TIMEOUT
    assert client.stray == 1
    assert counted == {"stray": 1}


async def _reads_in_turn(count: int, reuse: float) -> tuple[Responder, DatagramClient]:
    """``count`` reads one after another with invoke IDs kept ``reuse`` seconds."""
    responder = await Responder.start()
    client = await client_for(responder, 2.0, reuse=reuse)
    try:
        for _ in range(count):
            await client.request(ReadRequest(AI1, PV, None))
    finally:
        client.close()
        responder.close()
    return responder, client


async def test_invoke_ids_are_not_reused_within_the_reuse_window() -> None:
    responder, client = await _reads_in_turn(600, reuse=60.0)
    pairs = Counter((addr, invoke_id) for addr, invoke_id, _ in responder.requests)
    assert len(responder.requests) == 600
    assert max(pairs.values()) == 1
    assert len(client.lanes) == 3
    assert len({addr for addr, _, _ in responder.requests}) == 3


async def test_without_a_reuse_window_one_socket_wraps_its_ids() -> None:
    responder, client = await _reads_in_turn(300, reuse=0.0)
    assert len(client.lanes) == 1
    assert max(Counter(invoke_id for _, invoke_id, _ in responder.requests).values()) == 2


async def test_a_closed_port_is_refused() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = DatagramClient("127.0.0.1", port, "127.0.0.1", None, 2.0)
    try:
        with pytest.raises(OpError) as caught:
            await client.request(ReadRequest(AI1, PV, None))
    finally:
        client.close()
    assert caught.value.error_class == ErrorClass.REFUSED


async def test_close_ends_requests_in_flight() -> None:
    responder = await Responder.start()
    responder.silent = True
    client = await client_for(responder, 5.0)
    pending = asyncio.ensure_future(client.request(ReadRequest(AI1, PV, None)))
    await asyncio.sleep(0.05)
    client.close()
    with pytest.raises(OpError) as caught:
        await pending
    responder.close()
    assert caught.value.error_class == ErrorClass.CLOSED


async def test_segmented_reply_is_acknowledged_per_window_and_reassembled() -> None:
    responder = await SegmentingResponder.start(objects=300, size=200, window=3)
    client = DatagramClient("127.0.0.1", responder.port, "127.0.0.1", None, 5.0)
    probe = DeviceProbe(1, None)
    try:
        await client.request(probe)
        await asyncio.wait_for(responder.finished.wait(), 5)
    finally:
        client.close()
        responder.close()
    assert len(responder.chunks) == 8
    assert probe.objects == responder.objects
    assert responder.acks == [(0, False, 3), (3, False, 3), (6, False, 3), (7, False, 3)]


async def test_lost_segment_is_asked_for_again() -> None:
    responder = await SegmentingResponder.start(objects=300, size=200, window=3, drop=4)
    client = DatagramClient("127.0.0.1", responder.port, "127.0.0.1", None, 5.0)
    probe = DeviceProbe(1, None)
    try:
        await client.request(probe)
        await asyncio.wait_for(responder.finished.wait(), 5)
    finally:
        client.close()
        responder.close()
    assert probe.objects == responder.objects
    assert responder.acks[:3] == [(0, False, 3), (3, False, 3), (3, True, 3)]
    assert responder.acks[-1] == (7, False, 3)

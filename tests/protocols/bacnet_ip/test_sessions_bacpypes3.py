"""BACnet/IP against BACpypes3, an independent stack, over real UDP on loopback.

The devices run in subprocesses (:mod:`tests.support.peers.bacpypes3_device`) bound to
127.0.0.1 with 127.255.255.255 as broadcast address. BACpypes3 refuses the
wildcard device instance, segments big replies (unless told not to) and
answers a unicast Who-Is with a unicast I-Am.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from protobench.engine.metrics import OpRecorder
from protobench.protocols.bacnet_ip import inventory
from protobench.protocols.bacnet_ip.sessions import LeanSession
from protobench.protocols.base import StreamSession
from protobench.vocab.errors import ErrorClass
from tests.support.bacnet import bacpypes3_device, exchange, open_op, outcome
from tests.support.timing import S, eventually

pytestmark = [
    pytest.mark.integration,
    pytest.mark.anyio,
    pytest.mark.usefixtures("forget_learned_instances"),
]

BIG = 400
"""Analog inputs of the big device: with the device, its network port and the
5 + 3 + 2 + 1 other objects, a 413-object list (about 2 KB, two APDUs)."""
BIG_LIST = BIG + 13


@pytest.fixture(scope="module")
def big() -> Iterator[str]:
    with bacpypes3_device("--analog-inputs", str(BIG)) as (endpoint, instance):
        yield f"bacnet://{endpoint}/?device={instance}"


@pytest.fixture(scope="module")
def big_unsegmented() -> Iterator[str]:
    with bacpypes3_device("--analog-inputs", str(BIG), "--no-segmentation") as (endpoint, _):
        yield f"bacnet://{endpoint}/"


@pytest.fixture(scope="module")
def small() -> Iterator[str]:
    with bacpypes3_device("--drift", "--bbmd", "--instance", "77") as (endpoint, instance):
        yield f"bacnet://{endpoint}/?device={instance}&bbmd=1"


async def test_object_list_of_a_big_device_arrives_in_segments(big: str) -> None:
    error, session = await outcome(big, "object-list", {"expect_count": BIG_LIST})
    assert error is None
    assert isinstance(session, LeanSession)
    assert len(session.requests[0].objects) == BIG_LIST  # type: ignore[attr-defined]


async def test_wildcard_reads_of_a_big_device_work(big: str) -> None:
    session = await open_op(big, "read-property", {"objects": ["analog-input:*"]})
    try:
        assert isinstance(session, LeanSession)
        assert len(session.requests) == BIG
        for _ in range(3):
            error, _ = await exchange(session)
            assert error is None
    finally:
        await session.close()


async def test_unsegmented_big_device_is_read_as_an_array(big_unsegmented: str) -> None:
    session = await open_op(big_unsegmented, "read-property", {"objects": ["analog-input:*"]})
    try:
        assert isinstance(session, LeanSession)
        assert len(session.requests) == BIG
        error, _ = await exchange(session)
        assert error is None
    finally:
        await session.close()
    # The object-list op itself reads the list whole: the device says it cannot.
    error, _ = await outcome(big_unsegmented, "object-list")
    assert error is not None
    assert error.code == "abort:segmentation-not-supported"
    assert error.detail.startswith("device:1234 object-list")


async def test_fixed_selectors_need_no_object_list(big_unsegmented: str) -> None:
    session = await open_op(big_unsegmented, "read-property", {"objects": ["analog-input:1-5"]})
    try:
        assert isinstance(session, LeanSession)
        assert len(session.requests) == 5
        assert inventory._learned == {}
        for _ in range(5):
            error, _ = await exchange(session)
            assert error is None
    finally:
        await session.close()


async def test_refused_wildcard_instance_is_learnt_with_who_is(big_unsegmented: str) -> None:
    error, _ = await outcome(big_unsegmented, "read-property", {"objects": ["analog-value:*"]})
    assert error is None
    assert list(inventory._learned.values()) == [1234]


async def test_read_write_rpm_wpm_against_bacpypes3(small: str) -> None:
    error, _ = await outcome(
        small, "read-property", {"objects": ["analog-value:2"], "expect": 72.0}
    )
    assert error is None
    for value in (72.5, 68.0):
        error, _ = await outcome(
            small, "write-property", {"objects": ["analog-value:3"], "values": [value]}
        )
        assert error is None
        error, _ = await outcome(
            small, "read-property", {"objects": ["analog-value:3"], "expect": value}
        )
        assert error is None
    error, _ = await outcome(
        small,
        "read-property-multiple",
        {
            "requests": [
                {
                    "analog-input:1": ["present-value", "units", "object-name"],
                    "analog-value:1": ["all"],
                    "notification-class:1": ["recipient-list", "ack-required"],
                }
            ]
        },
    )
    assert error is None
    error, _ = await outcome(
        small,
        "write-property-multiple",
        {"requests": [{"analog-value:4": {"present-value": 74.5}}]},
    )
    assert error is None
    error, _ = await outcome(
        small, "read-property", {"objects": ["notification-class:1"], "property": "recipient-list"}
    )
    assert error is None


async def test_errors_name_the_object_and_property(small: str) -> None:
    error, _ = await outcome(small, "read-property", {"objects": ["analog-input:999"]})
    assert error is not None
    assert (error.error_class, error.code) == (ErrorClass.PROTOCOL, "object:unknown-object")
    assert error.detail.startswith("analog-input:999 present-value")


async def test_cov_notifications_from_bacpypes3(small: str) -> None:
    session = await open_op(small, "cov", {"objects": ["analog-input:1"], "lifetime": 60})
    assert isinstance(session, StreamSession)
    recorder = OpRecorder("cov")
    task = asyncio.create_task(session.run(recorder))
    await eventually(lambda: recorder.counters["notifications"] >= 2, 15 * S, "notifications")
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await session.close()
    assert len(recorder.latencies) == 1
    assert recorder.counters["notifications"] >= 2
    assert not recorder.errors, recorder.last_errors


async def test_cov_wildcard_learns_the_device_of_a_refused_wildcard_instance(
    small: str,
) -> None:
    url = small.replace("device=77&", "")
    session = await open_op(url, "cov", {"objects": ["analog-input:*"], "lifetime": 60})
    assert isinstance(session, StreamSession)
    await session.close()
    assert list(inventory._learned.values()) == [77]


async def test_who_is_sent_to_a_device_without_a_bbmd(big: str) -> None:
    error, _ = await outcome(big, "who-is", op_timeout=2.0)
    assert error is None
    error, _ = await outcome(big, "who-is", {"device": 99}, op_timeout=1.0)
    assert error is not None
    assert (error.error_class, error.detail) == (ErrorClass.TIMEOUT, "no I-Am in reply to Who-Is")


async def test_who_is_and_fdt_through_a_bacpypes3_bbmd(small: str) -> None:
    error, _ = await outcome(small, "who-is", op_timeout=3.0)
    assert error is None
    error, _ = await outcome(small, "read-fdt", {"min_entries": 0}, op_timeout=3.0)
    assert error is None

"""The beckn plugin against the embedded mock BPP: signatures, taxonomy, callbacks."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import orjson
import pytest

from protobench.protocols.beckn.keys import DEV_KEY_ID, DEV_PRIVATE_KEY, DEV_SUBSCRIBER_ID
from protobench.protocols.beckn.keys import private_key as load_private_key
from protobench.protocols.beckn.options import OPERATIONS
from protobench.protocols.beckn.payloads import BodyFactory
from protobench.protocols.beckn.plugin import BecknProtocol
from protobench.protocols.beckn.server import HandlerProtocol, json_bytes_response
from protobench.protocols.beckn.signing import Signer
from protobench.vocab.errors import ErrorClass
from tests.support.beckn import (
    SPEC_PRIVATE_KEY,
    SPEC_PUBLIC_KEY,
    beckn_context,
    bpp_server,
    bpp_stats,
    onix_ack_signature,
)
from tests.support.haystack import UVLOOP_BACKEND, error_of, exchange
from tests.support.timing import MS

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> tuple[str, dict[str, Any]]:
    return UVLOOP_BACKEND


async def _run(url: str, op: str, n: int = 3, **kwargs: Any) -> list[Any]:
    session = await BecknProtocol().open_session(beckn_context(url, op, **kwargs))
    try:
        return await exchange(session, n)
    finally:
        await session.close()


async def test_mock_bpp_accepts_our_signatures_for_every_action() -> None:
    async with bpp_server() as url:
        for op in OPERATIONS:
            results = await _run(url, op, n=5)
            assert [error for error, _ in results] == [None] * 5, (op, results)
        stats = await bpp_stats(url)
    assert stats["ack"] == 20
    assert stats["served"] == 20


async def test_tampered_body_is_rejected_with_401() -> None:
    signer = Signer(DEV_SUBSCRIBER_ID, DEV_KEY_ID, load_private_key(DEV_PRIVATE_KEY))
    bodies = BodyFactory(
        "discover", bap_id="bap", bap_uri="http://127.0.0.1/bap", bpp_id="bpp", bpp_uri="x",
        queries=["pizza"],
    )  # fmt: skip
    body = bodies()
    headers = {"Authorization": signer.authorization(body), "Content-Type": "application/json"}
    async with bpp_server() as url, httpx.AsyncClient() as client:
        good = await client.post(f"{url}/discover", content=body, headers=headers)
        tampered = body.replace(b"pizza", b"pizzb")
        bad = await client.post(f"{url}/discover", content=tampered, headers=headers)
        stats = await bpp_stats(url)
    assert good.status_code == 200
    assert good.json() == {"status": "ACK"}
    assert bad.status_code == 401
    assert bad.json()["error"]["message"] == "signature does not verify"
    assert bad.headers["www-authenticate"].startswith("Signature ")
    assert stats["unauthorized"] == 1


async def test_another_key_and_unsigned_requests_are_counted_auth() -> None:
    """The BPP has the development public key registered for bap.example.com|k1; we sign
    with another key (with the development key's own ids it is refused at load)."""
    ids = {"subscriber_id": "bap.example.com", "key_id": "k1"}
    async with bpp_server(**ids) as url:
        wrong_key = await _run(url, "discover", private_key=SPEC_PRIVATE_KEY, **ids)
        unsigned = await _run(url, "select", sign=False)
        stats = await bpp_stats(url)
    assert all(error_of(r, ErrorClass.AUTH).code == "401" for r in wrong_key)
    assert "does not verify" in error_of(wrong_key[0], ErrorClass.AUTH).detail
    assert "not a Signature" in error_of(unsigned[0], ErrorClass.AUTH).detail
    assert stats["unauthorized"] == 6
    assert stats.get("ack", 0) == 0


@pytest.mark.parametrize(
    ("shift", "reason"), [(-3600, "signature expired"), (3600, "created is in the future")]
)
async def test_signature_outside_its_window_is_rejected(shift: int, reason: str) -> None:
    signer = Signer(DEV_SUBSCRIBER_ID, DEV_KEY_ID, load_private_key(DEV_PRIVATE_KEY))
    body = BodyFactory(
        "confirm", bap_id="bap", bap_uri="http://127.0.0.1/bap", bpp_id="bpp", bpp_uri="x",
        queries=[],
    )()  # fmt: skip
    created = int(time.time()) + shift
    headers = {"Authorization": signer.authorization(body, created=created)}
    async with bpp_server() as url, httpx.AsyncClient() as client:
        reply = await client.post(f"{url}/confirm", content=body, headers=headers)
    assert reply.status_code == 401
    assert reply.json()["error"]["message"] == reason


async def test_a_registered_key_pair_of_our_choice_is_accepted() -> None:
    async with bpp_server(
        subscriber_id="bap.example.com", key_id="k1", public_key=SPEC_PUBLIC_KEY
    ) as url:
        ok = await _run(
            url, "discover", private_key=SPEC_PRIVATE_KEY, subscriber_id="bap.example.com",
            key_id="k1",
        )  # fmt: skip
        other_subscriber = await _run(url, "discover", private_key=SPEC_PRIVATE_KEY, key_id="k1")
    assert [error for error, _ in ok] == [None] * 3
    assert "unknown key" in error_of(other_subscriber[0], ErrorClass.AUTH).detail


async def test_bad_context_is_a_400_nack_protocol_error() -> None:
    signer = Signer(DEV_SUBSCRIBER_ID, DEV_KEY_ID, load_private_key(DEV_PRIVATE_KEY))
    body = b'{"context":{"action":"select"},"message":{}}'
    headers = {"Authorization": signer.authorization(body)}
    async with bpp_server() as url, httpx.AsyncClient() as client:
        wrong_path = await client.post(f"{url}/discover", content=body, headers=headers)
    assert wrong_path.status_code == 400
    assert wrong_path.json()["status"] == "NACK"
    assert "context lacks" in wrong_path.json()["error"]["message"]


async def test_reuse_ids_sends_one_fixed_body() -> None:
    async with bpp_server() as url:
        results = await _run(url, "discover", n=4, params={"reuse_ids": True})
    assert [error for error, _ in results] == [None] * 4


async def test_callbacks_are_correlated_and_timed_from_the_request() -> None:
    async with bpp_server(callback_delay="50ms") as url:
        session = await BecknProtocol().open_session(
            beckn_context(url, "discover", params={"await_callback": True})
        )
        try:
            started = time.perf_counter()
            results = await exchange(session, 4)
            elapsed = time.perf_counter() - started
        finally:
            await session.close()
        stats = await bpp_stats(url)
    assert [error for error, _ in results] == [None] * 4
    assert elapsed >= 4 * 0.05
    assert all(nbytes > 500 for _, nbytes in results)
    assert stats["callbacks"] == 4
    assert stats["callback_errors"] == 0


async def test_missing_callback_is_a_timeout() -> None:
    async with bpp_server() as url:
        ctx = beckn_context(url, "init", params={"await_callback": True})
        session = await BecknProtocol().open_session(
            ctx.__class__(**{**ctx.__dict__, "timeout": 0.3})
        )
        try:
            results = await exchange(session, 1)
        finally:
            await session.close()
    assert "no on_init callback" in error_of(results[0], ErrorClass.TIMEOUT).detail


async def test_connection_closed_by_the_bpp_while_idle_is_reopened() -> None:
    async with bpp_server(idle_timeout=0.3) as url:
        session = await BecknProtocol().open_session(beckn_context(url, "discover"))
        try:
            first = await exchange(session, 1)
            await asyncio.sleep(800 * MS)
            second = await exchange(session, 2)
        finally:
            await session.close()
        stats = await bpp_stats(url)
    assert [error for error, _ in first + second] == [None] * 3
    assert stats["ack"] == 3


async def test_acks_counter_signed_as_beckn_onix_1_8_2_signs_them_are_accepted() -> None:
    """A BPP that answers like beckn-onix v1.8.2's signAck step (the ACK's Signature bound to
    each request's own signature, made by the test's implementation of that algorithm):
    every ACK verifies with --opt bpp_public_key; an ACK bound to another request is
    ``validation:signature``."""
    requests: list[str] = []
    bind_to: list[str] = []

    def handle(method: bytes, url: bytes, authorization: str, body: bytes) -> bytes:
        requests.append(authorization)
        message_id = orjson.loads(body)["context"]["messageId"]
        ack = orjson.dumps({"message": {"status": "ACK", "messageId": message_id}})
        signed_for = bind_to[0] if bind_to else authorization
        header = onix_ack_signature(
            ack, signed_for, SPEC_PRIVATE_KEY, "bpp-network", "bpp-key", int(time.time())
        )
        return json_bytes_response("200 OK", ack, f"Signature: {header}\r\n")

    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: HandlerProtocol(handle), "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/bpp/receiver"
    try:
        results = await _run(url, "discover", n=5, bpp_public_key=SPEC_PUBLIC_KEY)
        assert [error for error, _ in results] == [None] * 5
        assert len(requests) == 5
        assert all('signature="' in value for value in requests)
        bind_to.append(requests[0])  # every ACK now bound to the first request
        results = await _run(url, "select", n=2, bpp_public_key=SPEC_PUBLIC_KEY)
        errors = [error for error, _ in results]
        assert all(e is not None and e.code == "signature" for e in errors), errors
    finally:
        server.close()
        await server.wait_closed()

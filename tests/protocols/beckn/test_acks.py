"""ACK/NACK replies in the shapes of the spec, of beckn-onix and of our mock; ACK signatures;
the key pair check at load time."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from protobench.protocols.beckn.acks import parse_ack, reply_error, signature_error
from protobench.protocols.beckn.callbacks import CallbackListener
from protobench.protocols.beckn.keys import (
    DEV_KEY_ID,
    DEV_PRIVATE_KEY,
    DEV_PUBLIC_KEY,
    DEV_SUBSCRIBER_ID,
    private_key,
    public_key,
)
from protobench.protocols.beckn.options import BecknOptions
from protobench.protocols.beckn.signing import Signer
from protobench.vocab.errors import ErrorClass
from tests.protocols.beckn.test_signing import SPEC_PRIVATE, SPEC_PUBLIC

MID = "6f6e6978-0000-4000-8000-000000000001"
TID = "6f6e6978-0000-4000-8000-000000000002"
# beckn.yaml v2 Ack / Nack, as beckn-onix writes them
V2_ACK = b'{"message":{"status":"ACK","messageId":"%s","transactionId":"%s"}}' % (
    MID.encode(),
    TID.encode(),
)
V2_NACK = (
    b'{"message":{"status":"NACK","messageId":"%s","transactionId":"%s","error":'
    b'{"code":"AUT_SIGNATURE_INVALID","message":"signature verification failed"}}}'
) % (MID.encode(), TID.encode())
V2_SCHEMA_NACK = (
    b'{"message":{"status":"NACK","messageId":"%s","error":{"code":'
    b'"SCH_SCHEMA_VALIDATION_FAILED","message":"context.bppId is required"}}}'
) % MID.encode()
# v1 (the spec's Ack with a top-level error; older onix puts the error in message)
V1_ACK = b'{"message":{"ack":{"status":"ACK"}}}'
V1_NACK = b'{"message":{"ack":{"status":"NACK"}},"error":{"code":"30004","message":"no item"}}'
ONIX_V1_NACK = (
    b'{"message":{"ack":{"status":"NACK"},"error":{"code":"Bad Request","message":"bad"}}}'
)
MOCK_ACK = b'{"status":"ACK"}'
MOCK_NACK = b'{"status":"NACK","error":{"code":"30001","message":"no such item"}}'


@pytest.mark.parametrize("body", [V2_ACK, V1_ACK, MOCK_ACK])
def test_every_ack_shape_is_a_success(body: bytes) -> None:
    assert reply_error(200, body, MID) is None
    assert reply_error(202, body) is None


@pytest.mark.parametrize(
    ("status", "body", "error_class", "code", "detail"),
    [
        (200, V2_NACK, "protocol", "AUT_SIGNATURE_INVALID", "signature verification failed"),
        (401, V2_NACK, "auth", "AUT_SIGNATURE_INVALID", "signature verification failed"),
        (400, V2_SCHEMA_NACK, "protocol", "SCH_SCHEMA_VALIDATION_FAILED", "context.bppId"),
        (200, V1_NACK, "protocol", "30004", "no item"),
        (400, ONIX_V1_NACK, "protocol", "Bad Request", "bad"),
        (200, MOCK_NACK, "protocol", "30001", "no such item"),
        (200, b'{"message":{"ack":{"status":"NACK"}}}', "protocol", "NACK", "NACK"),
        (401, b"", "auth", "401", "unauthorized"),
        (503, b"<html>busy</html>", "protocol", "503", "Service Unavailable"),
        (200, b'{"message":{"status":"MAYBE"}}', "validation", "", "neither ACK nor NACK"),
        (200, b"not json", "validation", "", "not JSON"),
        (200, b"[1]", "validation", "", "not an Ack"),
    ],
)
def test_a_nack_is_reported_with_its_error_code(
    status: int, body: bytes, error_class: str, code: str, detail: str
) -> None:
    error = reply_error(status, body, MID)
    assert error is not None
    assert error.error_class is ErrorClass(error_class)
    assert error.code == code
    assert detail in error.detail


def test_409_is_ack_no_callback_and_an_ack_for_another_message_is_wrong() -> None:
    assert reply_error(409, b'{"message":{"status":"NACK"}}') is None
    error = reply_error(200, V2_ACK, "another-id")
    assert error is not None
    assert error.error_class is ErrorClass.VALIDATION
    assert MID in error.detail
    assert parse_ack(V2_ACK) == parse_ack(V2_ACK.replace(b'"ACK"', b'"ACK"'))


def test_a_counter_signed_ack_verifies_with_the_bpp_key() -> None:
    """The ACK body signed like a request (the spec's key pair); the Signature header may
    carry the scheme word or only the fields."""
    signer = Signer("bpp.example.com", "bpp-key-1", private_key(SPEC_PRIVATE))
    header = signer.authorization(V2_ACK).encode()
    key = public_key(SPEC_PUBLIC)
    assert signature_error(header, V2_ACK, key) is None
    assert signature_error(header.removeprefix(b"Signature "), V2_ACK, key) is None
    tampered = signature_error(header, V2_ACK.replace(b"ACK", b"NACK"), key)
    assert tampered is not None
    assert "does not verify" in tampered.detail
    other = signature_error(header, V2_ACK, public_key(DEV_PUBLIC_KEY))
    assert other is not None
    assert other.code == "signature"
    missing = signature_error(None, V2_ACK, key)
    assert missing is not None
    assert missing.error_class is ErrorClass.VALIDATION
    assert "no Signature header" in missing.detail
    expired = signature_error(
        Signer("bpp", "k", private_key(SPEC_PRIVATE), ttl=1).authorization(V2_ACK, 1).encode(),
        V2_ACK,
        key,
    )
    assert expired is not None
    assert "expired" in expired.detail


def test_a_private_key_that_is_not_the_registered_one_is_refused_at_load() -> None:
    spec_key = {"private_key": SPEC_PRIVATE}
    with pytest.raises(ValidationError, match=r"development key's .* another one"):
        BecknOptions.model_validate(spec_key)
    with pytest.raises(ValidationError, match="not the given public_key"):
        BecknOptions.model_validate(
            {**spec_key, "subscriber_id": "bap.example.com", "public_key": DEV_PUBLIC_KEY}
        )
    BecknOptions.model_validate(
        {**spec_key, "subscriber_id": "bap.example.com", "public_key": SPEC_PUBLIC}
    )
    BecknOptions.model_validate({"private_key": DEV_PRIVATE_KEY})
    BecknOptions.model_validate({**spec_key, "sign": False})
    with pytest.raises(ValidationError, match="public key"):
        BecknOptions.model_validate({"bpp_public_key": "c2hvcnQ="})


def test_the_key_from_the_environment_is_checked_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BECKN_PRIVATE_KEY", SPEC_PRIVATE)
    with pytest.raises(ValidationError, match="development key's"):
        BecknOptions()
    BecknOptions(subscriber_id="bap.example.com")


def test_callbacks_are_acked_in_the_v2_shape_and_counter_signed() -> None:
    """onix checks the ACK of a callback: ours names the messageId and is signed."""
    listener = CallbackListener()
    got: list[int] = []
    listener.expect(MID, got.append)
    callback = b'{"context":{"action":"on_select","messageId":"%s","transactionId":"%s"}}' % (
        MID.encode(),
        TID.encode(),
    )
    unsigned = listener._handle(b"POST", b"/bap/on_select", "", callback)
    assert unsigned.split(b"\r\n\r\n", 1)[1] == V2_ACK
    assert b"Signature:" not in unsigned
    assert got == [len(callback)]
    listener.signer = Signer(DEV_SUBSCRIBER_ID, DEV_KEY_ID, private_key(DEV_PRIVATE_KEY))
    head, body = listener._handle(b"POST", b"/bap/on_select", "", callback).split(b"\r\n\r\n")
    assert reply_error(200, body, MID) is None
    header = next(line for line in head.split(b"\r\n") if line.startswith(b"Signature: "))
    signature = header.removeprefix(b"Signature: ")
    assert signature_error(signature, body, public_key(DEV_PUBLIC_KEY)) is None
    assert listener.unmatched == 1

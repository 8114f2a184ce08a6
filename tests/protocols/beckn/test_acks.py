"""ACK/NACK replies in the shapes of the spec, of beckn-onix and of our mock; ACK signatures;
the key pair check at load time."""

from __future__ import annotations

import time

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
from protobench.protocols.beckn.signing import (
    SignatureError,
    Signer,
    parse_authorization,
    verify_with,
)
from protobench.vocab.errors import ErrorClass
from tests.protocols.beckn.test_signing import SPEC_PRIVATE, SPEC_PUBLIC
from tests.support.beckn import onix_ack_signature

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


REQUEST = Signer("bap.example.com", "bap-key-1", private_key(SPEC_PRIVATE)).authorization(
    b'{"context":{"action":"discover"}}'
)


def test_an_ack_signed_as_beckn_onix_1_8_2_signs_it_verifies_bound_to_our_request() -> None:
    """onix v1.8.2's signAck: headers "(created) (expires) digest request-signature", and
    the request's signature as a fourth line (the vector is made by the test's own
    implementation of that algorithm)."""
    key = public_key(SPEC_PUBLIC)
    now = int(time.time())
    header = onix_ack_signature(V2_ACK, REQUEST, SPEC_PRIVATE, "bpp-network", "k", now).encode()
    assert signature_error(header, V2_ACK, key, REQUEST) is None
    # bound to the request: another request's signature (or none) does not verify
    other = Signer("bap.example.com", "bap-key-1", private_key(SPEC_PRIVATE)).authorization(b"{}")
    wrong = signature_error(header, V2_ACK, key, other)
    assert wrong is not None
    assert wrong.code == "signature"
    assert "bound to the request" in wrong.detail
    assert signature_error(header, V2_ACK, key, "") is not None
    # a reply to an unsigned request: the same header list over the three lines
    unsigned = onix_ack_signature(V2_ACK, "", SPEC_PRIVATE, "bpp-network", "k", now).encode()
    assert signature_error(unsigned, V2_ACK, key, "") is None
    # the spec's three-line form stays accepted, whatever the request
    assert (
        signature_error(
            Signer("bpp", "k", private_key(SPEC_PRIVATE)).authorization(V2_ACK).encode(),
            V2_ACK,
            key,
            REQUEST,
        )
        is None
    )


def test_our_reply_signature_is_the_one_beckn_onix_1_8_2_makes() -> None:
    """Same inputs, same bytes: Ed25519 is deterministic, so our reply signature equals the
    independent vector's, and a request's Authorization still refuses the reply form."""
    created = 1_700_000_000
    ours = Signer("bpp-network", "k", private_key(SPEC_PRIVATE)).authorization(
        V2_ACK, created, reply_to=REQUEST
    )
    assert ours == onix_ack_signature(V2_ACK, REQUEST, SPEC_PRIVATE, "bpp-network", "k", created)
    fields = parse_authorization(ours)
    with pytest.raises(SignatureError, match="headers must be"):
        verify_with(fields, V2_ACK, public_key(SPEC_PUBLIC), now=created)


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
    assert b'headers="(created) (expires) digest request-signature"' in signature
    assert signature_error(signature, body, public_key(DEV_PUBLIC_KEY), "") is None
    # a callback signed by the BPP: our ACK is bound to its signature, as onix checks it
    head, body = listener._handle(b"POST", b"/bap/on_select", REQUEST, callback).split(b"\r\n\r\n")
    header = next(line for line in head.split(b"\r\n") if line.startswith(b"Signature: "))
    signature = header.removeprefix(b"Signature: ")
    assert signature_error(signature, body, public_key(DEV_PUBLIC_KEY), REQUEST) is None
    assert signature_error(signature, body, public_key(DEV_PUBLIC_KEY), "") is not None
    assert listener.unmatched == 2

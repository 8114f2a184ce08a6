"""The Beckn signer against the spec's published vectors, and the receiver's checks."""

from __future__ import annotations

import base64
import re

import pytest
from pydantic import SecretStr

from protobench.protocols.beckn.keys import (
    DEV_PRIVATE_KEY,
    DEV_PUBLIC_KEY,
    KeyFormatError,
    private_key,
    public_bytes,
    public_key,
    resolve_private_key,
)
from protobench.protocols.beckn.signing import (
    SignatureError,
    Signer,
    body_digest,
    parse_authorization,
    signing_string,
    verify,
)

# "Signing Beckn APIs in HTTP" (beckn/protocol-specifications-v2, docs/10), section 6.
SPEC_PUBLIC = "awGPjRK6i/Vg/lWr+0xObclVxlwZXvTjWYtlu6NeOHk="
SPEC_PRIVATE = (
    "lP3sHA+9gileOkXYJXh4Jg8tK0gEEMbf9yCPnFpbldhrAY+NErqL9WD+Vav7TE5tyVXGXBle9ONZi2W7o144eQ=="
)
SPEC_CREATED, SPEC_EXPIRES = 1641287875, 1641291475
SPEC_DIGEST = (
    "b6lf6lRgOweajukcvcLsagQ2T60+85kRh/Rd2bdS+TG/5ALebOEgDJfyCrre/1+BMu5nA94o4DT3pTFXuUg7sw=="
)
SPEC_SIGNATURE = (
    "cjbhP0PFyrlSCNszJM1F/YmHDVAWsZqJUPzojnE/7TJU3fJ/rmIlgaUHEr5E0/2PIyf0tpSnWtT6cyNNlpmoAQ=="
)
SPEC_HEADER_RE = re.compile(
    r'^Signature keyId="[^|"]+\|[^|"]+\|[^"]+",algorithm="[^"]+",created="\d+",'
    r'expires="\d+",headers="[^"]+",signature="[A-Za-z0-9+/]+=*"$'
)
BODY = b'{"context":{"action":"discover"},"message":{"intent":{"textSearch":"pizza"}}}'


def test_blake2b_512_vector_of_the_spec() -> None:
    assert body_digest(b"The quick brown fox jumps over the lazy dog") == (
        "qK3Uvd39k+SHfSdG5igXsRY2Sh+nvBSNlQkLxzM7NnP4JAHPeqLkyx7NkCluPxTLVBP47Xe+cwRbE5FM3NapGA=="
    )


def test_spec_signature_reproduces_from_its_signing_string_and_key() -> None:
    text = signing_string(SPEC_CREATED, SPEC_EXPIRES, SPEC_DIGEST)
    assert text == (
        f"(created): {SPEC_CREATED}\n(expires): {SPEC_EXPIRES}\ndigest: BLAKE-512={SPEC_DIGEST}"
    )
    key = private_key(SPEC_PRIVATE)
    assert base64.b64encode(key.sign(text.encode())).decode() == SPEC_SIGNATURE
    public_key(SPEC_PUBLIC).verify(base64.b64decode(SPEC_SIGNATURE), text.encode())


def test_spec_key_pair_and_onix_dev_key_derive_their_public_keys() -> None:
    assert base64.b64encode(public_bytes(private_key(SPEC_PRIVATE).public_key())).decode() == (
        SPEC_PUBLIC
    )
    assert base64.b64encode(public_bytes(private_key(DEV_PRIVATE_KEY).public_key())).decode() == (
        DEV_PUBLIC_KEY
    )


def test_header_has_the_spec_shape_and_verifies() -> None:
    signer = Signer("bap.example.com", "ae3ea24b", private_key(SPEC_PRIVATE), ttl=3600)
    header = signer.authorization(BODY, created=SPEC_CREATED)
    assert SPEC_HEADER_RE.match(header)
    assert header.startswith(
        'Signature keyId="bap.example.com|ae3ea24b|ed25519",algorithm="ed25519",'
        f'created="{SPEC_CREATED}",expires="{SPEC_EXPIRES}",headers="(created) (expires) digest"'
    )
    keys = {("bap.example.com", "ae3ea24b"): public_key(SPEC_PUBLIC)}
    auth = verify(header, BODY, keys, now=SPEC_CREATED + 10)
    assert (auth.subscriber_id, auth.created, auth.expires) == (
        "bap.example.com",
        SPEC_CREATED,
        SPEC_EXPIRES,
    )
    assert "ae3ea24b" in repr(signer)
    assert SPEC_PRIVATE not in repr(signer)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ("body", "signature does not verify"),
        ("key", "unknown key"),
        ("late", "signature expired"),
        ("early", "created is in the future"),
        ("headers", "headers must be"),
        ("algorithm", "algorithm is not ed25519"),
        ("scheme", "not a Signature authorization"),
        ("garbage", "malformed"),
    ],
)
def test_receiver_rejects(change: str, reason: str) -> None:
    signer = Signer("bap", "k1", private_key(SPEC_PRIVATE), ttl=300)
    header = signer.authorization(BODY, created=1000)
    keys = {("bap", "k1"): public_key(SPEC_PUBLIC)}
    body, now = BODY, 1100.0
    if change == "body":
        body = BODY.replace(b"pizza", b"pizzb")
    elif change == "key":
        keys = {("bap", "k2"): public_key(SPEC_PUBLIC)}
    elif change == "late":
        now = 1000 + 300 + 6
    elif change == "early":
        now = 1000 - 6
    elif change == "headers":
        header = header.replace("(created) (expires) digest", "digest")
    elif change == "algorithm":
        header = header.replace('algorithm="ed25519"', 'algorithm="rsa"')
    elif change == "scheme":
        header = header.replace("Signature ", "Bearer ", 1)
    else:
        header = 'Signature keyId="only-one-part"'
    with pytest.raises(SignatureError, match=reason):
        verify(header, body, keys, now=now)


def test_skew_tolerance_of_five_seconds() -> None:
    signer = Signer("bap", "k1", private_key(SPEC_PRIVATE), ttl=300)
    header = signer.authorization(BODY, created=1000)
    keys = {("bap", "k1"): public_key(SPEC_PUBLIC)}
    verify(header, BODY, keys, now=995)
    verify(header, BODY, keys, now=1305)


def test_parse_authorization_fields() -> None:
    header = Signer("s", "k", private_key(DEV_PRIVATE_KEY), ttl=60).authorization(b"x", created=7)
    auth = parse_authorization(header)
    assert (auth.subscriber_id, auth.key_id, auth.algorithm) == ("s", "k", "ed25519")
    assert (auth.created, auth.expires) == (7, 67)


@pytest.mark.parametrize(
    "bad",
    [
        "not base64!!",
        base64.b64encode(b"short").decode(),
        base64.b64encode(base64.b64decode(SPEC_PRIVATE)[:32] + b"\0" * 32).decode(),
    ],
)
def test_bad_private_keys_are_refused(bad: str) -> None:
    with pytest.raises(KeyFormatError):
        private_key(bad)


def test_private_key_lookup_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PB_TEST_BECKN_KEY", raising=False)
    assert resolve_private_key(None, "PB_TEST_BECKN_KEY") == DEV_PRIVATE_KEY
    monkeypatch.setenv("PB_TEST_BECKN_KEY", SPEC_PRIVATE)
    assert resolve_private_key(None, "PB_TEST_BECKN_KEY") == SPEC_PRIVATE
    assert resolve_private_key(SecretStr("explicit"), "PB_TEST_BECKN_KEY") == "explicit"

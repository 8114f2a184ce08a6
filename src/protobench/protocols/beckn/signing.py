"""The Beckn HTTP signature: sign a body for ``Authorization``, verify one.

Per the Beckn spec "Signing Beckn APIs in HTTP" (Ed25519 over a BLAKE2b-512
body digest):

1. ``digest = base64(BLAKE2b-512(body))``
2. signing string, three lines and no trailing newline::

       (created): {created}
       (expires): {expires}
       digest: BLAKE-512={digest}

3. ``signature = base64(Ed25519.sign(signing string))``
4. ``Authorization: Signature keyId="{subscriber}|{key id}|ed25519",algorithm="ed25519",
   created="{c}",expires="{e}",headers="(created) (expires) digest",signature="{s}"``
   (one line).

:class:`Signer` is the sender's hot path (one digest and one Ed25519 signature
per request, no other allocation worth naming). :func:`verify` is the
receiver's check, used by the embedded mock BPP: it raises
:class:`SignatureError` with the reason, which a receiver answers with 401.
:func:`verify_with` checks parsed fields with a known key: how a BAP checks
the counter-signature of an ACK (its ``Signature`` header, same fields) with
the BPP's public key.
"""

from __future__ import annotations

import base64
import hashlib
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from protobench.vocab.exceptions import Incomplete

HEADERS = "(created) (expires) digest"
_PARAM = re.compile(r'([A-Za-z]+)="([^"]*)"')


class SignatureError(Incomplete):
    """A signature that does not verify; the message says why."""


def body_digest(body: bytes) -> str:
    """``base64(BLAKE2b-512(body))``."""
    return base64.b64encode(hashlib.blake2b(body, digest_size=64).digest()).decode("ascii")


def signing_string(created: int, expires: int, digest: str) -> str:
    """The exact string that is signed (no trailing newline)."""
    return f"(created): {created}\n(expires): {expires}\ndigest: BLAKE-512={digest}"


class Signer:
    """Signs request bodies as one subscriber key; the key never leaves this object."""

    __slots__ = ("_key", "_key_field", "ttl")

    def __init__(
        self, subscriber_id: str, key_id: str, key: Ed25519PrivateKey, ttl: int = 300
    ) -> None:
        self._key = key
        self._key_field = f'Signature keyId="{subscriber_id}|{key_id}|ed25519",algorithm="ed25519"'
        self.ttl = ttl

    def __repr__(self) -> str:
        return f"Signer({self._key_field.split('"')[1]})"

    def authorization(self, body: bytes, created: int | None = None) -> str:
        """The ``Authorization`` header value for ``body``, created now unless given."""
        if created is None:
            created = int(time.time())
        expires = created + self.ttl
        text = signing_string(created, expires, body_digest(body))
        signature = base64.b64encode(self._key.sign(text.encode("ascii"))).decode("ascii")
        return (
            f'{self._key_field},created="{created}",expires="{expires}",'
            f'headers="{HEADERS}",signature="{signature}"'
        )


@dataclass(frozen=True)
class Authorization:
    """The parts of a ``Signature`` Authorization header."""

    subscriber_id: str
    key_id: str
    algorithm: str
    created: int
    expires: int
    headers: str
    signature: str


def parse_authorization(value: str, scheme_required: bool = True) -> Authorization:
    """Split a ``Signature ...`` header into its fields, or raise :class:`SignatureError`.

    Without ``scheme_required`` the ``Signature`` scheme word may be missing (the
    value of a ``Signature`` header, where a counter-signed ACK carries it)."""
    scheme, _, rest = value.strip().partition(" ")
    if scheme != "Signature":
        if scheme_required or not scheme.startswith("keyId="):
            raise SignatureError("not a Signature authorization")
        rest = value
    params = dict(_PARAM.findall(rest))
    try:
        subscriber_id, key_id, key_algorithm = params["keyId"].split("|")
        return Authorization(
            subscriber_id=subscriber_id,
            key_id=key_id,
            algorithm=params["algorithm"] if params["algorithm"] == key_algorithm else "",
            created=int(params["created"]),
            expires=int(params["expires"]),
            headers=params["headers"],
            signature=params["signature"],
        )
    except (KeyError, ValueError):
        raise SignatureError("malformed Signature authorization") from None


def verify(
    value: str,
    body: bytes,
    keys: Mapping[tuple[str, str], Ed25519PublicKey],
    now: float | None = None,
    skew: int = 5,
) -> Authorization:
    """Check an ``Authorization`` value against ``body``; return its fields or raise.

    ``keys`` maps ``(subscriber id, key id)`` to the registered public key (the
    registry lookup of the spec). ``created <= now <= expires`` must hold
    within ``skew`` seconds.
    """
    auth = parse_authorization(value)
    key = keys.get((auth.subscriber_id, auth.key_id))
    if key is None:
        raise SignatureError(f"unknown key {auth.subscriber_id}|{auth.key_id}")
    return verify_with(auth, body, key, now, skew)


def verify_with(
    auth: Authorization,
    body: bytes,
    key: Ed25519PublicKey,
    now: float | None = None,
    skew: int = 5,
) -> Authorization:
    """Check parsed signature fields against ``body`` with ``key`` (see :func:`verify`)."""
    if auth.algorithm != "ed25519":
        raise SignatureError("algorithm is not ed25519 (or differs from the keyId's)")
    if auth.headers != HEADERS:
        raise SignatureError(f"headers must be {HEADERS!r}")
    now = time.time() if now is None else now
    if auth.created > now + skew:
        raise SignatureError("created is in the future")
    if auth.expires < now - skew:
        raise SignatureError("signature expired")
    text = signing_string(auth.created, auth.expires, body_digest(body))
    try:
        key.verify(base64.b64decode(auth.signature), text.encode("ascii"))
    except (InvalidSignature, ValueError):
        raise SignatureError("signature does not verify") from None
    return auth

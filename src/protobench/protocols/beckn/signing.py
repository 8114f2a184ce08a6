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

A synchronous reply (an ACK) is counter-signed in a ``Signature`` header with
the same fields. beckn-onix (from v1.8) signs it as NFH-004 §3.4 says: the
header list is ``(created) (expires) digest request-signature`` and, when the
request it answers was signed, the signing string has a fourth line
``request-signature: {the request's signature="..." value}``, which binds the
reply to that request (without one, the three lines alone are signed under the
same header list). :func:`verify_with` accepts both forms given the request's
signature; :meth:`Signer.authorization` writes the second for a reply.

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
REPLY_HEADERS = "(created) (expires) digest request-signature"
"""The header list of a reply's signature bound to its request (NFH-004 §3.4)."""
_PARAM = re.compile(r'([A-Za-z]+)="([^"]*)"')
_SIGNATURE_FIELD = ',signature="'


class SignatureError(Incomplete):
    """A signature that does not verify; the message says why."""


def body_digest(body: bytes) -> str:
    """``base64(BLAKE2b-512(body))``."""
    return base64.b64encode(hashlib.blake2b(body, digest_size=64).digest()).decode("ascii")


def signing_string(created: int, expires: int, digest: str, request_signature: str = "") -> str:
    """The exact string that is signed (no trailing newline); a reply to a signed request
    adds the ``request-signature`` line."""
    text = f"(created): {created}\n(expires): {expires}\ndigest: BLAKE-512={digest}"
    return f"{text}\nrequest-signature: {request_signature}" if request_signature else text


def request_signature(authorization: str) -> str:
    """The ``signature="..."`` value of an ``Authorization`` header ("" when it has none):
    what a reply's signature binds to."""
    _, found, rest = authorization.partition(_SIGNATURE_FIELD)
    return rest.partition('"')[0] if found else ""


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

    def authorization(
        self, body: bytes, created: int | None = None, reply_to: str | None = None
    ) -> str:
        """The ``Authorization`` header value for ``body``, created now unless given.

        ``reply_to`` makes it the ``Signature`` of a reply to a request whose
        ``Authorization`` was ``reply_to`` ("" for an unsigned one), in onix's form.
        """
        if created is None:
            created = int(time.time())
        expires = created + self.ttl
        bound = "" if reply_to is None else request_signature(reply_to)
        text = signing_string(created, expires, body_digest(body), bound)
        signature = base64.b64encode(self._key.sign(text.encode("ascii"))).decode("ascii")
        headers = HEADERS if reply_to is None else REPLY_HEADERS
        return (
            f'{self._key_field},created="{created}",expires="{expires}",'
            f'headers="{headers}",signature="{signature}"'
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
    reply_to: str | None = None,
) -> Authorization:
    """Check parsed signature fields against ``body`` with ``key`` (see :func:`verify`).

    ``reply_to`` (the ``Authorization`` of the request answered, "" when unsigned)
    also accepts a reply's signature bound to it (:data:`REPLY_HEADERS`).
    """
    if auth.algorithm != "ed25519":
        raise SignatureError("algorithm is not ed25519 (or differs from the keyId's)")
    bound = ""
    if reply_to is not None and auth.headers == REPLY_HEADERS:
        bound = request_signature(reply_to)
    elif auth.headers != HEADERS:
        accepted = repr(HEADERS) if reply_to is None else f"{HEADERS!r} or {REPLY_HEADERS!r}"
        raise SignatureError(f"headers must be {accepted}, not {auth.headers!r}")
    now = time.time() if now is None else now
    if auth.created > now + skew:
        raise SignatureError("created is in the future")
    if auth.expires < now - skew:
        raise SignatureError("signature expired")
    text = signing_string(auth.created, auth.expires, body_digest(body), bound)
    try:
        key.verify(base64.b64decode(auth.signature), text.encode("ascii"))
    except (InvalidSignature, ValueError):
        bound_to = " (bound to the request's signature)" if bound else ""
        raise SignatureError(f"signature does not verify{bound_to}") from None
    return auth

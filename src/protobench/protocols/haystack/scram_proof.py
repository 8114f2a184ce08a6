"""The client's SCRAM proof (RFC 5802 section 3) with the salted password derived once.

PBKDF2 is the whole cost of a SCRAM login on the client: with hs_py's default
of 600,000 iterations about half a second of CPU. Run on the event loop it
stalls every other session of the worker (an ``about`` op beside an ``auth``
op fell from ~4,000/s to 63/s), and it is the client's cost, not the server's.
So the salted password is derived in a thread (``hashlib.pbkdf2_hmac``
releases the GIL) and kept per (hash, salt, iterations, password): a server
keeps one salt per user, so every later login of the worker reuses it and an
``auth`` op times the server's handshake. Concurrent first logins wait for one
derivation. Entries are keyed by a digest of the password, never the password.

The proof and the server signature are HMACs of the salted password (cheap).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import threading
from dataclasses import dataclass

HASHES = {"SHA-256": "sha256", "SHA-512": "sha512"}
"""Haystack's names of the SCRAM hash functions, and hashlib's."""
MAX_ITERATIONS = 10_000_000

type _Key = tuple[str, bytes, int, bytes]

_salted: dict[_Key, bytes] = {}
_locks: dict[_Key, threading.Lock] = {}
_guard = threading.Lock()


@dataclass(frozen=True)
class ServerFirst:
    """The server-first message's fields: combined nonce, salt, iteration count."""

    nonce: str
    salt: bytes
    iterations: int

    @classmethod
    def parse(cls, message: str, client_nonce: str) -> ServerFirst:
        """Parse ``r=...,s=...,i=...``; ``ValueError`` names what is wrong."""
        fields = dict(part.split("=", 1) for part in message.split(",") if "=" in part)
        nonce = fields.get("r", "")
        if not nonce.startswith(client_nonce) or nonce == client_nonce:
            raise ValueError("server nonce does not extend the client nonce")
        try:
            salt = base64.b64decode(fields.get("s", ""), validate=True)
            iterations = int(fields.get("i", ""))
        except ValueError:
            raise ValueError("server-first has no valid salt and iteration count") from None
        if not salt or not 1 <= iterations <= MAX_ITERATIONS:
            raise ValueError(
                f"server-first asks for {iterations} iterations and a salt of {len(salt)} bytes"
            )
        return cls(nonce, salt, iterations)


def _key(hash_name: str, password: str, first: ServerFirst) -> _Key:
    digest = hashlib.sha256(password.encode()).digest()
    return (hash_name, first.salt, first.iterations, digest)


def cached(hash_name: str, password: str, first: ServerFirst) -> bytes | None:
    """The salted password if it was derived before (no work on a miss)."""
    return _salted.get(_key(hash_name, password, first))


def derive(hash_name: str, password: str, first: ServerFirst) -> bytes:
    """The salted password (blocking: run it in a thread); derived once per key."""
    key = _key(hash_name, password, first)
    with _guard:
        lock = _locks.setdefault(key, threading.Lock())
    with lock:
        found = _salted.get(key)
        if found is None:
            found = hashlib.pbkdf2_hmac(
                HASHES[hash_name], password.encode(), first.salt, first.iterations
            )
            _salted[key] = found
    return found


async def salted_password(hash_name: str, password: str, first: ServerFirst) -> bytes:
    """The salted password: from the cache, else derived in a thread off the event loop."""
    found = cached(hash_name, password, first)
    if found is not None:
        return found
    return await asyncio.to_thread(derive, hash_name, password, first)


@dataclass(frozen=True)
class Proof:
    """The client-final message and the server signature that must come back."""

    client_final: str
    server_signature: bytes

    def verify(self, server_final: str) -> None:
        """Check the server-final ``v=...``; ``ValueError`` when it does not match."""
        fields = dict(part.split("=", 1) for part in server_final.split(",") if "=" in part)
        try:
            signature = base64.b64decode(fields.get("v", ""), validate=True)
        except ValueError:
            signature = b""
        if not hmac.compare_digest(signature, self.server_signature):
            raise ValueError("the server's signature does not match (not the expected server)")


def proof(
    hash_name: str, salted: bytes, client_first_bare: str, server_first: str, nonce: str
) -> Proof:
    """The client-final message proving the password, for ``server_first``."""
    digest = HASHES[hash_name]
    client_key = hmac.digest(salted, b"Client Key", digest)
    stored_key = hashlib.new(digest, client_key).digest()
    without_proof = f"c=biws,r={nonce}"  # biws: base64 of the GS2 header "n,,"
    auth_message = f"{client_first_bare},{server_first},{without_proof}".encode()
    signature = hmac.digest(stored_key, auth_message, digest)
    client_proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    server_key = hmac.digest(salted, b"Server Key", digest)
    return Proof(
        f"{without_proof},p={base64.b64encode(client_proof).decode()}",
        hmac.digest(server_key, auth_message, digest),
    )

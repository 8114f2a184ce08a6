"""Beckn signing keys: loading, the secret's lookup, and the onix development key.

A private key is a secret. It comes from the ``private_key`` option (redacted
in plans, reports and snapshots), else from the environment variable named by
``private_key_env`` (``BECKN_PRIVATE_KEY`` by default), else it is the public
**development** key of beckn-onix's sandbox (subscriber
``sandbox.food-finder.com``), which is only fit for loopback tests.

Keys are base64: a private key is a 32-byte Ed25519 seed (onix's form) or the
64-byte seed followed by the public key (the spec's example form); a public
key is 32 bytes. :func:`key_mismatch` says when a private key cannot be the
one registered for a subscriber (where the public key is known), since a BPP
would answer every request with 401.
"""

from __future__ import annotations

import base64
import binascii
import os

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)
from pydantic import SecretStr

from protobench.vocab.exceptions import BadInput

DEV_SUBSCRIBER_ID = "sandbox.food-finder.com"
DEV_KEY_ID = "76EU7VwahYv4XztXJzji9ssiSV74eWXWBcCKGn7jAdm5VGLCdYAJ8j"
DEV_PRIVATE_KEY = "rrNtVgyASCGlo+ebsJaA37D5CZYZVfT0JA5/vlkTeV0="
DEV_PUBLIC_KEY = "oFIk7KqCqvqRYkLMjQqiaKM5oOozkYT64bfLuc8p/SU="
"""beckn-onix's published sandbox key pair: a development key, never a real one."""

PRIVATE_KEY_ENV = "BECKN_PRIVATE_KEY"


class KeyFormatError(BadInput, ValueError):
    """A key that is not valid base64 of the expected length."""


def private_key(encoded: str) -> Ed25519PrivateKey:
    """An Ed25519 private key from base64 (32-byte seed, or seed + public key)."""
    raw = _b64(encoded, "private key")
    if len(raw) == 64:
        key = Ed25519PrivateKey.from_private_bytes(raw[:32])
        if public_bytes(key.public_key()) != raw[32:]:
            raise KeyFormatError("private key: the last 32 bytes are not its public key")
        return key
    if len(raw) != 32:
        raise KeyFormatError(f"private key: expected 32 or 64 bytes, got {len(raw)}")
    return Ed25519PrivateKey.from_private_bytes(raw)


def public_key(encoded: str) -> Ed25519PublicKey:
    """An Ed25519 public key from base64 (32 bytes)."""
    raw = _b64(encoded, "public key")
    if len(raw) != 32:
        raise KeyFormatError(f"public key: expected 32 bytes, got {len(raw)}")
    return Ed25519PublicKey.from_public_bytes(raw)


def public_bytes(key: Ed25519PublicKey) -> bytes:
    """The raw 32 bytes of a public key."""
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


def resolve_private_key(option: SecretStr | None, env_name: str = PRIVATE_KEY_ENV) -> str:
    """The base64 private key: the option, else ``$env_name``, else the dev key."""
    if option is not None:
        return option.get_secret_value()
    return os.environ.get(env_name) or DEV_PRIVATE_KEY


def public_key_of(encoded_private: str) -> str:
    """The base64 public key of a base64 private key."""
    return base64.b64encode(public_bytes(private_key(encoded_private).public_key())).decode()


def new_private_key() -> str:
    """A fresh Ed25519 private key: base64 of its 32-byte seed (onix's form)."""
    seed = Ed25519PrivateKey.generate().private_bytes(
        Encoding.Raw, PrivateFormat.Raw, NoEncryption()
    )
    return base64.b64encode(seed).decode()


def registry_record(subscriber_id: str, key_id: str, encoded_private: str) -> dict[str, str]:
    """What a registry (or onix's simplekeymanager) needs to know of a BAP's key."""
    return {
        "subscriber_id": subscriber_id,
        "key_id": key_id,
        "signing_public_key": public_key_of(encoded_private),
    }


def key_mismatch(
    encoded_private: str, subscriber_id: str, key_id: str, registered: str | None
) -> str | None:
    """Why ``encoded_private`` cannot be the key of ``subscriber_id|key_id``, where that is
    known: it is not ``registered`` (the public key given), or the ids are the
    development key's and the key is another one. ``None`` when it may be."""
    mine = public_key_of(encoded_private)
    if registered is not None and public_bytes(public_key(registered)) != base64.b64decode(mine):
        return (
            f"the private key's public key is {mine}, not the given public_key"
            f" {registered} of {subscriber_id}|{key_id}"
        )
    dev_ids = (subscriber_id, key_id) == (DEV_SUBSCRIBER_ID, DEV_KEY_ID)
    if registered is None and dev_ids and mine != DEV_PUBLIC_KEY:
        return (
            f"subscriber_id and key_id are beckn-onix's development key's"
            f" ({DEV_SUBSCRIBER_ID}), but the private key is another one (public key"
            f" {mine}): set subscriber_id and key_id to the ones it is registered under"
        )
    return None


def _b64(encoded: str, what: str) -> bytes:
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise KeyFormatError(f"{what}: not valid base64") from None

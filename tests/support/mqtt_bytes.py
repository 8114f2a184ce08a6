"""MQTT packets written as hex in the codec tests."""

from __future__ import annotations


def h(text: str) -> bytes:
    """The bytes of a hex string; spaces separate fields for reading."""
    return bytes.fromhex(text.replace(" ", ""))

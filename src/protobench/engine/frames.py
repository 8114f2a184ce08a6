"""Length-prefixed frames between the controller and its worker processes.

A frame is ``KIND LEN\\n`` followed by ``LEN`` bytes of JSON payload. Kinds from
worker to controller: ``HELLO`` (sessions opened), ``STATS`` (one interval),
``BEAT`` (alive: at least one frame every interval), ``DONE`` (its share of
the request count has ended), ``ERROR`` (a fatal error with its message),
``BYE`` (finished). From controller
to worker: ``PLAN`` (the worker's slice), ``GO`` (start time), ``PAUSE``,
``RESUME``, ``RATE`` (new total rate factor), ``STOP``.
"""

from __future__ import annotations

import json
from typing import Any

MAX_FRAME = 64 * 1024 * 1024


class FrameError(Exception):
    """A malformed frame: the peer is broken."""


def encode_frame(kind: str, payload: Any) -> bytes:
    body = json.dumps(payload, separators=(",", ":")).encode()
    return f"{kind} {len(body)}\n".encode() + body


class FrameDecoder:
    """Incremental decoder: feed bytes, get complete ``(kind, payload)`` frames."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[tuple[str, Any]]:
        self._buffer += data
        frames: list[tuple[str, Any]] = []
        while True:
            newline = self._buffer.find(b"\n", 0, 64)
            if newline < 0:
                if len(self._buffer) >= 64:
                    raise FrameError(f"bad frame header: {bytes(self._buffer[:64])!r}")
                return frames
            header = bytes(self._buffer[:newline]).decode("ascii", "replace")
            kind, _, size_text = header.partition(" ")
            if not size_text.isdigit() or int(size_text) > MAX_FRAME:
                raise FrameError(f"bad frame header: {header!r}")
            size = int(size_text)
            end = newline + 1 + size
            if len(self._buffer) < end:
                return frames
            payload = json.loads(bytes(self._buffer[newline + 1 : end]))
            del self._buffer[:end]
            frames.append((kind, payload))

"""Length-prefixed frames between the controller and its worker processes.

A frame is ``KIND LEN\\n`` followed by ``LEN`` bytes of JSON payload, ``KIND``
one of :class:`FrameKind`. From controller to worker: ``PLAN`` (the worker's
slice), ``GO`` (start time), then the controls (:data:`CONTROL`: ``PAUSE``,
``RESUME``, ``RATE`` with a new total rate factor) and ``STOP``. From worker to
controller: ``HELLO`` (sessions opened), ``STATS`` (one interval), ``BEAT``
(alive: at least one frame every interval), ``DONE`` (its share of the request
count has ended), ``ERROR`` (a fatal error with its message), ``BYE``
(finished). A Ray node's agent adds its own ``RESOURCES`` and ``EXIT``; a pool
adds ``NOTICE`` (a clock offset, a lost node) and ``GONE`` (a worker ended),
which never cross a pipe.
"""

from __future__ import annotations

import enum
import json
from typing import Any

from protobench.vocab.exceptions import Incomplete

MAX_FRAME = 64 * 1024 * 1024


class FrameKind(enum.StrEnum):
    """What a frame is (its ``KIND`` on the wire)."""

    PLAN = "PLAN"
    GO = "GO"
    PAUSE = "PAUSE"
    RESUME = "RESUME"
    RATE = "RATE"
    STOP = "STOP"
    HELLO = "HELLO"
    STATS = "STATS"
    BEAT = "BEAT"
    DONE = "DONE"
    """A worker's share of the request count has ended."""
    ERROR = "ERROR"
    BYE = "BYE"
    RESOURCES = "RESOURCES"
    """A Ray agent's samples of its workers and host."""
    EXIT = "EXIT"
    """A Ray agent: one of its workers ended (exit code, log tail)."""
    NOTICE = "NOTICE"
    """A pool's notice for the run (never from a pipe)."""
    GONE = "GONE"
    """A pool: a worker ended, said BYE or not (never from a pipe)."""
    EOF = "EOF"
    """A worker: the controller closed its stdin (never from a pipe)."""


CONTROL = frozenset({FrameKind.PAUSE, FrameKind.RESUME, FrameKind.RATE})
"""The controls a run's workers take at any time (held until ``GO`` when they come before)."""


class FrameError(Incomplete):
    """A malformed frame: the peer is broken."""


def encode_frame(kind: FrameKind, payload: Any) -> bytes:
    body = json.dumps(payload, separators=(",", ":")).encode()
    return f"{kind} {len(body)}\n".encode() + body


class FrameDecoder:
    """Incremental decoder: feed bytes, get complete ``(kind, payload)`` frames."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[tuple[FrameKind, Any]]:
        self._buffer += data
        frames: list[tuple[FrameKind, Any]] = []
        while True:
            newline = self._buffer.find(b"\n", 0, 64)
            if newline < 0:
                if len(self._buffer) >= 64:
                    raise FrameError(f"bad frame header: {bytes(self._buffer[:64])!r}")
                return frames
            header = bytes(self._buffer[:newline]).decode("ascii", "replace")
            name, _, size_text = header.partition(" ")
            known = name in FrameKind.__members__
            if not known or not size_text.isdigit() or int(size_text) > MAX_FRAME:
                raise FrameError(f"bad frame header: {header!r}")
            size = int(size_text)
            end = newline + 1 + size
            if len(self._buffer) < end:
                return frames
            payload = json.loads(bytes(self._buffer[newline + 1 : end]))
            del self._buffer[:end]
            frames.append((FrameKind[name], payload))

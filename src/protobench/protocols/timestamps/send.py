"""A client's send of a request, its time stamped on either clock.

A protocol client sends each request through one callable that stamps the
session's :class:`~.clock.Stamps` ``sent`` and sends, whatever reads the
connection:

* :func:`request_writer` gives it for an asyncio transport: a
  :class:`~.transport.StampedTransport`'s ``write_request`` (the kernel's send
  stamp where the socket gives one), else the loop transport's ``write`` with
  the user-space time taken immediately before it (TLS, the user clock);
* :func:`stamped_send` wraps any send callable (a transport's ``write``) with
  that user-space time.

Other writes of the connection (acknowledgements, pings, the rest of a
multi-message exchange) go out through the plain ``write``/``send``, without
touching the times.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import cast

from protobench.protocols.timestamps.clock import Stamps, perf_ns
from protobench.protocols.timestamps.transport import StampedTransport


def stamped_send[T, R](send: Callable[[T], R], stamps: Stamps) -> Callable[[T], R]:
    """``send`` preceded by the user-space send time (``stamps.sent``): the user clock's send
    of a request."""

    def send_request(data: T) -> R:
        stamps.sent = perf_ns()
        return send(data)

    return send_request


type Writer = Callable[[bytes | bytearray], None]
"""Writes one request (any bytes-like object, as a transport's ``write`` takes)."""


def request_writer(transport: asyncio.BaseTransport, stamps: Stamps) -> Writer:
    """How a request is written on ``transport`` with its send stamped in ``stamps`` (which a
    stamped transport must have been opened with)."""
    if isinstance(transport, StampedTransport):
        return cast(Writer, transport.write_request)  # it sends through write: any bytes-like
    write: Writer = transport.write  # type: ignore[attr-defined]
    return stamped_send(write, stamps)

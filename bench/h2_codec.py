"""CPU per HTTP/2 request of the client's own framing against the ``h2`` package, in memory.

Both sides do a request's whole client work for ``--streams`` streams at a
time: start each stream (encode its HEADERS), take the server's replies for
all of them in one read (HEADERS and DATA frames, as nginx sends them: its
header block inserts ``server``, ``date`` and ``content-type`` into the HPACK
table every time), find each one's status and end, and produce what goes back
(our WINDOW_UPDATEs, the next requests):

* ``protobench``: :class:`~protobench.protocols.http.h2.client.H2Connection`
  on a transport that keeps nothing, its completion callback starting the
  next stream (as the engine does);
* ``h2``: ``h2.connection.H2Connection`` (client side, header validation
  off, as a benchmark would run it): ``send_headers(end_stream=True)`` per
  stream, ``receive_data`` of the read, its events walked for
  ``ResponseReceived``'s status and ``StreamEnded``,
  ``acknowledge_received_data`` per DATA event, ``data_to_send`` once.

The replies are built once per stream id (the server's bytes), outside the
timing. The figure is the least thread CPU time per request over ``--rounds``
rounds of ``--number`` requests, the two interleaved.

Run it as ``bench/h2_codec [--rounds 5] [--number 20000] [--streams 10 100]``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import h2.config
import h2.connection
import h2.events
import hpack
import uvloop

from protobench.protocols.http.client import parse_url
from protobench.protocols.http.h2 import frames as f
from protobench.protocols.http.h2.client import H2Connection
from protobench.protocols.http.h2.headers import encode_request
from protobench.protocols.timestamps.clock import Stamps

AUTHORITY = "127.0.0.1:8080"
NGINX_HEADERS = [
    (b":status", b"200"),
    (b"server", b"nginx/1.22.1"),
    (b"date", b"Sat, 28 Nov 2026 11:53:11 GMT"),
    (b"content-type", b"text/plain"),
    (b"content-length", b"13"),
]
BODY = b"Hello, World!"


class _Sink:
    """A transport that keeps nothing."""

    def write(self, data: bytes) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default


def replies(first: int, count: int, encoder: hpack.Encoder) -> bytes:
    """The server's bytes for ``count`` streams from ``first``: HEADERS, then DATA."""
    out = []
    for sid in range(first, first + 2 * count, 2):
        block = encoder.encode(NGINX_HEADERS)
        out.append(f.frame(f.HEADERS, f.END_HEADERS, sid, block))
        out.append(f.frame(f.DATA, f.END_STREAM, sid, BODY))
    return b"".join(out)


def server_reads(number: int, streams: int) -> list[bytes]:
    encoder = hpack.Encoder()
    settings = f.settings_frame({f.SETTINGS_MAX_CONCURRENT_STREAMS: 1000})
    reads = [settings]
    sid = 1
    for _ in range(number // streams):
        reads.append(replies(sid, streams, encoder))
        sid += 2 * streams
    return reads


def ours(reads: list[bytes], streams: int) -> float:
    loop = uvloop.new_event_loop()
    try:
        conn = H2Connection(loop, parse_url(f"http://{AUTHORITY}/"), 30.0, False)
        conn.connection_made(_Sink())  # type: ignore[arg-type]
        request = f.request_frames(encode_request("GET", "http", AUTHORITY, "/", []), b"")
        stamps = Stamps()  # one session's times (the engine gives each session its own)
        completed = 0

        def done(error: object, nbytes: int) -> None:
            nonlocal completed
            completed += 1
            conn.submit(request, stamps, done)

        conn.data_received(reads[0])
        start = time.thread_time()
        for _ in range(streams):
            conn.submit(request, stamps, done)
        for data in reads[1:]:
            conn.data_received(data)
        elapsed = time.thread_time() - start
        assert completed == (len(reads) - 1) * streams, completed
        if conn._timer is not None:
            conn._timer.cancel()
        return elapsed / completed
    finally:
        loop.close()


def library(reads: list[bytes], streams: int) -> float:
    config = h2.config.H2Configuration(
        client_side=True,
        validate_inbound_headers=False,
        validate_outbound_headers=False,
        normalize_inbound_headers=False,
        normalize_outbound_headers=False,
    )
    conn = h2.connection.H2Connection(config)
    conn.initiate_connection()
    conn.data_to_send()
    headers = [(":method", "GET"), (":scheme", "http"), (":authority", AUTHORITY), (":path", "/")]
    completed = 0
    conn.receive_data(reads[0])
    conn.data_to_send()
    start = time.thread_time()
    for _ in range(streams):
        conn.send_headers(conn.get_next_available_stream_id(), headers, end_stream=True)
    conn.data_to_send()
    for data in reads[1:]:
        status = 0
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                status = int(dict(event.headers)[b":status"])
            elif isinstance(event, h2.events.DataReceived):
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                assert status == 200
                completed += 1
                conn.send_headers(conn.get_next_available_stream_id(), headers, end_stream=True)
        conn.data_to_send()
    elapsed = time.thread_time() - start
    assert completed == (len(reads) - 1) * streams, completed
    return elapsed / completed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--streams", type=int, nargs="+", default=[10, 100])
    args = parser.parse_args()
    print(f"{'streams':>8} {'protobench µs/req':>18} {'h2 µs/req':>10} {'h2 / protobench':>16}")
    for streams in args.streams:
        reads = server_reads(args.number, streams)
        best_ours = best_lib = float("inf")
        for _ in range(args.rounds):
            best_ours = min(best_ours, ours(reads, streams))
            best_lib = min(best_lib, library(reads, streams))
        print(
            f"{streams:>8} {best_ours * 1e6:>18.2f} {best_lib * 1e6:>10.2f}"
            f" {best_lib / best_ours:>16.1f}"
        )


if __name__ == "__main__":
    main()

"""Hostile servers on loopback whose error texts carry terminal escape sequences.

Each server answers every request with a failure whose words are one of
:data:`HOSTILE` in turn: an HTTP status reason, a Haystack error grid's ``dis``,
the reason string of an MQTT 5 DISCONNECT, a WebSocket close reason, a BACnet
Error PDU of a class and code beyond the standard's table. They run in daemon
threads, serve one connection per thread with socket timeouts, and stop when
their ``with`` block ends or after :data:`LIFETIME` seconds, whichever is first.

:func:`assert_no_escapes` checks the raw bytes a terminal would get.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import json
import re
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from itertools import count
from pathlib import Path

from tests.support.timing import S

LIFETIME = 120 * S
"""No hostile server outlives this many seconds, whatever the test does."""

OSC_TITLE = "\x1b]0;PWNED-TITLE\x07"
OSC_LINK = "\x1b]8;;http://evil.example/\x1b\\CLICK-ME\x1b]8;;\x1b\\"
OSC_CLIPBOARD = "\x1b]52;c;UFdORUQ=\x07"
CSI_CLEAR = "\x1b[2J\x1b[HCLEARED"
C1_FORMS = "\x9b2J\x9d0;C1-TITLE\x9c\x7fDEL"
MARKUP = "[bold]BOLD[/bold] [link=http://evil.example/]LINK[/link]"
HOSTILE = (OSC_TITLE, OSC_LINK, OSC_CLIPBOARD, CSI_CLEAR, C1_FORMS, MARKUP)
"""What the servers say, in turn (each short enough for a WebSocket close reason)."""
EVERYTHING = " ".join(HOSTILE)
"""All of them in one string (for a grid's ``dis``, a snapshot's fields)."""

FORBIDDEN = (
    b"\x1b]0;PWNED",
    b"PWNED-TITLE\x07",
    b"\x1b]8;;http://evil",
    b"\x1b]52;",
    b"UFdORUQ=\x07",
    b"\x1b[2J\x1b[HCLEARED",
    b"\x1b[HCLEARED",
    b"\x7fDEL",
)
"""The sequences of :data:`HOSTILE` as a terminal would get them raw."""
C1_UTF8 = re.compile(rb"\xc2[\x80-\x9f]")
"""A C1 control character encoded in UTF-8 (nothing of ours writes one)."""


def assert_no_escapes(raw: bytes, *, plain: bool) -> None:
    """No sequence of :data:`HOSTILE` in ``raw`` as a command; in ``plain`` output no ESC or BEL.

    The monitor writes its own escape sequences (colours, cursor moves), so its
    bytes are checked for the hostile ones; plain output has none of its own.
    """
    for sequence in FORBIDDEN:
        assert sequence not in raw, f"{sequence!r} reached the terminal"
    assert C1_UTF8.search(raw) is None, "a C1 control character reached the terminal"
    if plain:
        assert b"\x1b" not in raw, "ESC reached the terminal"
        assert b"\x07" not in raw, "BEL reached the terminal"
        assert b"\x7f" not in raw, "DEL reached the terminal"


_TOKENS = (b"PWNED-TITLE", b"CLICK-ME", b"UFdORUQ=", b"CLEARED", b"C1-TITLE", b"[bold]BOLD")


def shown(raw: bytes) -> bool:
    """Whether any of :data:`HOSTILE` reached the output at all (made visible, we hope)."""
    return any(token in raw for token in _TOKENS)


def _say() -> Callable[[], str]:
    turn = count()
    return lambda: HOSTILE[next(turn) % len(HOSTILE)]


@contextlib.contextmanager
def _serving(loop: Callable[[threading.Event, float], None]) -> Iterator[None]:
    stop = threading.Event()
    thread = threading.Thread(target=loop, args=(stop, time.monotonic() + LIFETIME), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(5.0)


@contextlib.contextmanager
def tcp_server(handle: Callable[[socket.socket], None]) -> Iterator[int]:
    """A TCP listener on 127.0.0.1 calling ``handle(conn)`` in a thread per connection."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)

    def accept(stop: threading.Event, deadline: float) -> None:
        with listener:
            while not stop.is_set() and time.monotonic() < deadline:
                try:
                    conn, _ = listener.accept()
                except TimeoutError:
                    continue
                conn.settimeout(5.0)
                threading.Thread(target=_guarded, args=(handle, conn), daemon=True).start()

    with _serving(accept):
        yield listener.getsockname()[1]


def _guarded(handle: Callable[[socket.socket], None], conn: socket.socket) -> None:
    with conn, contextlib.suppress(OSError):
        handle(conn)


def _read_head(conn: socket.socket, buffer: bytearray) -> bytes | None:
    """One HTTP request or response head (its body skipped by Content-Length), or None at EOF."""
    while b"\r\n\r\n" not in buffer:
        data = conn.recv(65536)
        if not data:
            return None
        buffer += data
    end = buffer.index(b"\r\n\r\n") + 4
    head = bytes(buffer[:end])
    del buffer[:end]
    length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    needed = int(length.group(1)) if length else 0
    while len(buffer) < needed:
        data = conn.recv(65536)
        if not data:
            return None
        buffer += data
    del buffer[:needed]
    return head


def _reply(conn: socket.socket, status: str, body: bytes = b"", kind: str = "text/plain") -> None:
    conn.sendall(
        f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n\r\n".encode(
            "latin-1"
        )
        + body
    )


@contextlib.contextmanager
def http_reason_server() -> Iterator[str]:
    """Every request gets ``403`` with a hostile reason phrase and no body (keep-alive)."""
    say = _say()

    def handle(conn: socket.socket) -> None:
        buffer = bytearray()
        while _read_head(conn, buffer) is not None:
            _reply(conn, f"403 {say()}")

    with tcp_server(handle) as port:
        yield f"http://127.0.0.1:{port}/api"


def error_grid(dis: str) -> bytes:
    """A Haystack JSON error grid (v4 encoding) saying ``dis``."""
    grid = {
        "_kind": "grid",
        "meta": {"ver": "3.0", "err": {"_kind": "marker"}, "dis": dis},
        "cols": [{"name": "empty"}],
        "rows": [],
    }
    return json.dumps(grid).encode()


@contextlib.contextmanager
def haystack_error_server() -> Iterator[str]:
    """Every Haystack request gets ``200`` with an error grid whose ``dis`` is hostile."""
    say = _say()

    def handle(conn: socket.socket) -> None:
        buffer = bytearray()
        while _read_head(conn, buffer) is not None:
            _reply(conn, "200 OK", error_grid(f"{say()} {EVERYTHING}"), "application/json")

    with tcp_server(handle) as port:
        yield f"http://127.0.0.1:{port}/api"


def _mqtt_packet(conn: socket.socket) -> bytes | None:
    """One MQTT packet (fixed header and body), or None at EOF."""
    first = conn.recv(1)
    if not first:
        return None
    length, shift = 0, 0
    while True:
        byte = conn.recv(1)
        if not byte:
            return None
        length |= (byte[0] & 0x7F) << shift
        shift += 7
        if not byte[0] & 0x80:
            break
    body = b""
    while len(body) < length:
        data = conn.recv(length - len(body))
        if not data:
            return None
        body += data
    return first + body


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


@contextlib.contextmanager
def mqtt_disconnect_server() -> Iterator[str]:
    """An MQTT 5 broker that accepts each CONNECT and then sends DISCONNECT (0x80) with a
    hostile reason string (property 0x1F)."""
    say = _say()

    def handle(conn: socket.socket) -> None:
        packet = _mqtt_packet(conn)
        if packet is None or packet[0] >> 4 != 1:
            return
        conn.sendall(b"\x20\x03\x00\x00\x00")  # CONNACK: no session, success, no properties
        reason = say().encode()
        props = b"\x1f" + struct.pack(">H", len(reason)) + reason
        body = b"\x80" + _varint(len(props)) + props
        conn.sendall(b"\xe0" + _varint(len(body)) + body)
        conn.settimeout(1.0)
        with contextlib.suppress(OSError):
            while _mqtt_packet(conn) is not None:
                pass

    with tcp_server(handle) as port:
        yield f"mqtt://127.0.0.1:{port}"


_WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


@contextlib.contextmanager
def ws_close_server() -> Iterator[str]:
    """A WebSocket server that completes each handshake, waits for the first message and
    closes (1008) with a hostile reason."""
    say = _say()

    def handle(conn: socket.socket) -> None:
        head = _read_head(conn, bytearray())
        key = re.search(rb"(?im)^sec-websocket-key:\s*(\S+)", head or b"")
        if key is None:
            return
        accept = base64.b64encode(hashlib.sha1(key.group(1) + _WS_GUID.encode()).digest())
        conn.sendall(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n"
        )
        if not conn.recv(65536):  # the first message (an echo request)
            return
        payload = struct.pack(">H", 1008) + say().encode()
        conn.sendall(bytes((0x88, len(payload))) + payload)
        conn.settimeout(1.0)
        with contextlib.suppress(OSError):
            while conn.recv(65536):
                pass

    with tcp_server(handle) as port:
        yield f"ws://127.0.0.1:{port}/"


def _bacnet_error(request: bytes) -> bytes | None:
    """The Error PDU (class 200, code 9999: beyond the standard's table) answering a confirmed
    request inside a BVLC Original-Unicast-NPDU, or None for anything else."""
    if len(request) < 6 or request[0] != 0x81 or request[1] != 0x0A:
        return None
    npdu = request[4:]
    control = npdu[1]
    if control & 0x20:  # a destination network: not for this small device
        return None
    apdu = npdu[2:]
    if len(apdu) < 4 or apdu[0] >> 4 != 0:
        return None
    invoke_id, service = apdu[2], apdu[3]
    error = bytes((0x50, invoke_id, service, 0x91, 200, 0x92)) + struct.pack(">H", 9999)
    body = b"\x01\x00" + error
    return b"\x81\x0a" + struct.pack(">H", 4 + len(body)) + body


@contextlib.contextmanager
def bacnet_error_server() -> Iterator[str]:
    """A BACnet/IP device on UDP that answers every confirmed request with that Error PDU."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.2)

    def serve(stop: threading.Event, deadline: float) -> None:
        with sock:
            while not stop.is_set() and time.monotonic() < deadline:
                try:
                    request, peer = sock.recvfrom(2048)
                except TimeoutError:
                    continue
                reply = _bacnet_error(request)
                if reply is not None:
                    sock.sendto(reply, peer)

    with _serving(serve):
        yield f"bacnet://127.0.0.1:{sock.getsockname()[1]}/?device=1"


HOSTILE_OP = f"get{OSC_TITLE}"
"""An operation's name as a tampered snapshot may carry it."""


def _swap(value: object, old: str, new: str) -> object:
    """``value`` (a snapshot's JSON) with every string ``old`` replaced by ``new``."""
    if isinstance(value, dict):
        return {_swap(k, old, new): _swap(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_swap(v, old, new) for v in value]
    return new if value == old else value


def hostile_snapshot(store: Path, run_id: str, host: str, op: str = HOSTILE_OP) -> Path:
    """A tampered snapshot file in ``store``: a real run's shape (the engine's aggregator),
    :data:`HOSTILE` in its error texts, profile, description, target, labels, notices (and
    a worker's log tail), findings and provenance; ``op`` names its operation (by default
    a hostile name too), ``host`` its host."""
    from tests.support.snapshots import OpSpec, make_snapshot  # noqa: PLC0415

    data = make_snapshot({op: OpSpec(error_rate=0.2)}, run_id=run_id, host=host)
    data = _swap(data, "timeout: slow", f"timeout: {EVERYTHING}")
    assert isinstance(data, dict)
    report = data["report"]
    for key in ("profile", "description", "target"):
        report[key] = f"{key} {EVERYTHING}"
    report["labels"] = {f"label{OSC_LINK}": EVERYTHING}
    report["notices"] = [
        {"kind": "worker", "message": f"worker 0 died {EVERYTHING}", "elapsed": 0.5,
         "worker": 0, "log_tail": f"first line\n{EVERYTHING}"},
        {"kind": f"kind{CSI_CLEAR}", "message": EVERYTHING, "elapsed": 0.6},
    ]  # fmt: skip
    report["verdicts"]["findings"] = [f"finding {EVERYTHING}"]
    data["labels"] = report["labels"]
    data["plan"] = {  # a whole plan, as a run writes it (a replay rebuilds its events from it)
        "profile": report["profile"], "source": "hostile.toml", "profile_sha256": "a" * 64,
        "protocol": "http", "description": report["description"], "target": report["target"],
        "embedded": None, "warmup": 0.5, "duration": 3.0, "interval": 0.25, "processes": 1,
        "model": "closed", "rate": None, "ramp_to": None, "timeout": 5.0, "drain": 0.0,
        "thresholds": [], "options": {}, "serve": {}, "overrides": {},
        "groups": [{"name": op, "op": "request", "count": 4, "every": None,
                    "share": 4.0, "params": {}}],
    }  # fmt: skip
    data["provenance"].update(profile=report["profile"], cpu_model=f"cpu {EVERYTHING}")
    path = store / f"{run_id}.json.gz"
    store.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(json.dumps(data).encode()))
    return path

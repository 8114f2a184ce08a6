"""Beckn's asynchronous half: ``on_{action}`` callbacks, sent (BPP) and awaited (BAP).

A Beckn request is ACKed at once; the actual answer comes later as a signed
``POST {bapUri}/on_{action}`` from the BPP, with the same ``transactionId``
and ``messageId``.

* :class:`CallbackSender` is the mock BPP's side: it builds the
  ``on_{action}`` body (a small catalog for discover, the order with a status
  for the others), signs it and POSTs it on pooled keep-alive connections.
* :class:`CallbackListener` is the BAP's side: one loopback server per worker
  process (:func:`listener`) whose URL is the ``bapUri`` of the requests; a
  session registers the ``messageId`` it sent and is called back when the
  ``on_{action}`` carrying it arrives. Callbacks are ACKed in the v2 shape
  (``{"message": {"status": "ACK", "messageId": ..., "transactionId": ...}}``),
  counter-signed in a ``Signature`` header with the BAP's key when requests
  are signed, bound to the callback's own signature as beckn-onix v1.8 signs
  and checks the ACKs of callbacks; the callbacks' signatures are not verified.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import orjson

from protobench.protocols.beckn.payloads import timestamp
from protobench.protocols.beckn.server import HandlerProtocol, json_bytes_response, json_response
from protobench.protocols.beckn.signing import Signer
from protobench.protocols.http.client import HttpConnection, build_request, parse_url
from protobench.vocab.errors import OpError

Waiter = Callable[[int], None]
"""Called with the callback's body size when the awaited callback arrives."""


def callback_body(request: dict[str, Any], bpp_id: str) -> bytes:
    """The ``on_{action}`` body answering ``request``."""
    context = dict(request["context"])
    action = context["action"]
    context.update(action=f"on_{action}", bppId=bpp_id, timestamp=timestamp())
    message: dict[str, Any]
    if action == "discover":
        intent = request.get("message", {}).get("intent", {})
        message = {
            "catalogs": [
                {
                    "id": "pb-catalog-1",
                    "descriptor": {"name": "protobench demo provider"},
                    "items": [
                        {
                            "id": f"pb-item-{n}",
                            "descriptor": {"name": f"{intent.get('textSearch', 'item')} {n}"},
                            "price": {"currency": "INR", "value": f"{50 + 25 * n}.00"},
                        }
                        for n in range(1, 4)
                    ],
                }
            ]
        }
    else:
        order = dict(request.get("message", {}).get("order", {}))
        order.update(id=f"pb-order-{context['transactionId'][:8]}", status="ACCEPTED")
        message = {"order": order}
    return orjson.dumps({"context": context, "message": message})


class CallbackSender:
    """Signs and POSTs ``on_{action}`` callbacks to the requests' ``bapUri``."""

    def __init__(self, signer: Signer, bpp_id: str, timeout: float = 5.0) -> None:
        self._signer = signer
        self._bpp_id = bpp_id
        self._timeout = timeout
        self._idle: dict[str, list[HttpConnection]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.sent = 0
        self.failed = 0

    def send(self, request: dict[str, Any]) -> None:
        """Start sending the callback of ``request`` (a validated v2 request)."""
        task = asyncio.ensure_future(self._send(request))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, request: dict[str, Any]) -> None:
        context = request["context"]
        try:
            endpoint = parse_url(str(context["bapUri"]))
        except ValueError:
            self.failed += 1
            return
        body = callback_body(request, self._bpp_id)
        encoded = build_request(
            "POST",
            endpoint,
            f"/on_{context['action']}",
            {"Content-Type": "application/json", "Authorization": self._signer.authorization(body)},
            body,
        )
        idle = self._idle.setdefault(endpoint.url, [])
        while idle and not idle[-1].alive:
            idle.pop()
        try:
            conn = (
                idle.pop()
                if idle
                else await HttpConnection.connect(endpoint, ssl=None, timeout=self._timeout)
            )
            response = await conn.fetch(encoded, keep_body=False)
        except OpError:
            self.failed += 1
            return
        if conn.alive:
            idle.append(conn)
        if 200 <= response.status < 300:
            self.sent += 1
        else:
            self.failed += 1

    def close(self) -> None:
        """Stop pending callbacks and close the pooled connections."""
        for task in self._tasks:
            task.cancel()
        for conns in self._idle.values():
            for conn in conns:
                conn.close()
        self._idle.clear()


class CallbackListener:
    """The BAP's callback endpoint: routes each ``on_*`` to the session awaiting it."""

    def __init__(self) -> None:
        self.signer: Signer | None = None
        """Signs the ACKs (the first session's signer: a run's sessions share one key)."""
        self._waiting: dict[str, Waiter] = {}
        self._server: asyncio.Server | None = None
        self.url = ""
        self.unmatched = 0

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: HandlerProtocol(self._handle), "127.0.0.1", 0
        )
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/bap"

    def expect(self, message_id: str, waiter: Waiter) -> None:
        """Call ``waiter`` when the callback of ``message_id`` arrives."""
        self._waiting[message_id] = waiter

    def forget(self, message_id: str) -> None:
        """Stop waiting for ``message_id`` (timed out or session closed)."""
        self._waiting.pop(message_id, None)

    def _handle(self, method: bytes, url: bytes, authorization: str, body: bytes) -> bytes:
        try:
            context = orjson.loads(body)["context"]
            message_id = context["messageId"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            error = {"code": "400", "message": "not a Beckn callback"}
            return json_response("400 Bad Request", {"status": "NACK", "error": error})
        waiter = self._waiting.pop(message_id, None)
        if waiter is None:
            self.unmatched += 1
        else:
            waiter(len(body))
        ack = {"status": "ACK", "messageId": message_id}
        if isinstance(context.get("transactionId"), str):
            ack["transactionId"] = context["transactionId"]
        reply = orjson.dumps({"message": ack})
        signature = ""
        if self.signer is not None:
            signed = self.signer.authorization(reply, reply_to=authorization)
            signature = f"Signature: {signed}\r\n"
        return json_bytes_response("200 OK", reply, signature)


_listeners: dict[int, asyncio.Future[CallbackListener]] = {}


async def listener(signer: Signer | None = None) -> CallbackListener:
    """This event loop's (so this worker's) callback listener, started on first use;
    ``signer`` signs its ACKs (the first one given)."""
    key = id(asyncio.get_running_loop())
    pending = _listeners.get(key)
    if pending is None:
        pending = _listeners[key] = asyncio.get_running_loop().create_future()
        created = CallbackListener()
        try:
            await created.start()
        except OSError as exc:
            del _listeners[key]
            pending.set_exception(exc)
            pending.exception()
            raise
        pending.set_result(created)
    found = await asyncio.shield(pending)
    if found.signer is None:
        found.signer = signer
    return found

"""A Beckn BAP session: signed v2 requests on one keep-alive connection.

Per exchange (:meth:`BecknSession.submit`): build the body (fresh ids),
sign it (BLAKE2b-512 digest + Ed25519), encode the request and send it on the
shared lean HTTP client. The reply is mapped to the taxonomy:

* 200 with ``ACK`` (``{"status": "ACK"}`` or v1's ``{"message": {"ack": ...}}``)
  and 409 (``AckNoCallback``) are successes;
* 200 with ``NACK`` is ``protocol`` (code ``NACK``, detail the error message);
* 401 is ``auth`` (the signature was refused; detail the server's reason);
* any other status is ``protocol`` with the status as its code; a body that
  is not an Ack is ``validation``.

A connection the server closed between requests is reopened before the
next request (the connect time counts in its latency; a failure to connect
is its error).

With ``await_callback`` an exchange ends when the ``on_{action}`` callback
with the request's ``messageId`` reaches the worker's callback listener (and
the ACK has arrived), so its latency is request -> callback; no callback
within the timeout is ``timeout``.
"""

from __future__ import annotations

import asyncio
import ssl as ssl_module

import orjson

from protobench.protocols.base import CallbackSession, Done, ErrorClass, OpError
from protobench.protocols.beckn.callbacks import CallbackListener
from protobench.protocols.beckn.payloads import BodyFactory
from protobench.protocols.beckn.signing import Signer
from protobench.protocols.http_client import (
    Endpoint,
    HttpConnection,
    Response,
    build_request,
    status_error,
)

_JSON = ("Content-Type", "application/json")


def ack_error(body: bytes) -> OpError | None:
    """``None`` for an ACK body; the ``protocol``/``validation`` error otherwise."""
    try:
        reply = orjson.loads(body)
    except orjson.JSONDecodeError:
        return OpError(ErrorClass.VALIDATION, "reply is not JSON")
    if not isinstance(reply, dict):
        return OpError(ErrorClass.VALIDATION, "reply is not an Ack object")
    status = reply.get("status")
    if status is None:
        legacy = reply.get("message")
        ack = legacy.get("ack") if isinstance(legacy, dict) else None
        status = ack.get("status") if isinstance(ack, dict) else None
    if status == "ACK":
        return None
    if status == "NACK":
        return OpError(ErrorClass.PROTOCOL, _error_message(reply), code="NACK")
    return OpError(ErrorClass.VALIDATION, "reply is neither ACK nor NACK")


def _error_message(reply: object) -> str:
    error = reply.get("error") if isinstance(reply, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error.get("code") or "NACK")
    return "NACK"


class BecknSession(CallbackSession):
    """One virtual BAP sending one action to the BPP."""

    def __init__(
        self,
        conn: HttpConnection,
        endpoint: Endpoint,
        action: str,
        bodies: BodyFactory,
        signer: Signer | None,
        timeout: float,
        listener: CallbackListener | None = None,
        ssl: ssl_module.SSLContext | None = None,
    ) -> None:
        self._conn = conn
        self._ssl = ssl
        self._reconnecting: asyncio.Task[None] | None = None
        self._endpoint = endpoint
        self._path = f"/{action}"
        self._action = action
        self._bodies = bodies
        self._signer = signer
        self._timeout = timeout
        self._listener = listener
        self._done: Done | None = None
        self._message_id = ""
        self._acked = -1
        self._called_back = -1
        self._timer: asyncio.TimerHandle | None = None

    def submit(self, done: Done) -> None:
        if not self._conn.alive:
            self._reconnecting = asyncio.ensure_future(self._reconnect_then_send(done))
            return
        self._send(done)

    async def _reconnect_then_send(self, done: Done) -> None:
        try:
            self._conn = await HttpConnection.connect(
                self._endpoint, ssl=self._ssl, timeout=self._timeout
            )
        except OpError as exc:
            done(exc, 0)
            return
        self._send(done)

    def _send(self, done: Done) -> None:
        body = self._bodies()
        headers = [_JSON]
        if self._signer is not None:
            headers.append(("Authorization", self._signer.authorization(body)))
        request = build_request("POST", self._endpoint, self._path, headers, body)
        self._done = done
        if self._listener is not None:
            self._message_id = self._bodies.message_id
            self._acked = self._called_back = -1
            self._listener.expect(self._message_id, self._on_callback)
        self._conn.send(request, self._on_response, keep_body=True)

    def _on_response(self, error: OpError | None, response: Response | None) -> None:
        if error is None and response is not None:
            error = self._reply_error(response)
        if error is not None or response is None:
            self._finish(error or OpError(ErrorClass.CLOSED, "no response"), 0)
            return
        if self._listener is None or response.status == 409:
            self._finish(None, response.nbytes)
            return
        self._acked = response.nbytes
        if self._called_back >= 0:
            self._finish(None, self._acked + self._called_back)
        else:
            self._timer = asyncio.get_running_loop().call_later(self._timeout, self._no_callback)

    @staticmethod
    def _reply_error(response: Response) -> OpError | None:
        status = response.status
        if status in (200, 202):
            return ack_error(response.body)
        if status == 409:
            return None
        if status == 401:
            reply_error = ack_error(response.body)
            detail = reply_error.detail if reply_error is not None else "unauthorized"
            return OpError(ErrorClass.AUTH, detail, code="401")
        return status_error(status)

    def _on_callback(self, nbytes: int) -> None:
        self._called_back = nbytes
        if self._acked >= 0:
            self._finish(None, self._acked + nbytes)

    def _no_callback(self) -> None:
        self._timer = None
        self._finish(
            OpError(ErrorClass.TIMEOUT, f"no on_{self._action} callback within {self._timeout:g}s"),
            0,
        )

    def _finish(self, error: OpError | None, nbytes: int) -> None:
        done = self._done
        if done is None:
            return
        self._done = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._listener is not None:
            self._listener.forget(self._message_id)
        done(error, nbytes)

    async def close(self) -> None:
        if self._reconnecting is not None and not self._reconnecting.done():
            self._reconnecting.cancel()
        if self._listener is not None:
            self._listener.forget(self._message_id)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._conn.close()

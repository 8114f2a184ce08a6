"""A Beckn BAP session: signed v2 requests on one keep-alive connection.

Per exchange (:meth:`BecknSession.submit`): build the body (fresh ids),
sign it (BLAKE2b-512 digest + Ed25519), encode the request and send it on the
shared lean HTTP client. The reply is mapped to the taxonomy:

:func:`~protobench.protocols.beckn.acks.reply_error`: an ACK (v2, v1 or
top-level shape) or 409 is a success, a NACK is ``protocol`` coded by its
``error.code``, 401 is ``auth``, other statuses ``protocol``. With the BPP's
public key (``bpp_public_key``) every ACK's ``Signature`` header must verify.

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

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from protobench.protocols.base import CallbackSession, Done
from protobench.protocols.beckn.acks import reply_error, signature_error
from protobench.protocols.beckn.callbacks import CallbackListener
from protobench.protocols.beckn.payloads import BodyFactory
from protobench.protocols.beckn.signing import Signer
from protobench.protocols.http.client import (
    Endpoint,
    HttpConnection,
    Response,
    build_request,
)
from protobench.vocab.errors import ErrorClass, OpError

_JSON = ("Content-Type", "application/json")


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
        bpp_key: Ed25519PublicKey | None = None,
    ) -> None:
        self._conn = conn
        self._bpp_key = bpp_key
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
        self._authorization = ""
        self._acked = -1
        self._called_back = -1
        self._timer: asyncio.TimerHandle | None = None

    def submit(self, done: Done) -> None:
        if not self._conn.alive:
            self._reconnecting = asyncio.ensure_future(self._reconnect_then_send(done))
            return
        self._send(done)

    async def _reconnect_then_send(self, done: Done) -> None:
        old = self._conn
        sent = old.sent
        try:
            self._conn = await HttpConnection.connect(
                self._endpoint,
                ssl=self._ssl,
                timeout=self._timeout,
                stamps=old.stamps,
                reactor=old.reactor,
            )
        except OpError as exc:
            done(exc, 0)
            return
        self._conn.sent = sent
        self._send(done)

    def _send(self, done: Done) -> None:
        body = self._bodies()
        headers = [_JSON]
        if self._signer is not None:
            self._authorization = self._signer.authorization(body)
            headers.append(("Authorization", self._authorization))
        request = build_request("POST", self._endpoint, self._path, headers, body)
        self._done = done
        self._message_id = self._bodies.message_id
        if self._listener is not None:
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

    def _reply_error(self, response: Response) -> OpError | None:
        error = reply_error(response.status, response.body, self._message_id)
        if error is None and self._bpp_key is not None:
            return signature_error(
                response.header("signature"), response.body, self._bpp_key, self._authorization
            )
        return error

    def _on_callback(self, nbytes: int) -> None:
        self._called_back = nbytes
        if self._acked >= 0:
            self._conn.stamps.received = 0  # it ends now, not at the ACK's packet
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

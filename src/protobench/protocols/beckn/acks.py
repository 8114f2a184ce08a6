"""A BPP's (or an adapter's) synchronous reply: ACK, NACK, and the error it names.

Three shapes are in use, all accepted:

* Beckn v2 (``beckn.yaml`` ``Ack``/``Nack``, what beckn-onix writes):
  ``{"message": {"status": "ACK", "messageId": ..., "transactionId": ...}}``, a
  NACK with ``message.error = {"code": "AUT_SIGNATURE_INVALID", "message": ...}``;
* Beckn v1: ``{"message": {"ack": {"status": "ACK"}}, "error": {...}}`` (older
  onix puts the error in ``message.error``);
* a top-level ``{"status": "ACK"}`` / ``{"status": "NACK", "error": {...}}``
  (the embedded mock BPP).

:func:`reply_error` maps a reply to the taxonomy: 200/202 with ACK and 409
(``AckNoCallback``) are successes; an ACK naming another ``messageId`` than
the request's is ``validation``; a NACK is ``protocol`` with the NACK's
``error.code`` as its code (``NACK`` when it has none); 401 is ``auth``; any
other status is ``protocol``, coded by the NACK in its body when there is one,
else by the status; a 200 body that is neither ACK nor NACK is ``validation``.
:func:`signature_error` checks an ACK's counter-signature (its ``Signature``
header: the ``Authorization`` fields over the ACK body, in the spec's form or
bound to the request as beckn-onix v1.8 signs it) with the BPP's key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from protobench.protocols.beckn.signing import SignatureError, parse_authorization, verify_with
from protobench.protocols.http.client import status_error
from protobench.vocab.errors import ErrorClass, OpError


@dataclass(frozen=True, slots=True)
class Ack:
    """What a reply body says: ``status`` ACK/NACK (``None``: neither), and its ids."""

    status: str | None
    message_id: str | None = None
    error_code: str | None = None
    error_message: str | None = None


def parse_ack(body: bytes) -> Ack | OpError:
    """The :class:`Ack` in ``body``, or the ``validation`` error of a body that is not JSON."""
    try:
        reply = orjson.loads(body)
    except orjson.JSONDecodeError:
        return OpError(ErrorClass.VALIDATION, "reply is not JSON")
    if not isinstance(reply, dict):
        return OpError(ErrorClass.VALIDATION, "reply is not an Ack object")
    message = reply.get("message")
    message = message if isinstance(message, dict) else {}
    ack = _dict(message.get("ack"))
    found = (reply.get("status"), message.get("status"), ack.get("status"))
    status = next((value for value in found if value in ("ACK", "NACK")), None)
    error = _dict(message.get("error")) or _dict(reply.get("error"))
    message_id = message.get("messageId")
    return Ack(
        status=status,
        message_id=message_id if isinstance(message_id, str) else None,
        error_code=_text(error.get("code")),
        error_message=_text(error.get("message")),
    )


def reply_error(status: int, body: bytes, message_id: str | None = None) -> OpError | None:
    """``None`` for an accepted request; else its error (see the module)."""
    if status == 409:
        return None
    ack = parse_ack(body)
    if status in (200, 202):
        if isinstance(ack, OpError):
            return ack
        if ack.status == "ACK":
            if message_id and ack.message_id and ack.message_id != message_id:
                return OpError(
                    ErrorClass.VALIDATION,
                    f"ACK for messageId {ack.message_id}, the request was {message_id}",
                )
            return None
        if ack.status == "NACK":
            return _nack(ErrorClass.PROTOCOL, ack, "NACK")
        return OpError(ErrorClass.VALIDATION, "reply is neither ACK nor NACK")
    nack = ack if isinstance(ack, Ack) and ack.status == "NACK" else None
    if status == 401:
        if nack is None:
            return OpError(ErrorClass.AUTH, "unauthorized", code="401")
        return _nack(ErrorClass.AUTH, nack, "401")
    if nack is not None and nack.error_code is not None:
        return _nack(ErrorClass.PROTOCOL, nack, str(status))
    return status_error(status)


def signature_error(
    header: bytes | None, body: bytes, key: Ed25519PublicKey, request: str = ""
) -> OpError | None:
    """``None`` when the ACK's ``Signature`` header verifies with the BPP's ``key``;
    else the ``validation`` error (code ``signature``) saying why.

    ``request`` is the ``Authorization`` of the request answered ("" when unsigned):
    an ACK signed as beckn-onix v1.8 signs them is bound to it (see
    :mod:`~protobench.protocols.beckn.signing`)."""
    if header is None:
        return OpError(ErrorClass.VALIDATION, "the ACK has no Signature header", code="signature")
    try:
        fields = parse_authorization(header.decode("latin-1"), scheme_required=False)
        verify_with(fields, body, key, reply_to=request)
    except SignatureError as exc:
        return OpError(ErrorClass.VALIDATION, f"the ACK's Signature: {exc}", code="signature")
    return None


def _nack(error_class: ErrorClass, ack: Ack, default_code: str) -> OpError:
    code = ack.error_code or default_code
    return OpError(error_class, ack.error_message or code, code=code)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return None if value is None else str(value)

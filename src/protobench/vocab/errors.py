"""The error taxonomy shared by every protocol: :class:`ErrorClass` and :class:`OpError`.

Every library exception is mapped to :class:`OpError` with an
:class:`ErrorClass` at the plugin's I/O boundary and nowhere else:

``connect``     the connection could not be established (other than refused)
``refused``     the peer refused the connection (ECONNREFUSED)
``timeout``     no reply in time
``closed``      the peer closed or reset an established connection
``protocol``    a protocol-level failure reply: HTTP status class, BACnet
                Error/Reject/Abort ``class:code``, MQTT reason code
``validation``  a reply arrived but was wrong (wrong echo, bad value, bad grid)
``auth``        authentication or signature rejected
``local``       the generator itself could not do it (overload, no free slot)
"""

from __future__ import annotations

import enum

from protobench.vocab.exceptions import Incomplete


class ErrorClass(enum.StrEnum):
    """The error taxonomy shared by every protocol."""

    CONNECT = "connect"
    REFUSED = "refused"
    TIMEOUT = "timeout"
    CLOSED = "closed"
    PROTOCOL = "protocol"
    VALIDATION = "validation"
    AUTH = "auth"
    LOCAL = "local"


class OpError(Incomplete):
    """A failed operation, already classified.

    ``code`` is the protocol's own identification of the failure when it has
    one (``"503"``, ``"property:unknown-property"``, ``"0x87"``); ``detail`` is
    a short human-readable message (the last one per class is shown in the UI).
    ``lost`` says the failure ended the session's connection (a ``protocol``
    error after which the client closed it, say): the engine then reopens the
    session, as it does after every ``closed``, ``refused`` or ``connect`` error.
    """

    def __init__(
        self, error_class: ErrorClass, detail: str = "", code: str = "", *, lost: bool = False
    ) -> None:
        super().__init__(f"{error_class}: {code + ' ' if code else ''}{detail}".strip())
        self.error_class = error_class
        self.detail = detail
        self.code = code
        self.lost = lost

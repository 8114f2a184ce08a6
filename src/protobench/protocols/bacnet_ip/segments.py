"""Receiving a segmented ComplexACK as a client (ASHRAE 135 clause 5.4.4), no I/O.

A device whose reply does not fit in one APDU sends it in segments when the
request said it accepts them. The segments carry a sequence number (mod 256)
and the window size the device proposes. The client:

* answers the first segment with a SegmentACK at once (sequence number 0 and
  the window size it accepts: the smaller of the proposed one and
  :data:`WINDOW`);
* then acknowledges each full window, and the last segment;
* answers a segment out of order (a lost one, or a repeat after a lost
  SegmentACK) with a negative SegmentACK naming the last segment received in
  order, so that the device resends from the next one;
* gives up when the reply would exceed :data:`MAX_SEGMENTS` segments, the
  number its requests announce.

:class:`Reassembly` keeps one reply's segments and says what to acknowledge;
:func:`segment_ack_apdu` encodes the acknowledgement.
"""

from __future__ import annotations

WINDOW = 16
"""The largest window this client accepts (segments between SegmentACKs)."""
MAX_SEGMENTS = 64
"""Segments a reply may have; requests announce it (max-segments-accepted)."""
_SEGMENT_ACK = 0x40
_NEGATIVE = 0x02

Ack = tuple[int, bool]
"""A SegmentACK to send: the sequence number acknowledged, and whether it is negative."""


class Reassembly:
    """The segments of one ComplexACK received so far, in order."""

    __slots__ = ("_in_window", "complete", "expected", "parts", "service", "window")

    def __init__(self, service: int, proposed_window: int) -> None:
        self.service = service
        self.window = max(1, min(WINDOW, proposed_window))
        self.parts: list[bytes] = []
        self.expected = 0
        self.complete = False
        self._in_window = 0

    def add(self, sequence: int, more_follows: bool, payload: bytes) -> Ack | None:
        """Take one segment; return the SegmentACK to send, if one is due.

        Raises ``ValueError`` when the reply has more segments than announced.
        """
        if sequence != self.expected:
            return ((self.expected - 1) & 0xFF, True)
        if len(self.parts) == MAX_SEGMENTS:
            raise ValueError(f"reply has more than {MAX_SEGMENTS} segments")
        self.parts.append(payload)
        self.expected = (sequence + 1) & 0xFF
        self._in_window += 1
        if not more_follows:
            self.complete = True
            return (sequence, False)
        if len(self.parts) == 1 or self._in_window == self.window:
            self._in_window = 0
            return (sequence, False)
        return None

    def payload(self) -> bytes:
        """The service ACK data of the whole reply (once complete)."""
        return b"".join(self.parts)


def segment_ack_apdu(invoke_id: int, ack: Ack, window: int) -> bytes:
    """A SegmentACK PDU sent by a client."""
    sequence, negative = ack
    return bytes((_SEGMENT_ACK | (_NEGATIVE if negative else 0), invoke_id, sequence, window))

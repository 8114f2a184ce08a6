"""Who held the messages back: findings on an MQTT run's counters, for the verdicts.

:func:`findings` reads the counters of every op (totals over sustain and
drain) and names where messages stayed or went:

- the **broker dropped** them (``broker_dropped`` from its ``$SYS`` total);
- the **subscribers fell behind**: messages never arrived by the end of the
  drain (``undelivered``) or publishers' ends were still queued behind a
  backlog (``unfinished``), while the broker dropped nothing: the subscribers
  (our receiving side, or the broker's sending to them) are the bottleneck,
  not the publishing rate the broker accepted;
- messages were **lost** on the way (gaps: ``lost``) without the broker
  counting drops;
- the **generator** fell behind its schedule: publishers took arrivals more
  than a millisecond late (``behind``, the open model's own lateness); late
  arrivals are still published, so this says when, not how many.

Each finding is one line with the figures that prove it; no finding when every
expected message arrived.
"""

from __future__ import annotations

from collections.abc import Mapping

from protobench.vocab.counters import BEHIND


def _total(ops: Mapping[str, Mapping[str, int]], name: str) -> int:
    return sum(int(counters.get(name, 0)) for counters in ops.values())


def findings(ops: Mapping[str, Mapping[str, int]]) -> list[str]:
    """The findings on ``ops`` (op name -> counter totals); see the module docstring."""
    received = _total(ops, "received")
    expected = _total(ops, "expected")
    lost = _total(ops, "lost")
    undelivered = _total(ops, "undelivered")
    unfinished = _total(ops, "unfinished")
    dropped = _total(ops, "broker_dropped")
    behind = _total(ops, BEHIND)
    share = f" ({received:,} of {expected:,} expected)" if expected else ""
    out = []
    if dropped:
        out.append(
            f"the broker dropped {dropped:,} messages (its $SYS count: queue or in-flight "
            f"limits full); lost {lost:,}, undelivered {undelivered:,}{share}"
        )
    if (undelivered or unfinished) and not dropped:
        ends = f"; {unfinished:,} publishers' ends still queued" if unfinished else ""
        out.append(
            f"subscribers fell behind: {undelivered:,} messages not received by the end of "
            f"the drain{ends}{share}; the broker dropped none: the subscribers (or the "
            "broker's delivery to them) are the bottleneck, publish at a lower rate or add "
            "subscribers"
        )
    if lost and not dropped:
        out.append(
            f"{lost:,} messages lost on the way (gaps in publishers' sequences) while the "
            "broker reported no drop"
        )
    if behind:
        out.append(
            f"the generator fell behind its schedule: {behind:,} publishes went out more than "
            "a millisecond after their intended time (each was still sent: the rate's count "
            "was offered, not at its pace)"
        )
    return out

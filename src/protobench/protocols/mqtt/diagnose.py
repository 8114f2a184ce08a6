"""Who held the messages back: findings on an MQTT run's counters, for the verdicts.

:func:`findings` reads the counters of every op (totals over sustain and
drain, with each op's ``ok`` and ``errors:CLASS``) and names, from the ops the
profile has, where messages stayed or went:

- the **broker dropped** them (``broker_dropped`` from its ``$SYS`` total);
- the **subscribers fell behind** (a profile with subscribers): messages never
  arrived by the end of the drain (``undelivered``) or publishers' ends were
  still queued behind a backlog (``unfinished``), while the broker dropped
  nothing: the subscribers (our receiving side, or the broker's sending to
  them) are the bottleneck, not the publishing rate the broker accepted; with
  how far behind they were (``lag_ms`` over ``lagging``: the age of the newest
  message each lagging subscriber had received when the drain ended);
- messages were **lost** on the way (gaps: ``lost``) without the broker
  counting drops;
- the **generator** fell behind its schedule: ops took arrivals more than a
  millisecond late (``behind``, the open model's own lateness); late arrivals
  are still sent, so this says when, not how many;
- **connections** failed (``connect``, ``drop`` and ``idle`` ops): the broker
  answered no CONNACK in time (``timeout``: it accepts TCP connections but does
  not process them, stalled or overloaded), refused them, or closed them.

Each finding is one line with the figures that prove it; no finding when every
expected message arrived and every connection held.
"""

from __future__ import annotations

from collections.abc import Mapping

from protobench.vocab.counters import BEHIND, ERRORS_PREFIX, OK_TOTAL

CONNECTION_OPS = ("connect", "drop", "idle")
"""Ops whose exchanges are connections: their failures are the broker's connection handling."""


def _total(ops: Mapping[str, Mapping[str, int]], name: str) -> int:
    return sum(int(counters.get(name, 0)) for counters in ops.values())


def _lag(ops: Mapping[str, Mapping[str, int]]) -> str:
    """How far behind the lagging subscribers were when the drain ended (their mean)."""
    lagging = _total(ops, "lagging")
    if not lagging:
        return ""
    seconds = _total(ops, "lag_ms") / lagging / 1000
    who = "the subscriber was" if lagging == 1 else f"{lagging:,} subscribers were on average"
    return (
        f"; {who} {seconds:.1f} s behind (the newest message received had been sent "
        f"{seconds:.1f} s before the drain ended)"
    )


def _delivery(ops: Mapping[str, Mapping[str, int]]) -> list[str]:
    """The findings of a profile with subscribers: where messages stayed."""
    received = _total(ops, "received")
    expected = _total(ops, "expected")
    lost = _total(ops, "lost")
    undelivered = _total(ops, "undelivered")
    unfinished = _total(ops, "unfinished")
    dropped = _total(ops, "broker_dropped")
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
            f"the drain{ends}{share}{_lag(ops)}; the broker dropped none: the subscribers (or "
            "the broker's delivery to them) are the bottleneck, publish at a lower rate or "
            "add subscribers"
        )
    if lost and not dropped:
        out.append(
            f"{lost:,} messages lost on the way (gaps in publishers' sequences) while the "
            "broker reported no drop"
        )
    return out


def _connections(ops: Mapping[str, Mapping[str, int]]) -> list[str]:
    """The findings of ops whose exchanges are connections (storms, idle fleets)."""
    out = []
    for op in CONNECTION_OPS:
        counters = ops.get(op)
        if counters is None:
            continue
        failed = {
            key.removeprefix(ERRORS_PREFIX): int(value)
            for key, value in counters.items()
            if key.startswith(ERRORS_PREFIX) and value
        }
        if not failed:
            continue
        total = sum(failed.values()) + int(counters.get(OK_TOTAL, 0))
        classes = ", ".join(f"{cls} {n:,}" for cls, n in sorted(failed.items()))
        what = "held connections" if op == "idle" else "connection attempts"
        why = ""
        if failed.get("timeout", 0) * 2 >= sum(failed.values()):
            why = (
                ": mostly no CONNACK in time, the broker accepts TCP connections but does "
                "not process them (stalled, deadlocked or overloaded)"
            )
        out.append(f"{op}: {sum(failed.values()):,} of {total:,} {what} failed ({classes}){why}")
    return out


def findings(ops: Mapping[str, Mapping[str, int]]) -> list[str]:
    """The findings on ``ops`` (op name -> counter totals); see the module docstring."""
    out = _delivery(ops) if "subscribe" in ops else []
    late = {op: int(counters.get(BEHIND, 0)) for op, counters in ops.items()}
    for op, behind in late.items():
        if behind:
            what = "publishes" if op == "publish" else f"{op} exchanges"
            out.append(
                f"the generator fell behind its schedule: {behind:,} {what} went out more "
                "than a millisecond after their intended time (each was still sent: the "
                "rate's count was offered, not at its pace)"
            )
    return out + _connections(ops)

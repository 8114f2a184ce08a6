"""The target's profile as terminal text: how it was sampled, then its top functions.

``run`` prints the first few functions under its summary, ``snapshots show``
the first 15 (:data:`~protobench.engine.stacks.model.TOP`). Every name was
cleaned of control characters when the profile was read.
"""

from __future__ import annotations

from protobench.engine.stacks.model import ProfileSummary


def percent(share: float) -> str:
    return f"{share * 100:.1f}%"


def profile_lines(summary: ProfileSummary, top: int) -> list[str]:
    """The sampling line, then ``self% total% function (file)`` for the ``top`` functions."""
    native = " with native frames" if summary.native else ""
    lines = [
        f"target profile: {summary.tool} at {summary.rate:g} Hz{native} (pid {summary.pid}), "
        f"{summary.samples:,} samples over {summary.end_s - summary.start_s:.1f}s of sustain, "
        f"{percent(summary.idle_share)} waiting; sampling cost: {summary.overhead}"
    ]
    shown = [f for f in summary.top[:top] if f.self_samples]
    if not shown:
        lines.append("  no running sample: the target was waiting whenever it was sampled")
        return lines
    lines.append(f"  {'self':>6} {'total':>6}  function (of {summary.running_samples:,} running)")
    for item in shown:
        where = f" ({item.file})" if item.file else ""
        lines.append(
            f"  {percent(item.self_share):>6} {percent(item.total_share):>6}  "
            f"{item.function}{where}"
        )
    return lines

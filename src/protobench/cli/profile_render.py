"""The target's profile as terminal text: how it was sampled, then its top functions.

``run`` prints the first few functions under its summary, ``snapshots show``
the first 15 (:data:`~protobench.engine.stacks.model.TOP`), ``diff`` the
functions whose share changed most (:func:`change_lines`). The tables that hold
these lines (``summary_table``, ``render_text``) pass the target's names
through ``termtext.visible_tree`` first.
"""

from __future__ import annotations

from protobench.engine.stacks.model import ProfileSummary, ShareChange


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


def points(change: float) -> str:
    return f"{change * 100:+.1f}pp"


def change_lines(changes: list[ShareChange]) -> list[str]:
    """``diff``'s table of the target's functions whose share of the running samples changed
    most: self share base → new (change), total share base → new (change)."""
    lines = [
        "target profile: share of the running samples, largest change in self share first",
        f"  {'self: base':>10} {'new':>6} {'change':>8}   {'total: base':>11} {'new':>6} "
        f"{'change':>8}  function",
    ]
    for c in changes:
        where = f" ({c.file})" if c.file else ""
        lines.append(
            f"  {percent(c.base_self):>10} {percent(c.new_self):>6} {points(c.self_change):>8}   "
            f"{percent(c.base_total):>11} {percent(c.new_total):>6} {points(c.total_change):>8}  "
            f"{c.function}{where}"
        )
    return lines

"""Short human forms of the monitor's numbers: latencies, rates, sizes, times."""

from __future__ import annotations


def latency(us: float | None) -> str:
    """A latency given in µs, in a steady width: ``870µs``, ``1.40ms``, ``12.0ms``, ``2.50s``.

    Three significant digits, trailing zeros kept (``1.40ms``, not ``1.4ms``),
    so a column's digits do not shift as the figures change; ``-`` when unknown.
    """
    if us is None:
        return "-"
    if us < 999.5:
        return f"{us:.0f}µs"
    if us < 999_500:
        return _three_digits(us / 1e3) + "ms"
    seconds = us / 1e6
    return _three_digits(seconds) + "s" if seconds < 999.5 else f"{seconds:,.0f}s"


def _three_digits(value: float) -> str:
    """``1.40``, ``12.0``, ``123``: three significant digits of a value in [1, 999.5)."""
    return f"{value:#.3g}".rstrip(".")


def rate(value: float) -> str:
    """Operations per second with a k/M suffix: ``950``, ``12.3k``, ``1.05M``."""
    for limit, suffix in ((1e6, "M"), (1e3, "k")):
        if value >= limit:
            scaled = value / limit
            return f"{scaled:.3g}{suffix}" if scaled < 1000 else f"{scaled:.0f}{suffix}"
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def count(n: float) -> str:
    """A whole number with thousands separators: ``1,234,567``."""
    return f"{round(n):,}"


def per_second(value: float) -> str:
    """A rate for a table column: ``12,345`` (one decimal below 10: ``7.5``)."""
    return f"{value:.1f}" if value < 10 else f"{value:,.0f}"


def size(n: float | None) -> str:
    """Bytes in binary units: ``512B``, ``3.4MiB``."""
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f}{unit}" if unit == "B" else f"{n:.1f}{unit}"
        n /= 1024
    return f"{n:.1f}GiB"


def clock(seconds: float) -> str:
    """``m:ss`` (or ``h:mm:ss``) for a duration in seconds."""
    total = max(0, int(seconds + 0.5))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def share_change(factor: float) -> str:
    """A live rate factor as a change of the base rate: ``+10%``, ``-20%``, ``+0%``."""
    return f"{(factor - 1) * 100:+.0f}%"


def delta(value: float | None, base: float | None) -> str:
    """Relative change of ``value`` against ``base``: ``+12%``, ``-3.4%``; empty when unknown."""
    if value is None or base is None or base == 0:
        return ""
    change = (value - base) / base * 100
    return f"{change:+.0f}%" if abs(change) >= 10 else f"{change:+.1f}%"

"""Parsing of human units in profiles and flags: durations, rates, sizes, percentages.

``"30s"``, ``"500ms"``, ``"2m"``, ``"1h"``, ``"250us"`` are durations (seconds as
float); ``"5000/s"``, ``"300/m"`` or a bare number are rates (per second);
``"64KiB"``, ``"16MiB"``, ``"1k"`` or a bare number are sizes (bytes);
``"0.5%"`` is a fraction. Each parser raises ``ValueError`` with a message that
says what was expected, which the profile loader turns into a located error.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|µs|ms|s|m|h)\s*$")
_DURATION_FACTORS = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:/\s*(s|m|h))?\s*$")
_RATE_FACTORS = {"s": 1.0, "m": 1 / 60, "h": 1 / 3600}
_SIZE = re.compile(r"^\s*(\d+)\s*([kmg]i?b?|b)?\s*$", re.IGNORECASE)
_SIZE_FACTORS = {
    "": 1,
    "b": 1,
    **{f"{p}{b}": 1000**n for n, p in enumerate("kmg", 1) for b in ("", "b")},
    **{f"{p}i{b}": 1024**n for n, p in enumerate("kmg", 1) for b in ("", "b")},
}


MAX_DURATION = 30 * 86_400.0
"""The longest duration any key or flag takes (30 days)."""
MAX_RATE = 10_000_000.0
"""The highest rate any key or flag takes (per second)."""
MAX_BYTES = 1 << 40
"""The largest size any key or flag takes (1 TiB)."""


def _number(value: object, what: str) -> float | None:
    """``value`` as a finite float when it is a number, ``None`` when it is a string."""
    if isinstance(value, str):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected {what}, got {type(value).__name__} {_short(value)}")
    try:
        number = float(value)
    except OverflowError:
        raise ValueError(f"expected {what}, got a number too large") from None
    if not math.isfinite(number):
        raise ValueError(f"expected {what}, got {value!r}")
    return number


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def parse_duration(value: object) -> float:
    """Seconds from ``"30s"``, ``"500ms"``, ``"2m"``, ``"250us"``; a bare number is seconds.

    Durations are finite, ``>= 0`` and at most :data:`MAX_DURATION`; keys that
    need a positive duration check ``> 0`` themselves.
    """
    what = "a duration such as '30s' or '500ms'"
    seconds = _number(value, what)
    if seconds is None:
        assert isinstance(value, str)
        match = _DURATION.match(value)
        if not match:
            raise ValueError(
                f"expected a duration such as '30s', '500ms' or '2m', got {_short(value)}"
            )
        seconds = float(match.group(1)) * _DURATION_FACTORS[match.group(2)]
    if seconds < 0:
        raise ValueError("expected a duration >= 0")
    if seconds > MAX_DURATION:
        raise ValueError(f"expected a duration of at most 30 days, got {_short(value)}")
    return seconds


def parse_rate(value: object) -> float:
    """Operations per second from ``"5000/s"``, ``"300/m"`` or a bare number (finite, > 0)."""
    rate = _number(value, "a rate such as '5000/s'")
    if rate is None:
        assert isinstance(value, str)
        match = _RATE.match(value)
        if not match:
            raise ValueError(f"expected a rate such as '5000/s' or '300/m', got {_short(value)}")
        rate = float(match.group(1)) * _RATE_FACTORS[match.group(2) or "s"]
    if rate <= 0:
        raise ValueError("expected a rate > 0")
    if rate > MAX_RATE:
        raise ValueError(f"expected a rate of at most {MAX_RATE:,.0f}/s, got {_short(value)}")
    return rate


def parse_size(value: object, maximum: int) -> int:
    """Bytes from ``200``, ``"200B"``, ``"1k"``/``"1kB"`` (1000), ``"1KiB"`` (1024), ``"16MiB"``,
    ``"1GiB"`` (``M``/``G``: powers of 1000, ``Mi``/``Gi``: of 1024); ``0 <= size <= maximum``."""
    what = "a size in bytes such as 200, '64KiB' or '16MiB'"
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"expected {what}, got {_short(value)}")
    if isinstance(value, int):
        size = value
    else:
        match = _SIZE.match(value)
        if not match:
            raise ValueError(f"expected {what}, got {_short(value)}")
        size = int(match.group(1)) * _SIZE_FACTORS[(match.group(2) or "").lower()]
    if size < 0:
        raise ValueError("expected a size >= 0")
    if size > maximum:
        raise ValueError(
            f"expected a size of at most {maximum} B ({format_size(maximum)}), got {size}"
        )
    return size


def format_size(size: int) -> str:
    """A size in bytes in its largest binary unit: ``'64 KiB'``, ``'16 MiB'``, ``'100 B'``, with one
    decimal when the unit does not divide it (``'1.5 MiB'``)."""
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor:
            whole, rest = divmod(size, factor)
            return f"{whole} {unit}" if not rest else f"{size / factor:.1f} {unit}"
    return f"{size} B"


def parse_fraction(value: object) -> float:
    """A finite fraction from ``"0.5%"`` (0.005) or a bare number (taken as is)."""
    what = "a fraction such as '0.5%' or 0.005"
    number = _number(value, what)
    if number is not None:
        return number
    assert isinstance(value, str)
    text = value.strip()
    try:
        number = float(text[:-1]) / 100.0 if text.endswith("%") else float(text)
    except ValueError:
        raise ValueError(f"expected {what}, got {_short(value)}") from None
    if not math.isfinite(number):
        raise ValueError(f"expected {what}, got {_short(value)}")
    return number


def parse_scalar(text: str) -> Any:
    """A command-line value: JSON when it parses (``5``, ``true``, ``[1, 2]``), else the string."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def plain_number(value: float) -> str:
    """A count or rate in digits, never in exponent form: ``1,000``, ``12.5``, ``0.25``."""
    if abs(value) >= 99.5 or value == int(value):
        return f"{value:,.0f}"
    return f"{value:.3g}"


def format_duration(seconds: float) -> str:
    """A short human form of a duration: ``'850µs'``, ``'12.3ms'``, ``'4.20s'``."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f}µs"
    if seconds < 1.0:
        return f"{seconds * 1e3:.3g}ms"
    return f"{seconds:.3g}s"

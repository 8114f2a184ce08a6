"""Parsing of human units in profiles and flags: durations, rates, sizes, percentages.

``"30s"``, ``"500ms"``, ``"2m"``, ``"1h"``, ``"250us"`` are durations (seconds as
float); ``"5000/s"``, ``"300/m"`` or a bare number are rates (per second);
``"0.5%"`` is a fraction. Each parser raises ``ValueError`` with a message that
says what was expected, which the profile loader turns into a located error.
"""

from __future__ import annotations

import json
import re
from typing import Any

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|µs|ms|s|m|h)\s*$")
_DURATION_FACTORS = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:/\s*(s|m|h))?\s*$")
_RATE_FACTORS = {"s": 1.0, "m": 1 / 60, "h": 1 / 3600}


def parse_duration(value: str | int | float) -> float:
    """Seconds from ``"30s"``, ``"500ms"``, ``"2m"``, ``"250us"``; a bare number is seconds."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as '30s' or '500ms'")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError("expected a duration >= 0")
        return float(value)
    match = _DURATION.match(value)
    if not match:
        raise ValueError(f"expected a duration such as '30s', '500ms' or '2m', got {value!r}")
    return float(match.group(1)) * _DURATION_FACTORS[match.group(2)]


def parse_rate(value: str | int | float) -> float:
    """Operations per second from ``"5000/s"``, ``"300/m"`` or a bare number."""
    if isinstance(value, bool):
        raise ValueError("expected a rate such as '5000/s'")
    if isinstance(value, int | float):
        rate = float(value)
    else:
        match = _RATE.match(value)
        if not match:
            raise ValueError(f"expected a rate such as '5000/s' or '300/m', got {value!r}")
        rate = float(match.group(1)) * _RATE_FACTORS[match.group(2) or "s"]
    if rate <= 0:
        raise ValueError("expected a rate > 0")
    return rate


def parse_fraction(value: str | float) -> float:
    """A fraction from ``"0.5%"`` (0.005) or a bare number (taken as is)."""
    if isinstance(value, int | float):
        return float(value)
    text = value.strip()
    if text.endswith("%"):
        return float(text[:-1]) / 100.0
    return float(text)


def parse_scalar(text: str) -> Any:
    """A command-line value: JSON when it parses (``5``, ``true``, ``[1, 2]``), else the string."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def format_duration(seconds: float) -> str:
    """A short human form of a duration: ``'850µs'``, ``'12.3ms'``, ``'4.20s'``."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f}µs"
    if seconds < 1.0:
        return f"{seconds * 1e3:.3g}ms"
    return f"{seconds:.3g}s"

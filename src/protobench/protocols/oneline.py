"""The protocols that run from a URL on the command line (``protobench run URL``), by scheme.

Each is a :class:`~protobench.protocols.flags.OneLine` declared beside its
plugin; :data:`FLAGS` are the flags of them all, the options ``run`` and
``sweep`` take beside the run settings'.
"""

from __future__ import annotations

from protobench.protocols.flags import OneLine, ProtocolFlag
from protobench.protocols.http.flags import HTTP

LINES: tuple[OneLine, ...] = (HTTP,)


def _flags() -> tuple[ProtocolFlag, ...]:
    seen: dict[str, ProtocolFlag] = {}
    for line in LINES:
        for flag in line.flags:
            if seen.setdefault(flag.name, flag).names != flag.names:
                raise RuntimeError(f"two protocols name the flag {flag.name!r} differently")
    return tuple(seen.values())


FLAGS = _flags()
"""Every one-line flag once (two protocols may share one, with the same names)."""


def is_url(text: str) -> bool:
    """Whether a run's first argument is a URL (``scheme://...``), not a profile."""
    scheme, sep, _ = text.partition("://")
    return bool(sep) and scheme.isascii() and scheme.replace("+", "").isalnum()


def for_url(url: str) -> OneLine:
    """The one-line protocol of ``url``'s scheme; ``ValueError`` naming the schemes we speak."""
    scheme = url.partition("://")[0].lower()
    for line in LINES:
        if scheme in line.schemes:
            return line
    known = ", ".join(f"{s}://" for line in LINES for s in line.schemes)
    raise ValueError(
        f"{scheme}://: a URL run speaks {known} (other protocols run from a profile: "
        "protobench profiles list)"
    )

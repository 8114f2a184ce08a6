"""Built-in profiles (TOML files); :func:`names` lists them without loading any."""

from __future__ import annotations

from importlib import resources


def names() -> list[str]:
    """Names of the built-in profiles, sorted (their files, read by the loader)."""
    return sorted(
        p.name[:-5] for p in resources.files(__name__).iterdir() if p.name.endswith(".toml")
    )

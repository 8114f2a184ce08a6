"""Counter names that both the engine and protocol plugins write or read."""

from __future__ import annotations

from typing import Final

BEHIND: Final = "behind"
"""The counter of arrivals the open model's driver took up late (its own lateness)."""

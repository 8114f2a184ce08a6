"""Counter names that both the engine and protocol plugins write or read."""

from __future__ import annotations

from typing import Final

BEHIND: Final = "behind"
"""The counter of arrivals the open model's driver took up late (its own lateness)."""
CONNECTS: Final = "connects"
"""The counter of transport connections opened: the engine counts one per session open, or a
plugin whose sessions share or reopen connections counts its own (``counts_connects``)."""
OK_TOTAL: Final = "ok"
"""In what a plugin diagnoses (``ProtocolPlugin.diagnose``): the op's exchanges that succeeded."""
ERRORS_PREFIX: Final = "errors:"
"""In what a plugin diagnoses: ``errors:CLASS`` is the op's exchanges that failed with CLASS."""

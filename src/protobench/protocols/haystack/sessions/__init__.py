"""Haystack sessions, one module per transport: :mod:`.http` and :mod:`.ws`."""

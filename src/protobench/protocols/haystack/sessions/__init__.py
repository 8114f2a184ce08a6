"""Haystack sessions: :mod:`.opening` prepares one, :mod:`.http` and :mod:`.ws` carry it."""

"""The monitor's widgets, one per module; each renders part of a :class:`Display`."""

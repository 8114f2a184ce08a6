"""Beckn v2 protocol (signed BAP requests, mock BPP, callbacks); see :mod:`.plugin`."""

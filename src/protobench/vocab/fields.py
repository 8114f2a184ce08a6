"""Pydantic field types for human units: ``Duration`` (seconds) and ``Rate`` (per second).

Profiles, protocol options and target options annotate their fields with these,
so ``"30s"`` or ``"5000/s"`` validate the same everywhere. Kept apart from
:mod:`.units`, which the ``--help`` path imports without pydantic.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator

from protobench.vocab.units import parse_duration, parse_rate

Duration = Annotated[float, BeforeValidator(parse_duration)]
Rate = Annotated[float, BeforeValidator(parse_rate)]

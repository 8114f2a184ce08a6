"""Pydantic field types for human units: ``Duration`` (seconds), ``Rate`` (per second), ``Size``.

Profiles, protocol options and target options annotate their fields with these,
so ``"30s"``, ``"5000/s"`` or ``"64KiB"`` validate the same everywhere. Kept apart from
:mod:`.units`, which the ``--help`` path imports without pydantic.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated

from pydantic import BeforeValidator

from protobench.vocab.units import MAX_BYTES, parse_duration, parse_rate, parse_size

Duration = Annotated[float, BeforeValidator(parse_duration)]
Rate = Annotated[float, BeforeValidator(parse_rate)]
Size = Annotated[int, BeforeValidator(partial(parse_size, maximum=MAX_BYTES))]
"""Bytes: ``65536``, ``"64KiB"``, ``"16MiB"`` (see :func:`~protobench.vocab.units.parse_size`)."""

"""The encoded histograms of a snapshot, decoded and checked where they are read.

:func:`histograms_problem` decodes the phase histograms of a snapshot read back
(:func:`~protobench.snapshots.store.read`); those of the interval series
(thousands) are decoded where they are used, by :func:`decoded`. Either names
the histogram that is corrupt (``histograms.sustain.get.hist: not an encoded
HdrHistogram``), and refuses one that would inflate past the largest histogram or
has another shape before decoding it (:func:`~.limits.histogram_problem`). The rest
of a snapshot is checked by its typed loader
(:func:`~protobench.snapshots.model.load_snapshot`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protobench.snapshots.limits import histogram_problem

if TYPE_CHECKING:
    from hdrh.histogram import HdrHistogram

    from protobench.engine.series_model import PhaseHistograms


def decoded(encoded: str, where: str) -> HdrHistogram:
    """The histogram ``encoded`` (empty: an empty one); ``ValueError`` naming ``where``."""
    from protobench.engine.metrics import decode  # noqa: PLC0415 - numpy only when read

    why = histogram_problem(encoded) if encoded else None
    if why is not None:
        raise ValueError(f"{where}: not an encoded HdrHistogram ({why})")
    try:
        return decode(encoded)
    except Exception as exc:  # hdrh raises a zoo of types for a corrupt encoding
        raise ValueError(f"{where}: not an encoded HdrHistogram ({type(exc).__name__})") from None


def histograms_problem(histograms: PhaseHistograms) -> str | None:
    """The first phase histogram that does not decode, as one line; ``None`` when all do."""
    for phase, ops in histograms.items():
        for op, hists in ops.items():
            for key, encoded in (
                ("hist", hists["hist"]),
                ("hist_uncorrected", hists.get("hist_uncorrected", "")),
                ("hist_delay", hists.get("hist_delay", "")),
            ):
                try:
                    decoded(encoded, f"histograms.{phase}.{op}.{key}")
                except ValueError as exc:
                    return str(exc)
    return None

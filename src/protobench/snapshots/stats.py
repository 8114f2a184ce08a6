"""The statistics of a comparison: medians, their confidence intervals, Mann-Whitney U, geomeans.

The methods are benchstat's; the tests and intervals are scipy.stats':

* a side is summarised by the **median** of its samples and a distribution-free
  **confidence interval of the median**: the order statistics ``x(l)`` and
  ``x(n-l+1)`` with ``l`` chosen from the Binomial(n, 1/2) distribution so that
  the interval covers the median with at least the requested confidence
  (``scipy.stats.quantile_test(...).confidence_interval``). With too few
  samples (fewer than 6 at 95%) there is no such interval and the bounds are
  ``None``;
* two sides are compared with the two-sided **Mann-Whitney U** test
  (``scipy.stats.mannwhitneyu``: exact for small samples without ties, the
  normal approximation with tie correction otherwise). When every sample of
  both sides is the same value nothing changed and the p-value is 1;
* several rows are summarised by their **geometric mean** (the exponential
  of the mean logarithm), defined only for positive values.

scipy.stats is imported by the functions that need it, not with this module:
it costs 1-5 s to import, which ``protobench --help`` and every run would pay.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Estimate:
    """The median of ``n`` samples and its confidence interval (``None`` bounds: none exists)."""

    center: float
    low: float | None
    high: float | None
    n: int

    @property
    def spread(self) -> float | None:
        """The farthest CI bound from the median, relative to it (benchstat's ``± x%``).

        ``None`` when there is no interval, ``inf`` when the median is 0 and the
        interval is not.
        """
        if self.low is None or self.high is None:
            return None
        distance = max(self.high - self.center, self.center - self.low)
        if self.center == 0:
            return 0.0 if distance == 0 else math.inf
        return distance / abs(self.center)

    def to_dict(self) -> dict[str, float | int | None]:
        return {"median": self.center, "ci_low": self.low, "ci_high": self.high, "n": self.n}


def median(values: Sequence[float]) -> float:
    """The median of a non-empty sequence."""
    if not values:
        raise ValueError("the median of no values")
    return float(np.median(np.asarray(values, dtype=np.float64)))


def median_ci(
    values: Sequence[float], confidence: float = CONFIDENCE
) -> tuple[float, float] | None:
    """The order-statistics confidence interval of the median, or ``None`` if n is too small."""
    if not values:
        return None
    from scipy import stats  # noqa: PLC0415 - deferred, see the module docstring

    data = np.asarray(values, dtype=np.float64)
    result = stats.quantile_test(data, q=float(np.median(data)), p=0.5)
    interval = result.confidence_interval(confidence_level=confidence)
    low, high = float(interval.low), float(interval.high)
    if math.isnan(low) or math.isnan(high):
        return None
    return low, high


def estimate(values: Sequence[float], confidence: float = CONFIDENCE) -> Estimate:
    """Median and confidence interval of ``values`` (non-empty)."""
    interval = median_ci(values, confidence)
    low, high = interval if interval is not None else (None, None)
    return Estimate(median(values), low, high, len(values))


def min_samples_for_ci(confidence: float = CONFIDENCE) -> int:
    """The fewest samples that give a median confidence interval at ``confidence``."""
    n = 1
    while 2 * 0.5**n > 1 - confidence:
        n += 1
    return n


def mann_whitney_p(base: Sequence[float], new: Sequence[float]) -> float:
    """Two-sided Mann-Whitney U p-value of two non-empty samples."""
    if not base or not new:
        raise ValueError("Mann-Whitney U needs samples on both sides")
    if len({*base, *new}) == 1:
        return 1.0
    from scipy import stats  # noqa: PLC0415 - deferred, see the module docstring

    result = stats.mannwhitneyu(base, new, alternative="two-sided")
    return float(result.pvalue)


def smallest_p(n: int, m: int) -> float:
    """The smallest two-sided p-value Mann-Whitney U can give for samples of sizes n and m.

    When it is above alpha, no change between such samples can be significant.
    """
    return min(1.0, 2 / math.comb(n + m, n))


def geomean(values: Sequence[float]) -> float | None:
    """The geometric mean, or ``None`` when empty or when a value is not positive."""
    if not values or any(v <= 0 for v in values):
        return None
    return float(np.exp(np.mean(np.log(np.asarray(values, dtype=np.float64)))))

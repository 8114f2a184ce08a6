"""The statistics of a comparison: medians, their confidence intervals, Mann-Whitney U, geomeans.

The methods are benchstat's, written here in plain Python (no scipy: it was
112 MB installed and 1.4 s to import for these two functions); they give
scipy.stats' figures, which the tests check against values scipy computed:

* a side is summarised by the **median** of its samples and a distribution-free
  **confidence interval of the median**: the order statistics ``x(l)`` and
  ``x(h)`` with ``l`` and ``h`` the ``(1 - confidence) / 2`` lower and upper
  quantiles of the Binomial(n, 1/2) distribution, so that the interval covers
  the median with at least the requested confidence (as
  ``scipy.stats.quantile_test(...).confidence_interval``). With too few
  samples (fewer than 6 at 95%) there is no such interval and the bounds are
  ``None``;
* two sides are compared with the two-sided **Mann-Whitney U** test (as
  ``scipy.stats.mannwhitneyu``): the exact distribution of U when a side has
  at most 8 samples and no value is tied, otherwise the normal approximation
  with tie correction and continuity correction. When every sample of both
  sides is the same value nothing changed and the p-value is 1;
* several rows are summarised by their **geometric mean** (the exponential
  of the mean logarithm), defined only for positive values.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

CONFIDENCE = 0.95
EXACT_MAX_SIDE = 8
"""Mann-Whitney U is exact when the smaller side has at most this many samples and no ties."""


@dataclass(frozen=True, slots=True)
class Estimate:
    """The median of ``n`` samples and its confidence interval (``None`` bounds: none exists)."""

    median: float
    ci_low: float | None
    ci_high: float | None
    n: int

    @property
    def spread(self) -> float | None:
        """The farthest CI bound from the median, relative to it (benchstat's ``± x%``).

        ``None`` when there is no interval, ``inf`` when the median is 0 and the
        interval is not.
        """
        if self.ci_low is None or self.ci_high is None:
            return None
        distance = max(self.ci_high - self.median, self.median - self.ci_low)
        if self.median == 0:
            return 0.0 if distance == 0 else math.inf
        return distance / abs(self.median)


def median(values: Sequence[float]) -> float:
    """The median of a non-empty sequence."""
    if not values:
        raise ValueError("the median of no values")
    return float(statistics.median(values))


def _half_binomial_quantiles(n: int, tail: float) -> tuple[int, int]:
    """(ppf, isf) of Binomial(n, 1/2) at ``tail`` (0 < tail < 1/2).

    ppf is the smallest k with P(X <= k) >= tail, isf the smallest k with
    P(X > k) <= tail. Counted exactly in integers (orderings out of 2**n); by
    symmetry P(X > k) = P(X <= n - k - 1), so one walk up the lower tail gives both.
    """
    share = Fraction(tail)
    total = 2**n
    term = 1  # C(n, k)
    cumulative = 0
    for k in range(n + 1):
        cumulative += term
        if cumulative * share.denominator >= share.numerator * total:
            exact = cumulative * share.denominator == share.numerator * total
            return k, n - 1 - (k if exact else k - 1)
        term = term * (n - k) // (k + 1)
    return n, 0


def median_ci(
    values: Sequence[float], confidence: float = CONFIDENCE
) -> tuple[float, float] | None:
    """The order-statistics confidence interval of the median, or ``None`` if n is too small."""
    if not values:
        return None
    data = sorted(float(v) for v in values)
    n = len(data)
    ppf, isf = _half_binomial_quantiles(n, (1.0 - confidence) / 2.0)
    low_index, high_index = ppf - 1, isf
    if low_index < 0 or high_index >= n:
        return None
    return data[low_index], data[high_index]


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


def _ranks(values: Sequence[float]) -> list[float]:
    """The rank of each value, 1-based, tied values sharing the mean of their ranks."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        shared = (start + end) / 2 + 1
        for position in range(start, end + 1):
            ranks[order[position]] = shared
        start = end + 1
    return ranks


def _u_counts(n: int, m: int) -> list[int]:
    """How many of the C(n+m, n) orderings give each U from 0 to n*m (no ties).

    The coefficients of the Gaussian binomial [n+m choose n](q), built as the
    product over i = 1..n of (1 - q^(m+i)) / (1 - q^i), exactly in integers.
    """
    counts = [1]
    for i in range(1, n + 1):
        grown = [*counts, *([0] * m)]
        for k in range(len(grown) - 1, m + i - 1, -1):  # multiply by (1 - q^(m+i))
            grown[k] -= grown[k - m - i]
        for k in range(i, len(grown)):  # divide by (1 - q^i)
            grown[k] += grown[k - i]
        counts = grown
    return counts


def _normal_two_sided(z: float) -> float:
    """P(|Z| >= |z|) for a standard normal Z."""
    return math.erfc(abs(z) / math.sqrt(2.0))


def mann_whitney_p(base: Sequence[float], new: Sequence[float]) -> float:
    """Two-sided Mann-Whitney U p-value of two non-empty samples."""
    if not base or not new:
        raise ValueError("Mann-Whitney U needs samples on both sides")
    if len({*base, *new}) == 1:
        return 1.0
    n, m = len(base), len(new)
    joined = [float(v) for v in (*base, *new)]
    u1 = sum(_ranks(joined)[:n]) - n * (n + 1) / 2
    ties = [t for t in Counter(joined).values() if t > 1]
    if min(n, m) <= EXACT_MAX_SIDE and not ties:
        counts = _u_counts(min(n, m), max(n, m))
        u = round(max(u1, n * m - u1))
        return min(1.0, 2 * sum(counts[u:]) / math.comb(n + m, n))
    total = n + m
    tie_term = sum(t**3 - t for t in ties)
    sigma = math.sqrt(n * m / 12 * ((total + 1) - tie_term / (total * (total - 1))))
    distance = u1 - n * m / 2
    distance -= math.copysign(0.5, distance) if distance else 0.0  # continuity correction
    return min(1.0, _normal_two_sided(distance / sigma))


def smallest_p(n: int, m: int) -> float:
    """The smallest two-sided p-value Mann-Whitney U can give for samples of sizes n and m.

    When it is above alpha, no change between such samples can be significant.
    """
    return min(1.0, 2 / math.comb(n + m, n))


def geomean(values: Sequence[float]) -> float | None:
    """The geometric mean, or ``None`` when empty or when a value is not positive."""
    if not values or any(v <= 0 for v in values):
        return None
    return math.exp(math.fsum(math.log(v) for v in values) / len(values))

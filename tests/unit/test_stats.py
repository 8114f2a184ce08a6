"""Known-answer tests of the comparison statistics."""

from __future__ import annotations

import math

import pytest
from scipy import stats as sps

from protobench.snapshots.stats import (
    Estimate,
    estimate,
    geomean,
    mann_whitney_p,
    median,
    median_ci,
    min_samples_for_ci,
    smallest_p,
)


def test_mann_whitney_matches_the_scipy_documentation_example() -> None:
    # scipy.stats.mannwhitneyu docs (Conover): ages of male and female workers;
    # U1 = 17 and the exact two-sided p-value is 0.1111.
    males = [19.0, 22.0, 16.0, 29.0, 24.0]
    females = [20.0, 11.0, 17.0, 12.0]
    assert sps.mannwhitneyu(males, females).statistic == 17.0
    assert mann_whitney_p(males, females) == pytest.approx(0.1111111111, abs=1e-9)


def test_mann_whitney_completely_separated_samples_give_the_smallest_exact_p() -> None:
    # No overlap between two samples of 5: p = 2 / C(10, 5) = 2/252.
    assert mann_whitney_p([1.0, 2, 3, 4, 5], [6.0, 7, 8, 9, 10]) == pytest.approx(2 / 252)
    assert smallest_p(5, 5) == pytest.approx(2 / 252)
    assert smallest_p(3, 3) == pytest.approx(0.1)


def test_mann_whitney_with_ties_uses_the_tie_corrected_normal_approximation() -> None:
    base = [1.0, 1.0, 2.0, 2.0, 2.0, 3.0, 3.0, 4.0, 5.0, 5.0]
    new = [3.0, 4.0, 4.0, 5.0, 5.0, 5.0, 6.0, 6.0, 7.0, 8.0]
    # U of base, counted by hand (a tie counts 1/2): the two 3s tie one 3 (1),
    # the 4 beats one 3 and ties two 4s (2), each 5 beats 3, 4, 4 and ties three 5s
    # (4.5 x 2): U = 12. The tie-corrected normal approximation with continuity
    # correction gives z = (U + 0.5 - mn/2) / sigma.
    u = 12.0
    assert sps.rankdata(base + new)[:10].sum() - 10 * 11 / 2 == u
    counts = {v: (base + new).count(v) for v in set(base + new)}
    ties = [c for c in counts.values() if c > 1]
    n = 20
    sigma = math.sqrt(10 * 10 / 12 * ((n + 1) - sum(t**3 - t for t in ties) / (n * (n - 1))))
    z = (u + 0.5 - 10 * 10 / 2) / sigma
    expected = 2 * sps.norm.cdf(z)
    assert mann_whitney_p(base, new) == pytest.approx(expected, rel=1e-9)


def test_identical_constant_samples_are_not_different() -> None:
    assert mann_whitney_p([0.0, 0.0, 0.0], [0.0, 0.0]) == 1.0


def test_mann_whitney_needs_both_sides() -> None:
    with pytest.raises(ValueError, match="both sides"):
        mann_whitney_p([], [1.0])


@pytest.mark.parametrize(
    ("n", "low_rank", "high_rank"),
    # Order statistics of the 95% CI of a median (binomial method), as tabulated
    # in Conover, Practical Nonparametric Statistics, and the usual textbooks.
    [(6, 1, 6), (9, 2, 8), (10, 2, 9), (12, 3, 10), (20, 6, 15), (30, 10, 21), (100, 40, 61)],
)
def test_median_ci_uses_the_binomial_order_statistics(
    n: int, low_rank: int, high_rank: int
) -> None:
    values = [float(v) * 10 for v in range(n, 0, -1)]  # unsorted on purpose
    assert median_ci(values) == (low_rank * 10.0, high_rank * 10.0)


def test_median_ci_coverage_is_at_least_the_confidence() -> None:
    n, low_rank = 20, 6
    coverage = 1 - 2 * sps.binom.cdf(low_rank - 1, n, 0.5)
    assert coverage >= 0.95
    assert 1 - 2 * sps.binom.cdf(low_rank, n, 0.5) < 0.95


def test_too_few_samples_have_no_interval() -> None:
    assert min_samples_for_ci(0.95) == 6
    assert min_samples_for_ci(0.99) == 8
    assert median_ci([1.0, 2.0, 3.0, 4.0, 5.0]) is None
    assert median_ci([]) is None
    small = estimate([3.0, 1.0, 2.0])
    assert small == Estimate(2.0, None, None, 3)
    assert small.spread is None


def test_estimate_and_spread() -> None:
    est = estimate([float(v) for v in range(1, 11)])
    assert est == Estimate(5.5, 2.0, 9.0, 10)
    assert est.spread == pytest.approx(3.5 / 5.5)
    assert Estimate(0.0, 0.0, 0.0, 10).spread == 0.0
    assert Estimate(0.0, 0.0, 0.01, 10).spread == math.inf


def test_median_and_geomean() -> None:
    assert median([5.0, 1.0, 3.0]) == 3.0
    assert median([4.0, 1.0, 3.0, 2.0]) == 2.5
    with pytest.raises(ValueError, match="no values"):
        median([])
    assert geomean([1.0, 4.0]) == pytest.approx(2.0)
    assert geomean([2.0, 8.0, 4.0]) == pytest.approx(4.0)
    assert geomean([1.0, 0.0]) is None
    assert geomean([]) is None

"""Known-answer tests of the comparison statistics.

The expected p-values and intervals were computed once with scipy 1.18
(``scipy.stats.mannwhitneyu(x, y)`` and ``scipy.stats.quantile_test(x, q=median,
p=0.5).confidence_interval(c)``) or come from textbooks, and are written here:
protobench no longer depends on scipy.
"""

from __future__ import annotations

import math

import pytest

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
    # U1 = 17 and the exact two-sided p-value is 0.1111 (= 2 x 7 / C(9, 4)).
    males = [19.0, 22.0, 16.0, 29.0, 24.0]
    females = [20.0, 11.0, 17.0, 12.0]
    assert mann_whitney_p(males, females) == pytest.approx(0.1111111111111111, rel=1e-12)


def test_mann_whitney_completely_separated_samples_give_the_smallest_exact_p() -> None:
    # No overlap between two samples of 5: p = 2 / C(10, 5) = 2/252.
    assert mann_whitney_p([1.0, 2, 3, 4, 5], [6.0, 7, 8, 9, 10]) == pytest.approx(2 / 252)
    assert smallest_p(5, 5) == pytest.approx(2 / 252)
    assert smallest_p(3, 3) == pytest.approx(0.1)


@pytest.mark.parametrize(
    ("base", "new", "expected"),
    [
        # exact: one side of 8, no ties
        (
            [1.1, 2.3, 3.2, 4.8, 5.0, 6.4, 7.7, 8.1],
            [x + 0.55 for x in range(3, 23)],
            0.0006595658769571812,
        ),
        # normal approximation: both sides above 8, no ties
        (
            [3.0, 5, 7, 9, 11, 13, 15, 17, 19],
            [4.0, 6, 8, 10, 12, 14, 16, 18, 20, 22],
            0.48766835345893045,
        ),
        # normal approximation with tie correction, small and larger samples
        ([1.0, 2.0, 2.0], [2.0, 3.0, 4.0], 0.16415972847851523),
        (
            [1.0, 1.0, 2.0, 2.0, 2.0, 3.0, 3.0, 4.0, 5.0, 5.0],
            [3.0, 4.0, 4.0, 5.0, 5.0, 5.0, 6.0, 6.0, 7.0, 8.0],
            0.004083002858341963,
        ),
        (
            [100.0 + (i * 37) % 23 for i in range(50)],
            [103.0 + (i * 41) % 29 for i in range(60)],
            0.0004887887705519846,
        ),
        ([float(i) for i in range(40)], [i + 0.5 for i in range(40)], 0.8511597790430957),
    ],
)
def test_mann_whitney_gives_scipys_p_values(
    base: list[float], new: list[float], expected: float
) -> None:
    assert mann_whitney_p(base, new) == pytest.approx(expected, rel=1e-9)
    assert mann_whitney_p(new, base) == pytest.approx(expected, rel=1e-9)


def test_mann_whitney_with_ties_uses_the_tie_corrected_normal_approximation() -> None:
    base = [1.0, 1.0, 2.0, 2.0, 2.0, 3.0, 3.0, 4.0, 5.0, 5.0]
    new = [3.0, 4.0, 4.0, 5.0, 5.0, 5.0, 6.0, 6.0, 7.0, 8.0]
    # U of base, counted by hand (a tie counts 1/2): the two 3s tie one 3 (1),
    # the 4 beats one 3 and ties two 4s (2), each 5 beats 3, 4, 4 and ties three 5s
    # (4.5 x 2): U = 12. Ties: 1 x2, 2 x3, 3 x3, 4 x3, 5 x5, 6 x2. The tie-corrected
    # normal approximation with continuity correction: z = (U + 0.5 - mn/2) / sigma.
    u, n = 12.0, 20
    ties = [2, 3, 3, 3, 5, 2]
    sigma = math.sqrt(10 * 10 / 12 * ((n + 1) - sum(t**3 - t for t in ties) / (n * (n - 1))))
    z = (u + 0.5 - 10 * 10 / 2) / sigma
    expected = math.erfc(-z / math.sqrt(2))  # 2 * Phi(z) for z < 0
    assert mann_whitney_p(base, new) == pytest.approx(expected, rel=1e-12)


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


@pytest.mark.parametrize(
    ("n", "confidence", "expected"),
    # scipy.stats.quantile_test(range(n), q=median, p=0.5).confidence_interval(c)
    [
        (6, 0.95, (0.0, 5.0)),
        (7, 0.95, (0.0, 6.0)),
        (13, 0.95, (2.0, 10.0)),
        (13, 0.99, (1.0, 11.0)),
        (50, 0.95, (17.0, 32.0)),
        (50, 0.99, (15.0, 34.0)),
        (101, 0.95, (40.0, 60.0)),
        (101, 0.99, (37.0, 63.0)),
        (1000, 0.95, (468.0, 531.0)),
        (1000, 0.99, (458.0, 541.0)),
        (6, 0.99, None),
    ],
)
def test_median_ci_gives_scipys_intervals(
    n: int, confidence: float, expected: tuple[float, float] | None
) -> None:
    assert median_ci([float(v) for v in range(n)], confidence) == expected


def test_median_ci_coverage_is_at_least_the_confidence() -> None:
    # n = 20: the interval is (x(6), x(15)); P(X <= 5) for Binomial(20, 1/2) is
    # 21700 / 2**20 = 0.0207 <= 0.025, and P(X <= 6) = 60460 / 2**20 > 0.025.
    n, low_rank = 20, 6
    below = sum(math.comb(n, k) for k in range(low_rank)) / 2**n
    assert 1 - 2 * below >= 0.95
    assert 1 - 2 * (below + math.comb(n, low_rank) / 2**n) < 0.95
    assert median_ci([float(v) for v in range(1, n + 1)]) == (6.0, 15.0)


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

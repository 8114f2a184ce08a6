"""metrics.summary (vectorised) gives exactly hdrhistogram's own percentiles, mean and stddev."""

from __future__ import annotations

import math
from array import array

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram

from protobench.engine.metrics import HIGHEST, fold, new_histogram, summary


def hdrh_summary(hist: HdrHistogram) -> dict[str, float]:
    """What hdrhistogram computes by walking the histogram in Python."""
    values = hist.get_percentile_to_value_dict([50, 90, 95, 99, 99.9])
    return {
        "count": int(hist.get_total_count()),
        "p50": float(values[50]),
        "p90": float(values[90]),
        "p95": float(values[95]),
        "p99": float(values[99]),
        "p999": float(values[99.9]),
        "min": float(hist.get_min_value()),
        "max": float(hist.get_max_value()),
        "mean": round(float(hist.get_mean_value()), 1),
        "stddev": round(float(hist.get_stddev()), 1),
    }


@pytest.mark.parametrize(
    ("median_ns", "sigma", "n"),
    [(1e6, 0.3, 1000), (4e5, 1.5, 20000), (1e5, 3.0, 5000), (500, 0.1, 10), (1e12, 0.5, 50)],
)
def test_summary_matches_hdrhistogram(median_ns: float, sigma: float, n: int) -> None:
    rng = np.random.default_rng(int(sigma * 10) + n)
    hist = new_histogram()
    fold(hist, array("q", rng.lognormal(math.log(median_ns), sigma, n).astype(np.int64)))
    assert summary(hist) == hdrh_summary(hist)


def test_summary_with_zero_values_and_empty() -> None:
    hist = new_histogram()
    assert summary(hist) == {"count": 0}
    fold(hist, array("q", [0, 0, 5_000]))
    assert summary(hist) == hdrh_summary(hist)


def test_highest_values_are_hdrhistograms() -> None:
    hist = new_histogram()
    for index in range(0, int(hist.counts_len), 61):
        value = hist.get_value_from_index(index)
        assert HIGHEST[index] == hist.get_highest_equivalent_value(value)

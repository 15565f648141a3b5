"""Statistics checked against scipy on known samples."""

from __future__ import annotations

import math
import statistics

import pytest
from scipy import stats as sps

from sparktriage.stats.summary import aggregate_launches, summarize, t_interval
from sparktriage.stats.tdist import t_cdf, t_ppf

SAMPLES = [
    [25.9, 26.4, 27.1, 28.4, 27.8, 26.9],
    [27.8, 27.9, 28.1, 27.7, 27.9, 28.0, 27.6, 28.2, 27.9, 27.8, 28.0, 27.9, 27.7, 28.1, 27.9],
    [1.0, 2.0],
    [40.7, 27.8, 27.9, 28.3, 27.5, 12.0, 27.7],
]


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 7, 10, 14, 29, 30, 100, 1000])
@pytest.mark.parametrize("p", [0.5, 0.6, 0.9, 0.95, 0.975, 0.995, 0.9995, 0.025, 0.001])
def test_t_quantile_and_cdf_match_scipy(df, p):
    assert t_ppf(p, df) == pytest.approx(sps.t.ppf(p, df), rel=1e-9, abs=1e-9)
    x = sps.t.ppf(p, df)
    assert t_cdf(x, df) == pytest.approx(p, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("sample", SAMPLES)
def test_summary_matches_scipy(sample):
    s = summarize(sample)
    low, high = sps.t.interval(0.95, len(sample) - 1, loc=statistics.mean(sample),
                               scale=sps.sem(sample))
    assert s.n == len(sample)
    assert s.mean == pytest.approx(statistics.mean(sample), rel=1e-12)
    assert s.ci95_low == pytest.approx(low, rel=1e-9)
    assert s.ci95_high == pytest.approx(high, rel=1e-9)
    assert s.median == pytest.approx(float(sps.scoreatpercentile(sample, 50)), rel=1e-12)
    assert s.mad == pytest.approx(sps.median_abs_deviation(sample, scale=1.0), rel=1e-12)
    assert s.stdev == pytest.approx(statistics.stdev(sample), rel=1e-12)


def test_summary_of_tiny_and_dirty_samples():
    empty = summarize([])
    assert empty.n == 0 and empty.mean is None and empty.ci95_low is None
    one = summarize([3.0, float("nan"), float("inf")])
    assert one.n == 1 and one.mean == 3.0 and one.ci95_low is None and one.mad == 0.0
    assert t_interval([5.0]) is None


def test_launch_aggregation_is_over_launch_means():
    launches = [[25.9] * 3 + [26.0] * 3, [28.4] * 3 + [28.3] * 3, [27.0] * 3 + [27.1] * 3]
    agg = aggregate_launches(launches)
    means = [statistics.mean(l) for l in launches]
    low, high = sps.t.interval(0.95, 2, loc=statistics.mean(means), scale=sps.sem(means))
    assert agg.launches == 3
    assert agg.across.mean == pytest.approx(statistics.mean(means))
    assert agg.across.ci95_low == pytest.approx(low) and agg.across.ci95_high == pytest.approx(high)
    assert agg.between_variance == pytest.approx(statistics.variance(means))
    # Launch means differ by ~2.5 tok/s while each launch varies by ~0.05: unstable.
    assert agg.stable is False
    assert "launch means spread" in agg.reasons[0]


def test_launch_aggregation_stable_when_launches_agree():
    launches = [[27.0, 28.0, 27.5, 27.2, 27.9], [27.6, 27.1, 27.8, 27.4, 27.3]]
    agg = aggregate_launches(launches)
    assert agg.stable is True and agg.reasons == ()
    single = aggregate_launches([[27.0, 28.0]])
    assert single.stable is True and single.notes and math.isnan(single.between_variance or math.nan)

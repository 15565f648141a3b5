"""Welch comparison over launch means, checked against scipy."""

from __future__ import annotations

import pytest
from scipy import stats as sps

from sparktriage.stats.compare import check_poolable, welch

CASES = [
    ([25.9, 26.4, 28.4, 27.1], [27.8, 28.1, 27.9, 28.2]),
    ([27.8, 27.9, 28.1], [27.7, 28.0, 27.95]),
    ([40.1, 39.0, 41.2, 40.5, 39.9], [31.0, 30.2]),
]


@pytest.mark.parametrize("a,b", CASES)
def test_welch_matches_scipy(a, b):
    ours = welch(a, b)
    ref = sps.ttest_ind(b, a, equal_var=False)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-7)
    ci = ref.confidence_interval(0.95)
    assert ours.ci95_low == pytest.approx(ci.low, rel=1e-7)
    assert ours.ci95_high == pytest.approx(ci.high, rel=1e-7)
    assert ours.significant == (ref.pvalue < 0.05)


def test_not_significant_is_said_out_loud():
    result = welch([27.8, 27.9, 28.1], [27.7, 28.0, 27.95])
    assert not result.significant
    assert result.verdict.startswith("not significant")
    assert result.ci95_low < 0 < result.ci95_high


def test_single_launch_sides_are_never_significant():
    result = welch([27.0], [40.0, 41.0])
    assert not result.significant and "two launches" in result.verdict
    assert result.difference == pytest.approx(13.5)


def test_check_poolable_names_the_differing_metadata():
    reasons = check_poolable([{"model": "m", "server_version": "0.32.0"},
                              {"model": "m", "server_version": "0.33.0"}])
    assert reasons == ["launches differ in server version: 0.32.0, 0.33.0"]
    assert check_poolable([{"model": "m"}, {"model": "m"}]) == []

"""Sweep statistics by simulation (pure Python, no server): launches drawn with the seed's spread
(launch means 23.4-28.4 tok/s, within-launch ±1-2 tok/s) give 95% intervals over launches that
cover the true mean in 93-97% of simulated sweeps; a launch with differing metadata is not pooled;
disagreeing launches raise the stability warning with its reason."""

from __future__ import annotations

import random

import pytest

from sparktriage.sweep.evidence.stats import LaunchObservation, depth_stats

TRUE = 26.4          # the seed: four launches 25.9-28.4 and a relaunch at 23.4 tok/s
BETWEEN_SD = 1.7     # sd of launch means: a 5-launch range of about 5 tok/s, as in the seed
WITHIN_SD = 1.5      # per-request spread within a launch (±1-2 tok/s)


def _launches(rng: random.Random, n: int, requests: int = 15, depth: int = 0,
              meta: dict | None = None) -> list[LaunchObservation]:
    out = []
    for i in range(n):
        mean = rng.gauss(TRUE, BETWEEN_SD)
        out.append(LaunchObservation(f"L{i:03d}", depth, True,
                                     tuple(rng.gauss(mean, WITHIN_SD) for _ in range(requests)),
                                     dict(meta or {"model": "m", "deployment_hash": "h"})))
    return out


@pytest.mark.parametrize("launches", [3, 5])
def test_interval_over_launches_covers_the_true_mean_95_percent(launches):
    rng = random.Random(20261201 + launches)
    sweeps, covered, spreads = 3000, 0, []
    for _ in range(sweeps):
        stats = depth_stats(0, _launches(rng, launches), {"model": "m", "deployment_hash": "h"})
        assert stats.across.n == launches
        covered += stats.across.ci95_low <= TRUE <= stats.across.ci95_high
        spreads.append(max(stats.launch_means) - min(stats.launch_means))
    coverage = covered / sweeps
    assert 0.93 <= coverage <= 0.97, coverage
    if launches == 5:  # the simulated spread is the seed's: a range of about 5 tok/s
        assert 3.0 <= sorted(spreads)[len(spreads) // 2] <= 5.5


def test_interval_over_requests_would_undercover():
    """Pooling requests (the wrong unit) covers the true mean far less than 95%."""
    from sparktriage.stats.summary import summarize
    rng = random.Random(7)
    covered = 0
    for _ in range(1000):
        pooled = [v for l in _launches(rng, 3) for v in l.request_rates]
        s = summarize(pooled)
        covered += s.ci95_low <= TRUE <= s.ci95_high
    assert covered / 1000 < 0.6


def test_launches_with_differing_metadata_are_not_pooled():
    rng = random.Random(3)
    launches = _launches(rng, 3) + _launches(rng, 1, meta={"model": "m", "deployment_hash": "other"})
    launches[-1] = LaunchObservation("L009", 0, True, launches[-1].request_rates,
                                     launches[-1].metadata)
    stats = depth_stats(0, launches, {"model": "m", "deployment_hash": "h"})
    assert stats.labels == ("L000", "L001", "L002")
    assert stats.excluded[0]["label"] == "L009"
    assert "deployment hash" in stats.excluded[0]["reasons"][0]


def test_disagreeing_launches_raise_the_stability_warning():
    rng = random.Random(5)
    obs = [LaunchObservation(f"L{i}", 2, True, tuple(rng.gauss(m, 0.3) for _ in range(15)), {})
           for i, m in enumerate([25.9, 28.4, 23.4])]
    stats = depth_stats(2, obs, None)
    assert stats.stable is False
    assert "more than within-launch noise predicts" in stats.reasons[0]
    assert stats.between_variance == pytest.approx(
        sum((m - sum(stats.launch_means) / 3) ** 2 for m in stats.launch_means) / 2)
